/*
 * fit.c — `vcc MODEL --fit SIZE --vary NAME` (fit.h): a search over one symbolic dim, the whole pipeline
 * re-run at each value tried.
 */
#include "fit.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../passes/passes.h"
#include "frontend.h"

VccGraph *vcc_compile_quiet(const VccCtx *ctx, const char *model) {
    FILE *quiet = fopen("/dev/null", "w");
    if (!quiet) return NULL;
    VccCtx c = *ctx;
    c.diag = quiet;
    c.remat_no_figures = true; /* the message is dropped: no second search for its figures */
    c.problems = NULL;
    c.nproblems = c.cap_problems = c.nerrors = c.suppressed = 0;
    c.dump_after = NULL;
    VccGraph *g = NULL;
    VccStatus st = vcc_onnx_load(&c, model, &g);
    if (st == VCC_OK) st = vcc_run_passes_after(&c, g, 0);
    vcc_problems_clear(&c);
    fclose(quiet);
    if (st != VCC_OK) {
        vcc_graph_free(g);
        return NULL;
    }
    return g;
}

/* The bindings of ctx plus vary=n (ctx's bindings must not name vary), and the memory limit (0: none). */
typedef struct {
    VccCtx ctx;
    VccShapeBinding *shapes;
} Trial;

static void trial_init(Trial *t, const VccCtx *ctx, const char *vary, int64_t limit) {
    t->ctx = *ctx;
    t->shapes = vcc_malloc(sizeof(VccShapeBinding) * (size_t)(ctx->nshapes + 1));
    if (ctx->nshapes) memcpy(t->shapes, ctx->shapes, sizeof(VccShapeBinding) * (size_t)ctx->nshapes);
    t->shapes[ctx->nshapes].name = (char *)vary;
    t->shapes[ctx->nshapes].rank = 1;
    t->shapes[ctx->nshapes].opt = "--vary";
    t->ctx.shapes = t->shapes;
    t->ctx.nshapes = ctx->nshapes + 1;
    t->ctx.memory_limit = limit;
}

/* The plan at vary=n when its arena fits in limit bytes (else NULL). */
static VccGraph *fits(Trial *t, int64_t n, int64_t limit) {
    t->shapes[t->ctx.nshapes - 1].dims[0] = n;
    VccGraph *g = vcc_compile_quiet(&t->ctx, t->ctx.file);
    if (g && g->arena_bytes > limit) {
        vcc_graph_free(g);
        g = NULL;
    }
    return g;
}

/* The largest value the search tries: where it fits, larger ones are not tried. */
#define FIT_MAX ((int64_t)1 << 20)

/* The largest n whose plan fits (0: none; FIT_MAX: that or more), its plan in *best. */
static int64_t search(Trial *t, int64_t limit, VccGraph **best) {
    *best = fits(t, 1, limit);
    if (!*best) return 0;
    int64_t lo = 1, hi = -1; /* lo fits; hi does not (-1: none found yet) */
    while (hi < 0 && lo < FIT_MAX) {
        VccGraph *g = fits(t, lo * 2, limit);
        if (!g) hi = lo * 2;
        else {
            vcc_graph_free(*best);
            *best = g;
            lo *= 2;
        }
    }
    while (hi > lo + 1) {
        int64_t mid = lo + (hi - lo) / 2;
        VccGraph *g = fits(t, mid, limit);
        if (!g) hi = mid;
        else {
            vcc_graph_free(*best);
            *best = g;
            lo = mid;
        }
    }
    return lo;
}

static double mib(int64_t b) { return (double)b / (1024.0 * 1024.0); }

int vcc_fit(VccCtx *ctx, const char *model, int64_t limit, const char *vary, FILE *out) {
    Trial t;
    trial_init(&t, ctx, vary, 0);
    t.ctx.file = model;
    t.shapes[ctx->nshapes].dims[0] = 1;
    /* N = 1 with the messages shown: a model that does not compile says why */
    VccGraph *g = NULL;
    VccStatus st = vcc_onnx_load(&t.ctx, model, &g);
    if (st == VCC_OK) st = vcc_run_passes_after(&t.ctx, g, 0);
    ctx->nerrors += t.ctx.nerrors;
    vcc_graph_free(g);
    if (st != VCC_OK) {
        free(t.shapes);
        return 1;
    }
    int rc = 1;
    fprintf(out, "%s: --fit %" PRId64 " bytes (%.1f MiB), varying %s:\n", model, limit, mib(limit), vary);
    for (int remat = 0; remat < 2; remat++) {
        t.ctx.memory_limit = remat ? limit : 0;
        VccGraph *best = NULL;
        int64_t n = search(&t, limit, &best);
        const char *how = remat ? "with recomputation   " : "without recomputation";
        if (!n)
            fprintf(out, "  %s: does not fit even at %s=1\n", how, vary);
        else {
            rc = 0;
            fprintf(out, "  %s: largest %s=%" PRId64 "%s, arena %" PRId64 " bytes (%.1f MiB)", how, vary, n,
                    n >= FIT_MAX ? " or more (the search tries no larger value)" : "", best->arena_bytes,
                    mib(best->arena_bytes));
            if (remat)
                fprintf(out, ", %d value%s recomputed, +%.2f%% FLOPs%s", best->remat_values,
                        best->remat_values == 1 ? "" : "s",
                        best->step_flops > 0 ? 100.0 * best->remat_flops / best->step_flops : 0.0,
                        best->remat_ws_shrunk ? ", " VCC_REMAT_WS_NOTE : "");
            fputc('\n', out);
        }
        vcc_graph_free(best);
    }
    free(t.shapes);
    return rc;
}
