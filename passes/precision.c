/*
 * precision.c — mixed precision (vcc --precision bf16): which values hold bfloat16, following
 * torch.autocast(device_type="cuda", dtype=torch.bfloat16).
 *
 * vcc_precision (the pass "precision", before the loss): each float32 parameter a Conv, ConvTranspose, Gemm
 *   or MatMul reads is read through a bfloat16 copy, CastBF16(p) -> "<p>.bf16" (one per parameter, made
 *   right before its first reader: autocast's weight cast cache). CastBF16's gradient rule then makes
 *   the parameter's float32 gradient the bfloat16 gradient of the copy, widened, as autocast's does.
 * vcc_storage (the pass "storage", after the optimizer): first the backward readers of a copy (ConvGradData's
 *   weights) get a copy of their own, "<p>.bf16.again", made right before the first of them, so the
 *   forward copy is not kept from the forward to the backward (autocast keeps it). Then it sets
 *   VccTensor.bf16_bytes on the values that hold bfloat16, to ctx->bf16_store_bytes (2; 4 for a C
 *   trainer, which keeps them in float32 storage):
 *   - the clip input and every forward float value (the parameter copies included), except the outputs
 *     of autocast's float32 ops (Softmax, LogSoftmax, LayerNormalization, GroupNormalization,
 *     InstanceNormalization, ReduceSum, Exp, Log, Pow, Reciprocal, Softplus: at::autocast's fp32 list),
 *     the loss and its internals, and the statistics outputs (a normalization's saved mean and inverse
 *     deviation, Dropout's mask, FusedAttention's log-sum-exp);
 *   - the gradient of a bfloat16 value (VccTensor.grad_of), whole or from one reader, except the partial
 *     sums of a value's gradient from three readers or more: each reader's gradient is rounded, their
 *     sum is accumulated in float32 and rounded once (autocast's autograd rounds every partial sum). The
 *     intermediates of a gradient rule (Mul's dy * b before it is summed to b's shape) stay float32, as do
 *     the gradients of float32 values: a parameter's gradient, its optimizer state and normalization
 *     statistics among them;
 *   - a view holds what its base holds.
 *   Every value stored into a bfloat16 tensor is computed in float32 and rounded once (round to nearest
 *   even); the C trainer rounds after each node that writes one (codegen/emit.c). Where autocast differs:
 *   the gradient of a float32 value read by a bfloat16 op (a Softmax's output read by a MatMul) stays
 *   float32 here, where autocast's holds bfloat16 values (the cast's gradient); the clip is rounded when
 *   it is loaded, where autocast rounds it when a bfloat16 op first reads it.
 * Requires: shapes (precision); autodiff and the optimizer (storage). Without --precision bf16, nothing.
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

/* Whether op reads its float32 parameters through bfloat16 copies (autocast's lower-precision list). */
static bool reads_bf16_params(VccOp op) {
    return op == VCC_OP_CONV || op == VCC_OP_CONV_TRANSPOSE || op == VCC_OP_GEMM || op == VCC_OP_MATMUL;
}

/* Move the node at index from (the last, just added) to index to, renumbering producers. */
static void move_node(VccGraph *g, int from, int to) {
    VccNode n = g->nodes[from];
    memmove(g->nodes + to + 1, g->nodes + to, sizeof(VccNode) * (size_t)(from - to));
    g->nodes[to] = n;
    for (int k = to; k <= from; k++)
        for (int i = 0; i < g->nodes[k].nout; i++)
            if (g->nodes[k].out[i] >= 0) g->tensors[g->nodes[k].out[i]].producer = k;
}

VccStatus vcc_precision(VccCtx *ctx, VccGraph *g) {
    if (ctx->precision != VCC_PRECISION_BF16) return VCC_OK;
    int nt = g->ntensors;
    int *copy = vcc_malloc(sizeof(int) * (size_t)(nt ? nt : 1)); /* parameter -> its bfloat16 copy, -1 */
    for (int t = 0; t < nt; t++) copy[t] = -1;
    for (int k = 0; k < g->nnodes; k++) {
        if (g->nodes[k].phase != VCC_PHASE_FORWARD || !reads_bf16_params(g->nodes[k].op)) continue;
        for (int i = 0; i < g->nodes[k].nin; i++) {
            int p = g->nodes[k].in[i];
            if (p < 0 || p >= nt || g->tensors[p].kind != VCC_T_PARAM || g->tensors[p].dtype != VCC_F32) continue;
            if (copy[p] < 0) {
                VccShape shape = g->tensors[p].shape;
                copy[p] = vcc_tensor_add_unique(g, VCC_F32, &shape, VCC_T_ACT, "%s.bf16", g->tensors[p].name);
                char *name = vcc_strfmt("%s.bf16", g->tensors[p].name);
                int c = vcc_node_add(g, VCC_OP_CAST_BF16, name, &p, 1, &copy[p], 1, VCC_PHASE_FORWARD);
                free(name);
                move_node(g, c, k++); /* before its first reader, which moves one on */
            }
            g->nodes[k].in[i] = copy[p];
        }
    }
    free(copy);
    return VCC_OK;
}

/* Whether op computes in float32 under autocast (its fp32 list): its output stays float32. */
static bool float32_op(VccOp op) {
    switch (op) {
    case VCC_OP_SOFTMAX: case VCC_OP_LOGSOFTMAX: case VCC_OP_LAYERNORM: case VCC_OP_GROUPNORM:
    case VCC_OP_INSTANCENORM: case VCC_OP_REDUCESUM: case VCC_OP_EXP: case VCC_OP_LOG: case VCC_OP_POW:
    case VCC_OP_RECIPROCAL: case VCC_OP_SOFTPLUS:
        return true;
    default:
        return false;
    }
}

/* Whether output i of node n is a statistic or a mask rather than a value: a normalization's saved mean
 * and inverse deviation, Dropout's mask, an attention's log-sum-exp (every output past the first of an op
 * other than Split). */
static bool side_output(const VccNode *n, int i) { return i > 0 && n->op != VCC_OP_SPLIT; }

/* The backward readers of each forward CastBF16 copy (a ConvGradData's weights) read a copy of their own,
 * made again right before the first of them: the forward copy then dies with its last forward reader
 * instead of being saved through the step (a pass over the parameter, against its bytes / 2 kept from
 * the forward to the backward; autocast keeps its cast). The same rounding, so the same numbers. */
static void recast_for_backward(VccGraph *g) {
    int nn = g->nnodes;
    for (int c = 0; c < nn; c++) {
        if (g->nodes[c].op != VCC_OP_CAST_BF16 || g->nodes[c].phase != VCC_PHASE_FORWARD) continue;
        int w16 = g->nodes[c].out[0], first = -1;
        for (int k = 0; k < g->nnodes && first < 0; k++)
            for (int i = 0; i < g->nodes[k].nin; i++)
                if (g->nodes[k].phase == VCC_PHASE_BACKWARD && g->nodes[k].in[i] == w16) first = k;
        if (first < 0) continue;
        VccShape shape = g->tensors[w16].shape;
        int again = vcc_tensor_add_unique(g, VCC_F32, &shape, VCC_T_ACT, "%s.again", g->tensors[w16].name);
        char *name = vcc_strfmt("%s.again", g->nodes[c].name);
        int p = g->nodes[c].in[0];
        int k = vcc_node_add(g, VCC_OP_CAST_BF16, name, &p, 1, &again, 1, VCC_PHASE_BACKWARD);
        free(name);
        move_node(g, k, first);
        for (int j = first + 1; j < g->nnodes; j++)
            for (int i = 0; i < g->nodes[j].nin; i++)
                if (g->nodes[j].phase == VCC_PHASE_BACKWARD && g->nodes[j].in[i] == w16) g->nodes[j].in[i] = again;
    }
}

/* Whether gradient t is a partial sum: a GradAccumulate's output that another GradAccumulate adds to (the
 * gradient of a value with three readers or more). It stays float32, so a value's gradient is the sum of
 * its readers' rounded gradients, rounded once. */
static bool partial_sum(const VccGraph *g, int t) {
    if (g->tensors[t].producer < 0 || g->nodes[g->tensors[t].producer].op != VCC_OP_GRAD_ACCUM) return false;
    for (int k = 0; k < g->nnodes; k++)
        for (int i = 0; g->nodes[k].op == VCC_OP_GRAD_ACCUM && i < g->nodes[k].nin; i++)
            if (g->nodes[k].in[i] == t) return true;
    return false;
}

VccStatus vcc_storage(VccCtx *ctx, VccGraph *g) {
    if (ctx->precision != VCC_PRECISION_BF16) return VCC_OK;
    recast_for_backward(g);
    uint8_t bytes = (uint8_t)(ctx->bf16_store_bytes == 4 ? 4 : 2);
    int nt = g->ntensors;
    for (int t = 0; t < nt; t++) { /* the values */
        VccTensor *x = &g->tensors[t];
        if (x->dtype != VCC_F32 || x->alias_of >= 0) continue;
        bool bf16 = false;
        if (x->kind == VCC_T_INPUT) {
            bf16 = t == g->data_input;
        } else if (x->kind == VCC_T_ACT && x->producer >= 0) {
            const VccNode *n = &g->nodes[x->producer];
            int i = 0;
            while (i < n->nout && n->out[i] != t) i++;
            bf16 = n->op == VCC_OP_CAST_BF16 ||
                   (n->phase == VCC_PHASE_FORWARD && !float32_op(n->op) && !side_output(n, i));
        }
        if (bf16) x->bf16_bytes = bytes;
    }
    for (int t = 0; t < nt; t++) { /* their gradients */
        VccTensor *x = &g->tensors[t];
        if (x->dtype == VCC_F32 && x->alias_of < 0 && x->kind == VCC_T_GRAD_TEMP && x->grad_of >= 0 &&
            g->tensors[x->grad_of].bf16_bytes && !partial_sum(g, t))
            x->bf16_bytes = bytes;
    }
    for (int t = 0; t < nt; t++) { /* views hold their base's bytes */
        int b = t;
        while (g->tensors[b].alias_of >= 0) b = g->tensors[b].alias_of;
        g->tensors[t].bf16_bytes = g->tensors[b].bf16_bytes;
    }
    return VCC_OK;
}

VccStatus vcc_precision_check_dump(VccCtx *ctx, const VccGraph *g, int done) {
    bool casts = false, reads = false;
    for (int k = 0; k < g->nnodes; k++) {
        casts |= g->nodes[k].op == VCC_OP_CAST_BF16;
        for (int i = 0; reads_bf16_params(g->nodes[k].op) && i < g->nodes[k].nin; i++)
            reads |= g->nodes[k].in[i] >= 0 && g->tensors[g->nodes[k].in[i]].kind == VCC_T_PARAM;
    }
    bool bf16 = ctx->precision == VCC_PRECISION_BF16;
    if (casts && !bf16) {
        vcc_error(ctx, "this dump was compiled with --precision bf16 (it has CastBF16 nodes): give --precision bf16");
        return VCC_ERR_UNSUPPORTED;
    }
    if (bf16 && done >= vcc_pass_index("autodiff")) {
        vcc_error(ctx, "--precision bf16: a dump after '%s' does not keep which gradients belong to which values "
                       "(nor, after 'storage', which values hold bfloat16); give a dump from before 'autodiff', or "
                       "the ONNX model", vcc_pass_names[done]);
        return VCC_ERR_UNSUPPORTED;
    }
    if (bf16 && done >= vcc_pass_index("precision") && reads && !casts) {
        vcc_error(ctx, "--precision bf16: this dump after '%s' was compiled without it (no parameter has a bfloat16 "
                       "copy); give a dump from before 'precision', or the ONNX model", vcc_pass_names[done]);
        return VCC_ERR_UNSUPPORTED;
    }
    return VCC_OK;
}
