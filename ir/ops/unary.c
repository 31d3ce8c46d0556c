/*
 * unary.c — the unary family: elementwise ops of one input. Relu and ReluGrad.
 *
 * Kernels: runtime/{elem,proto,cpu,cuda}/unary.* (the per-element bodies in runtime/elem/unary.h).
 * Source: ONNX Operators "Relu" (opsets 1 (consumed_inputs, an in-place hint without meaning: ignored),
 * 6, 13, 14); gradient as PyTorch's threshold_backward.
 */
#include "ops.h"

#include <inttypes.h>

/* Output 0 has input 0's shape and dtype float. */
static VccStatus same_as_input(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    const VccTensor *x = vcc_need_input(ctx, g, n, 0, VCC_F32);
    if (!x) return VCC_ERR_SHAPE;
    return vcc_put_output(ctx, g, n, check, n->out[0], VCC_F32, &x->shape) ? VCC_OK : VCC_ERR_SHAPE;
}

/* ------------------------------------------------------------------ Relu */

static const VccAttrSpec relu_attrs[] = {{"consumed_inputs", 1, 5, VCC_A_INTS}, {NULL, 0, 0, 0}};

/* Relu(X) -> Y: ReluGrad(Y, dY) -> dX */
static VccStatus relu_grad(VccDiff *d, int k) {
    VccNode n = d->g->nodes[k];
    int dx = vcc_diff_new_grad(d, n.in[0]);
    int in[2] = {n.out[0], vcc_diff_dy(d, k, 0)};
    vcc_diff_add_node(d, VCC_OP_RELU_GRAD, k, "grad", in, 2, &dx, 1);
    vcc_diff_accum(d, n.in[0], dx);
    return VCC_OK;
}

static VccStatus relu_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    fprintf(e->f, "    relu_forward(rt, %" PRId64 ", %s, %s);\n", vcc_emit_numel(e, n->out[0]), vcc_emit_f32(e, n->in[0]),
            vcc_emit_f32(e, n->out[0]));
    return VCC_OK;
}

const VccOpDef vcc_def_RELU = {VCC_OPF_INPLACE, 0, relu_attrs, NULL, NULL, same_as_input, relu_grad, relu_emit};

/* ------------------------------------------------------------------ ReluGrad */

/* (Y, dY) -> dX, all of one shape */
static VccStatus relu_grad_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    const VccTensor *a = vcc_need_input(ctx, g, n, 0, VCC_F32), *b;
    if (!a || !(b = vcc_need_input(ctx, g, n, 1, VCC_F32)) || n->nout != 1 || !vcc_same_shape(&a->shape, &b->shape))
        return vcc_shape_mismatch(ctx, n);
    return vcc_put_output(ctx, g, n, true, n->out[0], VCC_F32, &a->shape) ? VCC_OK : VCC_ERR_SHAPE;
}

static VccStatus relu_grad_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    fprintf(e->f, "    relu_backward(rt, %" PRId64 ", %s, %s, %s);\n", vcc_emit_numel(e, n->out[0]),
            vcc_emit_f32(e, n->in[0]), vcc_emit_f32(e, n->in[1]), vcc_emit_f32(e, n->out[0]));
    return VCC_OK;
}

const VccOpDef vcc_def_RELU_GRAD = {VCC_OPF_INPLACE, 0, NULL, NULL, NULL, relu_grad_shape, NULL, relu_grad_emit};
