/*
 * print.c — the textual IR (.vir) printer and the IR verifier.
 *
 * Requires: a graph. Produces: deterministic text, one declaration per graph input/initializer and one
 * line per node (schedule step) with output dtypes and shapes; with a plan, a per-tensor table of
 * live intervals, categories and arena offsets, and the arena summary.
 *
 * Format (one item per line, '#' starts a comment):
 *   opset 17
 *   input "input" f32[2,3,8,56,56]
 *   param "conv1.weight" f32[64,3,3,7,7]
 *   node 0 forward Conv "/conv1/Conv" ("input", "conv1.weight", _) -> ("/conv1/Conv_output_0" f32[2,64,8,28,28]) {group=1, pads=[3,3,3,3,3,3]}
 *   output "logits"
 *   plan "/conv1/Conv_output_0" saved_activation bytes=3211264 live=[0,57] offset=0
 *   arena bytes=... persistent=... planned=... lower_bound=... no_reuse=...
 * A float attribute always reads as a float (1.0, 1e-05, inf), an int attribute as an integer, so the
 * reader (frontend/vir.y) gives each its type back.
 */
#include "ir.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

void vcc_format_type(char *buf, size_t len, const VccTensor *t) {
    size_t o = (size_t)snprintf(buf, len, "%s[", vcc_dtype_name(t->dtype));
    for (int i = 0; i < t->shape.rank && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, i ? ",%" PRId64 : "%" PRId64, t->shape.dims[i]);
    if (o < len) snprintf(buf + o, len - o, "]");
}

/* A name as a .vir string: '"' and '\\' escaped with a backslash, and every byte that is not printable
 * text (control characters, DEL, C1 controls, bytes that are not valid UTF-8) as \\xNN, so that a dump
 * is plain text that a terminal shows as it is; valid multi-byte UTF-8 is kept. frontend/vir.l reads it
 * back byte for byte. */
static void print_name(FILE *f, const char *s) {
    fputc('"', f);
    for (int n; *s; s += n) {
        unsigned char c = (unsigned char)*s;
        n = vcc_utf8_len(s);
        bool c1 = n == 2 && c == 0xc2 && (unsigned char)s[1] < 0xa0; /* U+0080..U+009F */
        if (n > 1 && !c1) {
            fwrite(s, 1, (size_t)n, f);
        } else {
            n = 1;
            if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
            else if (c < 0x20 || c >= 0x7f) fprintf(f, "\\x%02x", c);
            else fputc(c, f);
        }
    }
    fputc('"', f);
}

/* A float attribute value, shortest exact form (%.9g), always recognisable as a float: "1.0", not "1"
 * (the .vir reader reads an integer literal as an int attribute). */
static void print_float(FILE *f, float v) {
    char buf[32];
    snprintf(buf, sizeof buf, "%.9g", (double)v);
    fprintf(f, strpbrk(buf, ".en") ? "%s" : "%s.0", buf);
}

static void print_attr(FILE *f, const VccAttr *a) {
    fprintf(f, "%s=", a->name);
    switch (a->type) {
    case VCC_A_INT: fprintf(f, "%" PRId64, a->i); break;
    case VCC_A_FLOAT: print_float(f, a->f); break;
    case VCC_A_STRING: print_name(f, a->s); break;
    case VCC_A_INTS:
        fputc('[', f);
        for (int i = 0; i < a->n; i++) fprintf(f, i ? ",%" PRId64 : "%" PRId64, a->ints[i]);
        fputc(']', f);
        break;
    case VCC_A_FLOATS:
        fputc('[', f);
        for (int i = 0; i < a->n; i++) {
            if (i) fputc(',', f);
            print_float(f, a->floats[i]);
        }
        fputc(']', f);
        break;
    }
}

static int attr_cmp(const void *a, const void *b) {
    return strcmp((*(const VccAttr *const *)a)->name, (*(const VccAttr *const *)b)->name);
}

static const char *phase_name(VccPhase p) {
    switch (p) {
    case VCC_PHASE_FORWARD: return "forward";
    case VCC_PHASE_LOSS: return "loss";
    case VCC_PHASE_BACKWARD: return "backward";
    case VCC_PHASE_UPDATE: return "update";
    }
    return "?";
}

const char *vcc_tensor_category(const VccTensor *t) {
    switch (t->kind) {
    case VCC_T_PARAM: case VCC_T_BUFFER: case VCC_T_CONST: return "parameter";
    case VCC_T_GRAD: case VCC_T_GRAD_PLANNED: return "gradient";
    case VCC_T_OPT_STATE: return "optimizer_state";
    case VCC_T_WORKSPACE: return "workspace";
    default: return t->saved ? "saved_activation" : "activation";
    }
}

void vcc_print_graph(FILE *f, const VccGraph *g, bool with_plan) {
    char ty[160];
    fprintf(f, "opset %" PRId64 "\n", g->opset);
    for (int i = 0; i < g->ntensors; i++) {
        const VccTensor *t = &g->tensors[i];
        if (t->producer >= 0) continue;
        vcc_format_type(ty, sizeof ty, t);
        fprintf(f, "%s ", vcc_tensor_kind_name(t->kind));
        print_name(f, t->name);
        fprintf(f, " %s", ty);
        if (t->kind == VCC_T_CONST && t->data) { /* its value, so that the dump compiles on its own */
            const unsigned char *d = t->data;
            fputs(" data=\"", f);
            for (size_t b = 0; b < t->data_bytes; b++) fprintf(f, "%02x", d[b]);
            fputc('"', f);
        }
        fputc('\n', f);
    }
    for (int k = 0; k < g->nnodes; k++) {
        const VccNode *n = &g->nodes[k];
        fprintf(f, "node %d %s %s ", k, phase_name(n->phase), vcc_op_name(n->op));
        print_name(f, n->name);
        fputs(" (", f);
        for (int i = 0; i < n->nin; i++) {
            if (i) fputs(", ", f);
            if (n->in[i] < 0) fputc('_', f);
            else print_name(f, g->tensors[n->in[i]].name);
        }
        fputs(") -> (", f);
        for (int i = 0; i < n->nout; i++) {
            if (i) fputs(", ", f);
            if (n->out[i] < 0) {
                fputc('_', f);
                continue;
            }
            const VccTensor *t = &g->tensors[n->out[i]];
            vcc_format_type(ty, sizeof ty, t);
            print_name(f, t->name);
            fprintf(f, " %s", ty);
        }
        fputc(')', f);
        if (n->nattrs) {
            const VccAttr **sorted = vcc_malloc(sizeof *sorted * (size_t)n->nattrs);
            for (int a = 0; a < n->nattrs; a++) sorted[a] = &n->attrs[a];
            qsort(sorted, (size_t)n->nattrs, sizeof *sorted, attr_cmp);
            fputs(" {", f);
            for (int a = 0; a < n->nattrs; a++) {
                if (a) fputs(", ", f);
                print_attr(f, sorted[a]);
            }
            fputc('}', f);
            free(sorted);
        }
        fputc('\n', f);
    }
    for (int i = 0; i < g->noutputs; i++) {
        fputs("output ", f);
        print_name(f, g->tensors[g->outputs[i]].name);
        fputc('\n', f);
    }
    if (!with_plan) return;
    int *roots = vcc_tensor_roots(g);
    for (int i = 0; i < g->ntensors; i++) {
        const VccTensor *t = &g->tensors[i];
        fputs("plan ", f);
        print_name(f, t->name);
        fprintf(f, " %s bytes=%" PRId64, vcc_tensor_category(t), vcc_tensor_bytes(t));
        if (t->start >= 0) fprintf(f, " live=[%d,%d]", t->start, t->end);
        else fputs(" live=persistent", f);
        fprintf(f, " offset=%" PRId64, g->tensors[roots[i]].offset);
        if (t->alias_of >= 0) {
            fputs(" view_of=", f);
            print_name(f, g->tensors[t->alias_of].name);
        }
        if (t->inplace_of >= 0) {
            fputs(" inplace_of=", f);
            print_name(f, g->tensors[t->inplace_of].name);
        }
        fputc('\n', f);
    }
    free(roots);
    fprintf(f,
            "arena bytes=%" PRId64 " persistent=%" PRId64 " planned=%" PRId64 " lower_bound=%" PRId64
            " no_reuse=%" PRId64 "\n",
            g->arena_bytes, g->persistent_bytes, g->planned_bytes, g->lower_bound_bytes, g->no_reuse_bytes);
}

/* ------------------------------------------------------------------ verifier */

VccStatus vcc_verify(VccCtx *ctx, const VccGraph *g, const char *after_pass) {
    int bad = 0;
    char *defined = vcc_calloc((size_t)g->ntensors + 1, 1);
    for (int i = 0; i < g->ntensors; i++)
        if (g->tensors[i].producer < 0) defined[i] = 1;
    for (int k = 0; k < g->nnodes && !bad; k++) {
        const VccNode *n = &g->nodes[k];
        for (int i = 0; i < n->nin; i++) {
            int t = n->in[i];
            if (t < -1 || t >= g->ntensors) {
                vcc_error(ctx, "internal: after %s: node '%s' (%s) input %d out of range", after_pass, n->name,
                          vcc_op_name(n->op), i);
                bad = 1;
            } else if (t >= 0 && !defined[t]) {
                vcc_error(ctx, "internal: after %s: node '%s' (%s) reads '%s' before it is produced", after_pass,
                          n->name, vcc_op_name(n->op), g->tensors[t].name);
                bad = 1;
            }
        }
        for (int i = 0; i < n->nout; i++) {
            int t = n->out[i];
            if (t < -1 || t >= g->ntensors) {
                vcc_error(ctx, "internal: after %s: node '%s' output %d out of range", after_pass, n->name, i);
                bad = 1;
            } else if (t >= 0) {
                if (g->tensors[t].producer != k) {
                    vcc_error(ctx, "internal: after %s: '%s' has two producers", after_pass, g->tensors[t].name);
                    bad = 1;
                }
                defined[t] = 1;
            }
        }
    }
    free(defined);
    return bad ? VCC_ERR_INTERNAL : VCC_OK;
}
