/*
 * poison.c — the plan tables a C trainer checks itself against when built with -DVCC_POISON.
 *
 * Requires: memplan (offsets, live intervals). Produces: C text (see poison.h and runtime/vcc_poison.h).
 * A tensor is in the table when it holds arena bytes (offset >= 0, bytes > 0). Its definition is the
 * tensor whose bytes it reads: a view's is the first tensor up its alias_of chain that is not a view; an
 * in-place output is a definition of its own (its node writes it over its input's bytes).
 */
#include "poison.h"

#include <inttypes.h>
#include <stdlib.h>

static bool in_table(const VccTensor *x) { return x->offset >= 0 && vcc_tensor_bytes(x) > 0; }

/* A C string literal of s: printable ASCII kept, quote, backslash, '?' and every other byte octal. */
static void c_string(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\' && c != '?') fputc(c, f);
        else fprintf(f, "\\%03o", c);
    }
    fputc('"', f);
}

/* The tensors of the table (idx) that are no view and have a live interval, by the step it ends at:
 * tensor[at[k] .. at[k+1]) end at step k, in tensor order (so a graph of n nodes and t tensors costs
 * O(n + t), not O(n * t)). */
typedef struct {
    int *at, *tensor;
} Ends;

static void ends_make(const VccGraph *g, const int *idx, Ends *e) {
    int n = g->nnodes;
    e->at = vcc_calloc((size_t)n + 2, sizeof(int));
    e->tensor = vcc_malloc(sizeof(int) * (size_t)(g->ntensors ? g->ntensors : 1));
    for (int pass = 0; pass < 2; pass++) { /* count per step, then fill in tensor order */
        int *fill = pass ? vcc_calloc((size_t)n + 1, sizeof(int)) : NULL;
        for (int t = 0; t < g->ntensors; t++) {
            const VccTensor *x = &g->tensors[t];
            if (idx[t] < 0 || x->alias_of >= 0 || x->start < 0 || x->end < 0 || x->end >= n) continue;
            if (pass) e->tensor[e->at[x->end] + fill[x->end]++] = idx[t];
            else e->at[x->end + 1]++;
        }
        if (!pass)
            for (int k = 0; k < n; k++) e->at[k + 1] += e->at[k];
        free(fill);
    }
}

/* One CSR list "name_at" / "name" over the nodes: pick(g, k, idx, ends, out) appends node k's entries. */
typedef int (*NodeList)(const VccGraph *g, int k, const int *idx, const Ends *ends, int *out);

static void emit_list(FILE *f, const VccGraph *g, const int *idx, const Ends *ends, const char *name,
                      NodeList pick) {
    int *buf = vcc_malloc(sizeof(int) * (size_t)(g->ntensors + 1));
    int total = 0;
    fprintf(f, "static const int vcc_poison_%s_at[%d] = {0", name, g->nnodes + 1);
    for (int k = 0; k < g->nnodes; k++) fprintf(f, ", %d", total += pick(g, k, idx, ends, buf));
    fprintf(f, "};\nstatic const int vcc_poison_%s[%d] = {", name, total ? total : 1);
    for (int k = 0, n = 0; k < g->nnodes; k++) {
        int m = pick(g, k, idx, ends, buf);
        for (int j = 0; j < m; j++) fprintf(f, "%s%d", n++ ? ", " : "", buf[j]);
    }
    fputs(total ? "};\n" : "0};\n", f);
    free(buf);
}

static int pick_in(const VccGraph *g, int k, const int *idx, const Ends *ends, int *out) {
    (void)ends;
    int n = 0;
    const VccNode *nd = &g->nodes[k];
    for (int i = 0; i < nd->nin; i++)
        if (nd->in[i] >= 0 && idx[nd->in[i]] >= 0) out[n++] = idx[nd->in[i]];
    return n;
}

static int pick_out(const VccGraph *g, int k, const int *idx, const Ends *ends, int *out) {
    (void)ends;
    int n = 0;
    const VccNode *nd = &g->nodes[k];
    for (int i = 0; i < nd->nout; i++) {
        int t = nd->out[i];
        if (t >= 0 && idx[t] >= 0 && g->tensors[t].alias_of < 0) out[n++] = idx[t];
    }
    return n;
}

static int pick_end(const VccGraph *g, int k, const int *idx, const Ends *ends, int *out) {
    (void)g;
    (void)idx;
    int n = 0;
    for (int j = ends->at[k]; j < ends->at[k + 1]; j++) out[n++] = ends->tensor[j];
    return n;
}

void vcc_emit_poison_plan(FILE *f, const VccGraph *g) {
    int *idx = vcc_malloc(sizeof(int) * (size_t)(g->ntensors ? g->ntensors : 1));
    int n = 0;
    for (int t = 0; t < g->ntensors; t++) idx[t] = in_table(&g->tensors[t]) ? n++ : -1;
    fputs("#ifdef VCC_POISON\n/* offset, bytes, definition, persistent, name */\n", f);
    fprintf(f, "static const VccPoisonTensor vcc_poison_tensors[%d] = {\n", n ? n : 1);
    for (int t = 0; t < g->ntensors; t++) {
        const VccTensor *x = &g->tensors[t];
        if (idx[t] < 0) continue;
        int d = t;
        while (g->tensors[d].alias_of >= 0) d = g->tensors[d].alias_of;
        VCC_ASSERT(idx[d] >= 0);
        fprintf(f, "    {%" PRId64 ", %" PRId64 ", %d, %d, ", x->offset, vcc_tensor_bytes(x), idx[d],
                x->start < 0 ? 1 : 0);
        c_string(f, x->name);
        fputs("},\n", f);
    }
    if (!n) fputs("    {0, 0, 0, 0, \"\"},\n", f);
    fprintf(f, "};\nstatic const char *const vcc_poison_nodes[%d] = {\n", g->nnodes ? g->nnodes : 1);
    for (int k = 0; k < g->nnodes; k++) {
        char *s = vcc_strfmt("%s '%s'", vcc_op_name(g->nodes[k].op), g->nodes[k].name);
        fputs("    ", f);
        c_string(f, s);
        fputs(",\n", f);
        free(s);
    }
    if (!g->nnodes) fputs("    \"\",\n", f);
    fputs("};\n", f);
    Ends ends;
    ends_make(g, idx, &ends);
    emit_list(f, g, idx, &ends, "in", pick_in);
    emit_list(f, g, idx, &ends, "out", pick_out);
    emit_list(f, g, idx, &ends, "end", pick_end);
    free(ends.at);
    free(ends.tensor);
    /* at a step's start: the persistent tensors and what the host wrote (inputs no node produces) */
    int nhost = 0;
    fputs("static const int vcc_poison_host[] = {", f);
    for (int t = 0; t < g->ntensors; t++)
        if (idx[t] >= 0 && g->tensors[t].alias_of < 0 && (g->tensors[t].start < 0 || g->tensors[t].producer < 0))
            fprintf(f, "%s%d", nhost++ ? ", " : "", idx[t]);
    fprintf(f, "%s};\n", nhost ? "" : "0");
    fprintf(f, "static const VccPoisonPlan vcc_poison_plan = {%d, vcc_poison_tensors, %d, vcc_poison_nodes,\n"
               "    vcc_poison_in_at, vcc_poison_in, vcc_poison_out_at, vcc_poison_out, vcc_poison_end_at,\n"
               "    vcc_poison_end, vcc_poison_host, %d, %" PRId64 "};\n",
            n, g->nnodes, nhost, g->arena_bytes);
    fputs("#define VCC_POISON_BEGIN() vcc_poison_begin(&vcc_poison_plan, A)\n"
          "#define VCC_POISON_PRE(k) vcc_poison_pre(&vcc_poison_plan, A, (k))\n"
          "#define VCC_POISON_POST(k) vcc_poison_post(&vcc_poison_plan, A, (k))\n"
          "#else\n#define VCC_POISON_BEGIN() ((void)0)\n#define VCC_POISON_PRE(k) ((void)0)\n"
          "#define VCC_POISON_POST(k) ((void)0)\n#endif\n\n",
          f);
    free(idx);
}
