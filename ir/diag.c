/*
 * diag.c — the compilation context and diagnostics: error lines, escaping, the error cap, and the one
 * report that lists every unsupported construct of a model.
 *
 * Requires: nothing. Produces: what ir.h's "status, context, diagnostics" section declares.
 *
 * Names in messages come from the model file (untrusted): every message is written through
 * vcc_fputs_escaped (runtime/vcc_io.h's vcc_io_escape, which the generated programs use too), so control
 * characters, escape sequences and invalid UTF-8 never reach the terminal.
 */
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#include "ir.h"

#include <stdlib.h>
#include <string.h>

#include "../runtime/vcc_io.h" /* vcc_io_escape: one escaping rule for the compiler and the programs */

void vcc_ctx_init(VccCtx *ctx, const char *file) {
    memset(ctx, 0, sizeof *ctx);
    ctx->diag = stderr;
    ctx->dump = stdout;
    ctx->file = file;
    ctx->momentum = 0.9f;
    ctx->max_errors = VCC_MAX_ERRORS;
    ctx->workspace_limit = VCC_WORKSPACE_LIMIT_DEFAULT;
    ctx->precision = VCC_PRECISION_FP32;
    ctx->bf16_store_bytes = 2;
    ctx->recompute_flops_max = -1;
}

const char *vcc_precision_name(VccPrecision p) {
    return p == VCC_PRECISION_TF32 ? "tf32" : p == VCC_PRECISION_BF16 ? "bf16" : "fp32";
}

char *vcc_vstrfmt(const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0) n = 0;
    char *s = vcc_malloc((size_t)n + 1);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    return s;
}

char *vcc_strfmt(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = vcc_vstrfmt(fmt, ap);
    va_end(ap);
    return s;
}

int vcc_utf8_len(const char *str) {
    const unsigned char *p = (const unsigned char *)str;
    unsigned c = p[0], cp, min;
    int n;
    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf) n = 2, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef) n = 3, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4) n = 4, min = 0x10000;
    else return 0;
    cp = c & (0x3fu >> (n - 1));
    for (int i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80) return 0;
        cp = cp << 6 | (p[i] & 0x3fu);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return n;
}

void vcc_fputs_escaped(FILE *f, const char *text) {
    size_t cap = 4 * strlen(text) + 1; /* a byte becomes at most "\\xNN" */
    char *out = vcc_malloc(cap);
    vcc_io_escape(text, out, cap);
    fputs(out, f);
    free(out);
}

void vcc_error(VccCtx *ctx, const char *fmt, ...) {
    ctx->nerrors++;
    if (ctx->max_errors > 0 && ctx->nerrors > ctx->max_errors) {
        ctx->suppressed++;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    char *msg = vcc_vstrfmt(fmt, ap);
    va_end(ap);
    if (ctx->file) {
        vcc_fputs_escaped(ctx->diag, ctx->file);
        fputs(": ", ctx->diag);
    }
    fputs("error: ", ctx->diag);
    vcc_fputs_escaped(ctx->diag, msg);
    fputc('\n', ctx->diag);
    free(msg);
}

void vcc_diag_finish(VccCtx *ctx) {
    vcc_report_problems(ctx); /* collected but never reported: they are errors all the same */
    if (!ctx->suppressed) return;
    if (ctx->file) {
        vcc_fputs_escaped(ctx->diag, ctx->file);
        fputs(": ", ctx->diag);
    }
    fprintf(ctx->diag, "%d more error%s not shown (the first %d are above)\n", ctx->suppressed,
            ctx->suppressed == 1 ? "" : "s", ctx->max_errors);
    ctx->suppressed = 0;
}

void vcc_assert_fail(const char *expr, const char *file, int line) {
    fprintf(stderr, "%s:%d: internal error: assertion '%s' failed\n", file, line, expr);
    abort();
}

/* ------------------------------------------------------------------ the unsupported-constructs report */

const char *vcc_short_name(const char *name, char *buf, size_t len) {
    size_t n = strlen(name);
    if (n < len) return name;
    size_t keep = len - 4, head = keep / 2, tail = keep - head; /* "head...tail" + NUL fits len */
    /* cut on UTF-8 character boundaries, so a name never ends in half a character */
    while (head > 0 && ((unsigned char)name[head] & 0xc0) == 0x80) head--;
    const char *t = name + n - tail;
    while (*t && ((unsigned char)*t & 0xc0) == 0x80) t++;
    memcpy(buf, name, head);
    memcpy(buf + head, "...", 3);
    strcpy(buf + head + 3, t);
    return buf;
}

void vcc_unsupported(VccCtx *ctx, VccProblemKind kind, const char *group, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *item = vcc_vstrfmt(fmt, ap);
    va_end(ap);
    if (ctx->nproblems == ctx->cap_problems) {
        ctx->cap_problems = ctx->cap_problems ? 2 * ctx->cap_problems : 16;
        ctx->problems = vcc_realloc(ctx->problems, sizeof *ctx->problems * (size_t)ctx->cap_problems);
    }
    ctx->problems[ctx->nproblems++] = (VccProblem){kind, vcc_strdup(group), item};
}

static const char *const kind_titles[VCC_PROB_COUNT] = {
    "unsupported versions",
    "unsupported ops",
    "unsupported element types",
    "unsupported attributes and op forms",
    "inference-form export (a trainer needs the model's training form)",
};

#define REPORT_WIDTH 80    /* columns of a report line */
#define REPORT_ITEMS 3     /* items shown per group; the rest are counted */

/* Write s escaped into a string (so widths count what the terminal shows). */
static char *escaped(const char *s) {
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m) return vcc_strdup(s);
    vcc_fputs_escaped(m, s);
    fclose(m);
    return buf;
}

/* Columns of a UTF-8 string (one per character). */
static size_t columns(const char *s) {
    size_t n = 0;
    for (; *s; s++) n += ((unsigned char)*s & 0xc0) != 0x80;
    return n;
}

/* Append words to a report line, breaking before a word that would pass REPORT_WIDTH; continuation
 * lines are indented by indent spaces. */
static void put_word(FILE *f, size_t *col, size_t indent, const char *word) {
    size_t w = columns(word);
    if (*col > indent && *col + w > REPORT_WIDTH) {
        fprintf(f, "\n%*s", (int)indent, "");
        *col = indent;
        while (*word == ' ') word++, w--;
    }
    fputs(word, f);
    *col += w;
}

VccStatus vcc_report_problems(VccCtx *ctx) {
    if (!ctx->nproblems) return VCC_OK;
    FILE *f = ctx->diag;
    if (ctx->file) {
        vcc_fputs_escaped(f, ctx->file);
        fputs(": ", f);
    }
    fprintf(f, "error: vcc cannot compile this model; %d problem%s:\n", ctx->nproblems,
            ctx->nproblems == 1 ? "" : "s");
    bool *done = vcc_calloc((size_t)ctx->nproblems, sizeof(bool));
    for (int k = 0; k < VCC_PROB_COUNT; k++) {
        bool title = false;
        for (int i = 0; i < ctx->nproblems; i++) {
            const VccProblem *p = &ctx->problems[i];
            if (p->kind != (VccProblemKind)k || done[i]) continue;
            if (!title) fprintf(f, "  %s:\n", kind_titles[k]);
            title = true;
            int count = 0;
            for (int j = i; j < ctx->nproblems; j++)
                count += ctx->problems[j].kind == p->kind && !strcmp(ctx->problems[j].group, p->group);
            char *g = escaped(p->group);
            size_t col = 4;
            fprintf(f, "    ");
            char *head = count > 1 ? vcc_strfmt("%s x%d:", g, count) : vcc_strfmt("%s:", g);
            put_word(f, &col, 6, head);
            free(head);
            free(g);
            int shown = 0;
            for (int j = i; j < ctx->nproblems; j++) {
                const VccProblem *q = &ctx->problems[j];
                if (q->kind != p->kind || strcmp(q->group, p->group) != 0) continue;
                done[j] = true;
                if (shown == REPORT_ITEMS) continue;
                char *it = escaped(q->item);
                char *word = vcc_strfmt(" %s%s", it, ++shown < count && shown < REPORT_ITEMS ? "," : "");
                put_word(f, &col, 6, word);
                free(word);
                free(it);
            }
            if (count > REPORT_ITEMS) {
                char *more = vcc_strfmt(" and %d more", count - REPORT_ITEMS);
                put_word(f, &col, 6, more);
                free(more);
            }
            fputc('\n', f);
        }
        if (title && k == VCC_PROB_TRAINING_FORM)
            fputs("    Export the model for training instead, e.g.\n"
                  "      torch.onnx.export(model, x, \"model.onnx\", opset_version=17,\n"
                  "          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)\n"
                  "    or export_for_training(model, x, \"model.onnx\") from python/vcc_torch.py.\n"
                  "    To train this graph as it is, pass --allow-inference-export.\n",
                  f);
    }
    free(done);
    ctx->nerrors += ctx->nproblems;
    vcc_problems_clear(ctx);
    return VCC_ERR_UNSUPPORTED;
}

void vcc_problems_clear(VccCtx *ctx) {
    for (int i = 0; i < ctx->nproblems; i++) {
        free(ctx->problems[i].group);
        free(ctx->problems[i].item);
    }
    free(ctx->problems);
    ctx->problems = NULL;
    ctx->nproblems = ctx->cap_problems = 0;
}
