/*
 * inplace.c — in-place reuse of dying inputs.
 *
 * Requires: liveness.
 * Produces: for ops flagged VCC_OPF_INPLACE (elementwise, e.g. Relu, Add, ReluGrad, GradAccumulate:
 *   output i depends only on inputs at i, so the runtime kernels accept y == x), the output takes the bytes of the first input that
 *   (with everything already sharing its bytes) is last read at this node and has the same byte size:
 *   out->inplace_of = that input. Graph inputs, the loss, persistent tensors and views never take part,
 *   and neither does a value the host reads after the step (a graph output, the loss, or what one of
 *   them views): liveness ends those at g->nnodes, past every node, so they never die at one.
 *   The shared buffer's interval is the union of its tensors' intervals (passes/memplan.c groups by
 *   vcc_tensor_root).
 */
#include "passes.h"

#include <stdlib.h>

static bool eligible(const VccTensor *t) {
    return !vcc_tensor_is_persistent(t) && t->kind != VCC_T_INPUT && t->kind != VCC_T_LABEL &&
           t->kind != VCC_T_LOSS && t->alias_of < 0 && t->start >= 0;
}

/* The tensor owning t's bytes: parent[] starts as vcc_tensor_roots and is re-pointed when an output
 * joins an input's buffer (union-find with path halving). */
static int find(int *parent, int t) {
    while (parent[t] != t) {
        parent[t] = parent[parent[t]];
        t = parent[t];
    }
    return t;
}

VccStatus vcc_inplace(VccCtx *ctx, VccGraph *g) {
    (void)ctx;
    int *parent = vcc_tensor_roots(g);
    /* group_end[r]: the last step any tensor sharing root r's bytes is live */
    int *group_end = vcc_malloc(sizeof(int) * (size_t)(g->ntensors ? g->ntensors : 1));
    for (int t = 0; t < g->ntensors; t++) group_end[t] = -1;
    for (int t = 0; t < g->ntensors; t++) {
        int r = parent[t];
        if (g->tensors[t].end > group_end[r]) group_end[r] = g->tensors[t].end;
    }
    for (int k = 0; k < g->nnodes; k++) {
        const VccNode *n = &g->nodes[k];
        if (!(vcc_op_def(n->op)->flags & VCC_OPF_INPLACE)) continue;
        int o = n->out[0];
        VccTensor *ot = &g->tensors[o];
        if (!eligible(ot) || ot->inplace_of >= 0) continue;
        for (int i = 0; i < n->nin; i++) {
            int x = n->in[i];
            if (x < 0) continue;
            int r = find(parent, x);
            const VccTensor *rt = &g->tensors[r];
            if (!eligible(rt) || group_end[r] != k || vcc_tensor_bytes(rt) != vcc_tensor_bytes(ot) ||
                rt->bf16_bytes != ot->bf16_bytes)
                continue;
            bool dup = false; /* the same buffer read twice by this node (Add(x, x)) is fine, but skip */
            for (int j = 0; j < n->nin; j++)
                if (j != i && n->in[j] >= 0 && find(parent, n->in[j]) == r) dup = true;
            if (dup) continue;
            ot->inplace_of = x;
            parent[o] = r;
            if (group_end[o] > group_end[r]) group_end[r] = group_end[o];
            break;
        }
    }
    free(group_end);
    free(parent);
    return VCC_OK;
}
