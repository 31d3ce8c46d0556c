/*
 * pool.c — the pool family: GlobalAveragePool and GlobalAveragePoolGrad.
 *
 * Kernels: runtime/{elem,proto,cpu,cuda}/pool.*.
 * Source: ONNX Operators "GlobalAveragePool" (opset 1): the mean over every spatial dim, kept as size 1.
 */
#include "ops.h"

#include <inttypes.h>

/* ------------------------------------------------------------------ GlobalAveragePool */

/* X (N, C, S...) -> Y (N, C, 1...) */
static VccStatus gap_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    const VccTensor *x = vcc_need_input(ctx, g, n, 0, VCC_F32);
    if (!x) return VCC_ERR_SHAPE;
    if (x->shape.rank < 3) {
        vcc_error(ctx, "node '%s' (GlobalAveragePool): input rank %d < 3", n->name, x->shape.rank);
        return VCC_ERR_SHAPE;
    }
    VccShape out = x->shape;
    for (int i = 2; i < out.rank; i++) out.dims[i] = 1;
    return vcc_put_output(ctx, g, n, check, n->out[0], VCC_F32, &out) ? VCC_OK : VCC_ERR_SHAPE;
}

/* GlobalAveragePool -> GlobalAveragePoolGrad(dY) -> dX */
static VccStatus gap_grad(VccDiff *d, int k) {
    int x = d->g->nodes[k].in[0], dy = vcc_diff_dy(d, k, 0);
    int dx = vcc_diff_new_grad(d, x);
    vcc_diff_add_node(d, VCC_OP_GLOBALAVGPOOL_GRAD, k, "grad", &dy, 1, &dx, 1);
    vcc_diff_accum(d, x, dx);
    return VCC_OK;
}

static VccStatus gap_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    int64_t N, C, S;
    vcc_emit_ncs(e, n->in[0], &N, &C, &S);
    fprintf(e->f, "    global_avgpool_forward(rt, %" PRId64 ", %" PRId64 ", %s, %s);\n", N * C, S,
            vcc_emit_f32(e, n->in[0]), vcc_emit_f32(e, n->out[0]));
    return VCC_OK;
}

const VccOpDef vcc_def_GLOBALAVGPOOL = {0, 0, NULL, NULL, NULL, gap_shape, gap_grad, gap_emit};

/* ------------------------------------------------------------------ GlobalAveragePoolGrad */

/* dY (N, C, 1, ...) -> dX (N, C, S...) */
static VccStatus gap_grad_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    const VccTensor *a = vcc_need_input(ctx, g, n, 0, VCC_F32);
    if (!a || n->nout != 1 || n->out[0] < 0) return vcc_operands_missing(ctx, n);
    VccShape s = g->tensors[n->out[0]].shape;
    for (int i = 2; i < s.rank; i++) s.dims[i] = 1;
    if (g->tensors[n->out[0]].dtype != VCC_F32 || s.rank < 3 || !vcc_same_shape(&a->shape, &s))
        return vcc_shape_mismatch(ctx, n);
    return VCC_OK;
}

static VccStatus gap_grad_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    int64_t N, C, S;
    vcc_emit_ncs(e, n->out[0], &N, &C, &S);
    fprintf(e->f, "    global_avgpool_backward(rt, %" PRId64 ", %" PRId64 ", %s, %s);\n", N * C, S,
            vcc_emit_f32(e, n->in[0]), vcc_emit_f32(e, n->out[0]));
    return VCC_OK;
}

const VccOpDef vcc_def_GLOBALAVGPOOL_GRAD = {0, 0, NULL, NULL, NULL, gap_grad_shape, NULL, gap_grad_emit};
