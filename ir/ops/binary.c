/*
 * binary.c — the binary family: elementwise ops of two inputs. Add and GradAccumulate.
 *
 * Kernels: runtime/{elem,proto,cpu,cuda}/binary.*.
 * Source: ONNX Operators "Add": 1/6 (broadcast, axis: vcc adds equal shapes only), 7+ (multidirectional
 * broadcast; vcc: equal shapes).
 */
#include "ops.h"

#include <inttypes.h>

/* ------------------------------------------------------------------ Add */

static const VccAttrSpec add_attrs[] = {
    {"consumed_inputs", 1, 5, VCC_A_INTS}, {"broadcast", 1, 6, VCC_A_INT}, {"axis", 1, 6, VCC_A_INT}, {NULL, 0, 0, 0},
};

/* (A, B) -> Y, all of one shape */
static VccStatus add_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    char s1[128], s2[128];
    const VccTensor *x = vcc_need_input(ctx, g, n, 0, VCC_F32), *b;
    if (!x || !(b = vcc_need_input(ctx, g, n, 1, VCC_F32))) return VCC_ERR_SHAPE;
    if (!vcc_same_shape(&x->shape, &b->shape)) {
        vcc_shape_str(s1, sizeof s1, &x->shape);
        vcc_shape_str(s2, sizeof s2, &b->shape);
        vcc_error(ctx, "node '%s' (Add): broadcasting %s with %s is not supported yet (shapes must be equal)", n->name,
                  s1, s2);
        return VCC_ERR_UNSUPPORTED;
    }
    return vcc_put_output(ctx, g, n, check, n->out[0], VCC_F32, &x->shape) ? VCC_OK : VCC_ERR_SHAPE;
}

/* Add(A, B): dA = dB = dY */
static VccStatus add_grad(VccDiff *d, int k) {
    VccNode n = d->g->nodes[k];
    int dy = vcc_diff_dy(d, k, 0);
    for (int i = 0; i < 2; i++)
        if (d->req[n.in[i]]) vcc_diff_accum(d, n.in[i], dy);
    return VCC_OK;
}

static VccStatus add_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    fprintf(e->f, "    add_forward(rt, %" PRId64 ", %s, %s, %s);\n", vcc_emit_numel(e, n->out[0]),
            vcc_emit_f32(e, n->in[0]), vcc_emit_f32(e, n->in[1]), vcc_emit_f32(e, n->out[0]));
    return VCC_OK;
}

const VccOpDef vcc_def_ADD = {VCC_OPF_INPLACE, 0, add_attrs, NULL, NULL, add_shape, add_grad, add_emit};

/* ------------------------------------------------------------------ GradAccumulate */

/* (a, b) -> a + b, all of one shape */
static VccStatus accum_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    const VccTensor *a = vcc_need_input(ctx, g, n, 0, VCC_F32), *b;
    if (!a || !(b = vcc_need_input(ctx, g, n, 1, VCC_F32)) || n->nout != 1 || !vcc_same_shape(&a->shape, &b->shape))
        return vcc_shape_mismatch(ctx, n);
    return vcc_put_output(ctx, g, n, true, n->out[0], VCC_F32, &a->shape) ? VCC_OK : VCC_ERR_SHAPE;
}

const VccOpDef vcc_def_GRAD_ACCUM = {VCC_OPF_INPLACE, 0, NULL, NULL, NULL, accum_shape, NULL, add_emit};
