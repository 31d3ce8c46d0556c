/*
 * precision.c — mixed precision (vcc --precision bf16): which values hold bfloat16, following
 * torch.autocast(device_type="cuda", dtype=torch.bfloat16).
 *
 * vcc_precision (the pass "precision", before the loss) walks the forward nodes in order and sets
 *   VccTensor.bf16_bytes (ctx->bf16_store_bytes: 2; 4 for a C trainer, which keeps the values in float32
 *   storage) on the values that hold bfloat16:
 *   - the outputs of autocast's lower-precision ops (Conv, ConvTranspose, Gemm, MatMul, FusedAttention,
 *     and the bias Add of a linear layer exported as MatMul + Add), whose float32 inputs they read through
 *     bfloat16 copies, CastBF16(x) -> "<x>.bf16", one per tensor, made right before its first reader
 *     (autocast's casts; its weight cast cache). CastBF16's gradient is its output's gradient widened;
 *   - not the outputs of autocast's float32 ops (Softmax, LogSoftmax, LayerNormalization,
 *     GroupNormalization, InstanceNormalization, ReduceSum, Exp, Log, Pow, Reciprocal, Softplus: its fp32
 *     list), nor statistics and masks (a normalization's saved mean and inverse deviation, Dropout's mask,
 *     FusedAttention's log-sum-exp);
 *   - BatchNormalization's output as its input (float32 parameters and statistics, as autocast's);
 *   - any other op's outputs by type promotion: bfloat16 when every float input but scalar constants is
 *     (a bfloat16 value plus a float32 parameter is float32, as in PyTorch).
 *   The clip stays float32 as the trainer loads it; the lower-precision ops that read it read its copy.
 * vcc_storage (the pass "storage", after the optimizer): the backward readers of a copy (ConvGradData's
 *   weights) get a copy of their own, "<x>.bf16.again", made right before the first of them, so the
 *   forward copy is not kept from the forward to the backward (autocast keeps it). Then:
 *   - the gradient of a bfloat16 value (VccTensor.grad_of), whole or from one reader, holds bfloat16,
 *     except the partial sums of a value's gradient from three readers or more: each reader's gradient is
 *     rounded, their sum is accumulated in float32 and rounded once (autocast's autograd rounds every
 *     partial sum). A gradient rule's intermediates (Mul's dy * b before it is summed to b's shape) stay
 *     float32, as do the gradients of float32 values, parameters among them;
 *   - the loss is float32, also where the graph computes it (--loss graph);
 *   - a view holds what its base holds;
 *   - a backward convolution or matrix product that reads bfloat16 values reads its float32 inputs through
 *     bfloat16 copies (a bfloat16 prediction's gradient that Sub passes on from the float32 difference):
 *     autograd casts a gradient to its value's dtype, and cuDNN and cuBLAS take one data type per call.
 * Every value stored into a bfloat16 tensor is computed in float32 and rounded once (round to nearest
 * even); the C trainer rounds after each node that writes one (codegen/emit.c). Where vcc differs from
 * autocast: the gradient of a float32 value read by a bfloat16 op (a Softmax's output read by a MatMul)
 * stays float32 here, where autocast's holds bfloat16 values (the cast's gradient).
 * Requires: shapes (precision); autodiff and the optimizer (storage). Without --precision bf16, nothing.
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

/* Whether op computes in bfloat16 under autocast (its lower-precision list): it reads bfloat16 copies of
 * its float32 inputs, and its output holds bfloat16. */
static bool bf16_op(VccOp op) {
    return op == VCC_OP_CONV || op == VCC_OP_CONV_TRANSPOSE || op == VCC_OP_GEMM || op == VCC_OP_MATMUL ||
           op == VCC_OP_ATTENTION;
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

/* Whether x is a scalar constant, which takes no part in type promotion (a Python number in the model's
 * code: bfloat16 times 0.5 stays bfloat16). */
static bool scalar_const(const VccTensor *x) { return x->kind == VCC_T_CONST && vcc_shape_numel(&x->shape) <= 1; }

/* Whether node n is the bias Add of a linear layer torch.onnx exports as MatMul + Add (nn.Linear on inputs
 * of rank 3 or more): Add(MatMul(x, W), b), W and b parameters, b of rank 1. autocast's linear reads a
 * bfloat16 bias, so the Add is part of the layer: it reads b's copy and holds bfloat16. */
static bool linear_bias_add(const VccGraph *g, const VccNode *n) {
    if (n->op != VCC_OP_ADD || n->nin != 2 || n->in[0] < 0 || n->in[1] < 0) return false;
    for (int i = 0; i < 2; i++) {
        const VccTensor *m = &g->tensors[n->in[i]], *b = &g->tensors[n->in[1 - i]];
        if (m->producer < 0 || b->kind != VCC_T_PARAM || b->shape.rank != 1) continue;
        const VccNode *mm = &g->nodes[m->producer];
        int w = mm->op == VCC_OP_MATMUL && mm->nin == 2 ? mm->in[1] : -1;
        if (w >= 0 && g->tensors[w].producer >= 0 && g->nodes[g->tensors[w].producer].op == VCC_OP_CAST_BF16)
            w = g->nodes[g->tensors[w].producer].in[0]; /* the weight's copy, made already */
        if (w >= 0 && g->tensors[w].kind == VCC_T_PARAM) return true;
    }
    return false;
}

/* Whether output i of node n is a statistic or a mask rather than a value: a normalization's saved mean
 * and inverse deviation, Dropout's mask, an attention's log-sum-exp (every output past the first of an op
 * other than Split). */
static bool side_output(const VccNode *n, int i) { return i > 0 && n->op != VCC_OP_SPLIT; }

VccStatus vcc_precision(VccCtx *ctx, VccGraph *g) {
    if (ctx->precision != VCC_PRECISION_BF16) return VCC_OK;
    uint8_t bytes = (uint8_t)(ctx->bf16_store_bytes == 4 ? 4 : 2);
    int nt = g->ntensors;
    int *copy = vcc_malloc(sizeof(int) * (size_t)(nt ? nt : 1)); /* float32 tensor -> its bfloat16 copy, -1 */
    for (int t = 0; t < nt; t++) copy[t] = -1;
    for (int k = 0; k < g->nnodes; k++) {
        if (g->nodes[k].phase != VCC_PHASE_FORWARD) continue;
        bool lower = bf16_op(g->nodes[k].op) || linear_bias_add(g, &g->nodes[k]);
        for (int i = 0; lower && i < g->nodes[k].nin; i++) { /* its float32 inputs through bfloat16 copies */
            int x = g->nodes[k].in[i];
            if (x < 0 || x >= nt || g->tensors[x].dtype != VCC_F32 || g->tensors[x].bf16_bytes ||
                scalar_const(&g->tensors[x]))
                continue;
            if (copy[x] < 0) {
                VccShape shape = g->tensors[x].shape;
                copy[x] = vcc_tensor_add_unique(g, VCC_F32, &shape, VCC_T_ACT, "%s.bf16", g->tensors[x].name);
                g->tensors[copy[x]].bf16_bytes = bytes;
                char *name = vcc_strfmt("%s.bf16", g->tensors[x].name);
                int c = vcc_node_add(g, VCC_OP_CAST_BF16, name, &x, 1, &copy[x], 1, VCC_PHASE_FORWARD);
                free(name);
                vcc_nodes_move(g, c, k++); /* before its first reader, which moves one on */
            }
            g->nodes[k].in[i] = copy[x];
        }
        const VccNode *n = &g->nodes[k];
        bool bf16;
        if (lower) {
            bf16 = true;
        } else if (float32_op(n->op)) {
            bf16 = false;
        } else if (n->op == VCC_OP_BATCHNORM) { /* autocast: its input's type, float32 statistics */
            bf16 = n->in[0] >= 0 && g->tensors[n->in[0]].bf16_bytes;
        } else { /* type promotion: bfloat16 when every float input but scalar constants is */
            bool any = false, all = true;
            for (int i = 0; i < n->nin; i++) {
                const VccTensor *x = n->in[i] >= 0 ? &g->tensors[n->in[i]] : NULL;
                if (!x || x->dtype != VCC_F32 || scalar_const(x)) continue;
                any = true;
                all &= x->bf16_bytes != 0;
            }
            bf16 = any && all;
        }
        for (int i = 0; bf16 && i < n->nout; i++) {
            VccTensor *y = n->out[i] >= 0 ? &g->tensors[n->out[i]] : NULL;
            if (y && y->dtype == VCC_F32 && y->kind == VCC_T_ACT && !side_output(n, i)) y->bf16_bytes = bytes;
        }
    }
    free(copy);
    return VCC_OK;
}

/* The backward readers of each forward CastBF16 copy (a ConvGradData's weights) read a copy of their own,
 * made again right before the first of them: the forward copy then dies with its last forward reader
 * instead of being saved through the step (a pass over the parameter, against its bytes / 2 kept from
 * the forward to the backward; autocast keeps its cast). The same rounding, so the same numbers. */
static void recast_for_backward(VccGraph *g, uint8_t bytes) {
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
        g->tensors[again].bf16_bytes = bytes;
        char *name = vcc_strfmt("%s.again", g->nodes[c].name);
        int p = g->nodes[c].in[0];
        int k = vcc_node_add(g, VCC_OP_CAST_BF16, name, &p, 1, &again, 1, VCC_PHASE_BACKWARD);
        free(name);
        vcc_nodes_move(g, k, first);
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

/* Whether backward op op computes in bfloat16 when its inputs hold bfloat16: the gradients of autocast's
 * lower-precision ops (and the MatMuls of gradient rules), which cuDNN and cuBLAS run on one data type. */
static bool bf16_backward_op(VccOp op) {
    return op == VCC_OP_CONV || op == VCC_OP_CONV_GRAD_DATA || op == VCC_OP_CONV_GRAD_FILTER ||
           op == VCC_OP_CONV_TRANSPOSE_GRAD_DATA || op == VCC_OP_CONV_TRANSPOSE_GRAD_FILTER || op == VCC_OP_GEMM_GRAD ||
           op == VCC_OP_MATMUL || op == VCC_OP_MATMUL_T || op == VCC_OP_ATTENTION_GRAD;
}

/* Whether node n reads a bfloat16 value. */
static bool reads_bf16(const VccGraph *g, const VccNode *n) {
    for (int i = 0; i < n->nin; i++)
        if (n->in[i] >= 0 && g->tensors[n->in[i]].bf16_bytes) return true;
    return false;
}

/* A backward lower-precision op (bf16_backward_op) that reads bfloat16 values reads a float32 input
 * through a bfloat16 copy, CastBF16(dy) -> "<dy>.bf16", made right before it: the gradient of a bfloat16
 * value that a gradient rule passes on from a float32 one (Sub's, where a bfloat16 prediction meets a
 * float32 target) is float32 in vcc's graph, where autograd casts it to its value's dtype. One copy per
 * tensor, shared by the readers after it. */
static void cast_backward_inputs(VccGraph *g, uint8_t bytes) {
    for (int k = 0; k < g->nnodes; k++) {
        const VccNode *n = &g->nodes[k];
        if (n->phase != VCC_PHASE_BACKWARD || !bf16_backward_op(n->op)) continue;
        for (int i = 0; reads_bf16(g, &g->nodes[k]) && i < g->nodes[k].nin; i++) {
            int x = g->nodes[k].in[i];
            if (x < 0 || g->tensors[x].dtype != VCC_F32 || g->tensors[x].bf16_bytes ||
                vcc_shape_numel(&g->tensors[x].shape) <= 0)
                continue;
            VccShape shape = g->tensors[x].shape;
            int x16 = vcc_tensor_add_unique(g, VCC_F32, &shape, g->tensors[x].kind == VCC_T_PARAM ? VCC_T_ACT
                                                                                                : g->tensors[x].kind,
                                            "%s.bf16", g->tensors[x].name);
            g->tensors[x16].bf16_bytes = bytes;
            char *name = vcc_strfmt("%s.bf16", g->tensors[x].name);
            int c = vcc_node_add(g, VCC_OP_CAST_BF16, name, &x, 1, &x16, 1, VCC_PHASE_BACKWARD);
            free(name);
            vcc_nodes_move(g, c, k); /* the copy is node k now, its reader k + 1 */
            k++;
            for (int j = k; j < g->nnodes; j++)
                if (g->nodes[j].phase == VCC_PHASE_BACKWARD && bf16_backward_op(g->nodes[j].op) &&
                    reads_bf16(g, &g->nodes[j]))
                    for (int r = 0; r < g->nodes[j].nin; r++)
                        if (g->nodes[j].in[r] == x) g->nodes[j].in[r] = x16;
        }
    }
}

VccStatus vcc_storage(VccCtx *ctx, VccGraph *g) {
    if (ctx->precision != VCC_PRECISION_BF16) return VCC_OK;
    uint8_t bytes = (uint8_t)(ctx->bf16_store_bytes == 4 ? 4 : 2);
    recast_for_backward(g, bytes);
    int nt = g->ntensors;
    if (g->loss >= 0) { /* the loss is float32, also where the graph computes it (--loss graph) */
        int b = g->loss;
        while (g->tensors[b].alias_of >= 0) b = g->tensors[b].alias_of;
        g->tensors[b].bf16_bytes = 0;
    }
    for (int t = 0; t < nt; t++) { /* the gradients of bfloat16 values */
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
    cast_backward_inputs(g, bytes);
    return VCC_OK;
}

VccStatus vcc_precision_check_dump(VccCtx *ctx, const VccGraph *g, int done) {
    bool casts = false;
    for (int k = 0; k < g->nnodes; k++) casts |= g->nodes[k].op == VCC_OP_CAST_BF16;
    bool bf16 = ctx->precision == VCC_PRECISION_BF16;
    if (casts && !bf16) {
        vcc_error(ctx, "this dump was compiled with --precision bf16 (it has CastBF16 nodes): give --precision bf16 "
                       "and a dump from before 'precision', or the ONNX model");
        return VCC_ERR_UNSUPPORTED;
    }
    if (bf16 && done >= vcc_pass_index("precision")) {
        vcc_error(ctx, "--precision bf16: a dump after '%s' does not keep which values hold bfloat16 (nor, after "
                       "'autodiff', whose gradient a tensor is); give a dump from before 'precision', or the ONNX "
                       "model", vcc_pass_names[done]);
        return VCC_ERR_UNSUPPORTED;
    }
    return VCC_OK;
}
