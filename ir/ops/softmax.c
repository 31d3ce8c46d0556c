/*
 * softmax.c — the softmax family: Softmax and LogSoftmax, and their backward ops SoftmaxGrad and
 * LogSoftmaxGrad ((Y, dY) -> dX, from the forward OUTPUT).
 *
 * Kernels: runtime/{elem,proto,cpu,cuda}/softmax.*.
 * Source: ONNX Operators "Softmax" and "LogSoftmax". Opsets 1 and 11 coerce the input to 2-D at axis
 * (default 1) and normalize each row of the flattened trailing block dims[axis:]; opset 13 normalizes
 * along the one dim axis (default -1). Canonical form, for every opset: attributes axis (in [-r, r),
 * the opset's default filled in) and flatten (1: the opset 1-12 form). Both are one form for the
 * kernels: the input viewed as (outer, D, inner), a row of D elements at stride inner normalized on
 * its own (flatten: D = prod(dims[axis:]), inner = 1; else D = dims[axis], inner = prod(dims[axis+1:])).
 * Gradients as PyTorch's _softmax_backward_data and _log_softmax_backward_data: softmax
 * dx = y * (dy - sum(dy * y)), log-softmax dx = dy - exp(y) * sum(dy), sums over the row.
 */
#include "ops.h"

#include <inttypes.h>

static const VccAttrSpec softmax_attrs[] = {{"axis", 1, VCC_OPSET_NOW, VCC_A_INT}, {NULL, 0, 0, 0}};

/* axis with the opset's default; flatten for opsets before 13 */
static VccStatus softmax_canon(VccCtx *ctx, VccGraph *g, int k) {
    (void)ctx;
    VccNode *n = &g->nodes[k];
    bool flatten = g->opset < 13;
    vcc_attr_set_int(n, "axis", vcc_attr_int(n, "axis", flatten ? 1 : -1));
    vcc_attr_set_int(n, "flatten", flatten);
    return VCC_OK;
}

/* The (outer, D, inner) view of node n (canonical attributes) on an input of shape x; false with an error
 * naming the node when the axis is outside [-r, r). */
static bool softmax_view(VccCtx *ctx, const VccNode *n, const VccShape *x, int64_t *outer, int64_t *D,
                         int64_t *inner) {
    int axis;
    if (!vcc_node_axis(ctx, n, vcc_attr_int(n, "axis", -1), x->rank, &axis)) return false;
    bool flatten = vcc_attr_int(n, "flatten", 0) != 0;
    *outer = *D = *inner = 1;
    for (int d = 0; d < x->rank; d++) {
        int64_t *p = d < axis ? outer : d == axis || flatten ? D : inner;
        *p *= x->dims[d];
    }
    return true;
}

static VccStatus softmax_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    const VccTensor *x = vcc_need_input(ctx, g, n, 0, VCC_F32);
    int64_t o, d, i;
    if (!x || !softmax_view(ctx, n, &x->shape, &o, &d, &i)) return VCC_ERR_SHAPE;
    return vcc_put_output(ctx, g, n, check, n->out[0], VCC_F32, &x->shape) ? VCC_OK : VCC_ERR_SHAPE;
}

/* Softmax(X) -> Y: SoftmaxGrad(Y, dY) -> dX (LogSoftmax likewise) */
static VccStatus softmax_grad(VccDiff *d, int k) {
    VccNode n = d->g->nodes[k]; /* a copy: the node array grows */
    int dx = vcc_diff_new_grad(d, n.in[0]);
    int in[2] = {n.out[0], vcc_diff_dy(d, k, 0)};
    vcc_diff_add_node(d, n.op == VCC_OP_SOFTMAX ? VCC_OP_SOFTMAX_GRAD : VCC_OP_LOGSOFTMAX_GRAD, k, "grad", in, 2,
                      &dx, 1);
    vcc_diff_accum(d, n.in[0], dx);
    return VCC_OK;
}

/* (Y, dY) -> dX, all of one shape */
static VccStatus softmax_grad_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    const VccTensor *y = vcc_need_input(ctx, g, n, 0, VCC_F32), *dy;
    int64_t o, d, i;
    if (!y || !(dy = vcc_need_input(ctx, g, n, 1, VCC_F32)) || n->nout != 1 || !vcc_same_shape(&y->shape, &dy->shape))
        return vcc_shape_mismatch(ctx, n);
    if (!softmax_view(ctx, n, &y->shape, &o, &d, &i)) return VCC_ERR_SHAPE;
    return vcc_put_output(ctx, g, n, check, n->out[0], VCC_F32, &y->shape) ? VCC_OK : VCC_ERR_SHAPE;
}

/* softmax_forward(rt, lg, outer, D, inner, x, y); softmax_backward(rt, lg, outer, D, inner, y, dy, dx) */
static VccStatus softmax_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    int64_t o, d, i;
    if (!softmax_view(e->ctx, n, &e->g->tensors[n->in[0]].shape, &o, &d, &i)) return VCC_ERR_SHAPE;
    bool fwd = n->op == VCC_OP_SOFTMAX || n->op == VCC_OP_LOGSOFTMAX;
    int lg = n->op == VCC_OP_LOGSOFTMAX || n->op == VCC_OP_LOGSOFTMAX_GRAD;
    fprintf(e->f, "    softmax_%s(rt, %d, %" PRId64 ", %" PRId64 ", %" PRId64 ", %s, ", fwd ? "forward" : "backward", lg, o,
            d, i, vcc_emit_f32(e, n->in[0]));
    if (!fwd) fprintf(e->f, "%s, ", vcc_emit_f32(e, n->in[1]));
    fprintf(e->f, "%s);\n", vcc_emit_f32(e, n->out[0]));
    return VCC_OK;
}

const VccOpDef vcc_def_SOFTMAX = {0, 0, softmax_attrs, NULL, softmax_canon, softmax_shape, softmax_grad, softmax_emit};
const VccOpDef vcc_def_LOGSOFTMAX = {0, 0, softmax_attrs, NULL, softmax_canon, softmax_shape, softmax_grad,
                                     softmax_emit};
const VccOpDef vcc_def_SOFTMAX_GRAD = {0, 0, NULL, NULL, NULL, softmax_grad_shape, NULL, softmax_emit};
const VccOpDef vcc_def_LOGSOFTMAX_GRAD = {0, 0, NULL, NULL, NULL, softmax_grad_shape, NULL, softmax_emit};
