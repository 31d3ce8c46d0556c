/*
 * grad.c — the grad family: copies the passes add. GradCopy(g) -> a copy of g, the gradient of a
 * parameter whose gradient would otherwise be a tensor it cannot own: a view of another tensor's bytes
 * (the gradient of a reshaped parameter) or the gradient another parameter already owns (Add(p, q)
 * passes one dY to both). Kernel: copy_forward (runtime base).
 * CastBF16(x) -> x rounded to bfloat16 values (vcc_bf16_round, round to nearest even), one shape: the
 * bfloat16 copy of a float32 input (a parameter, the clip, a float32 value) a convolution or matrix
 * product reads under --precision bf16 (passes/precision.c; torch.autocast's cast). Its gradient is
 * CastBF16(dy): dy holds bfloat16 values already, so x's float32 gradient is dy widened, as autocast's.
 * Kernel: bf16_round_forward (runtime base).
 */
#include "ops.h"

#include <inttypes.h>

/* (g) -> copy, one shape */
static VccStatus copy_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    const VccTensor *a = vcc_need_input(ctx, g, n, 0, VCC_F32);
    if (!a || n->nout != 1) return vcc_shape_mismatch(ctx, n);
    return vcc_put_output(ctx, g, n, true, n->out[0], VCC_F32, &a->shape) ? VCC_OK : VCC_ERR_SHAPE;
}

static VccStatus copy_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    fprintf(e->f, "    copy_forward(rt, %" PRId64 ", %s, %s);\n", vcc_emit_numel(e, n->out[0]), vcc_emit_f32(e, n->in[0]),
            vcc_emit_f32(e, n->out[0]));
    return VCC_OK;
}

const VccOpDef vcc_def_GRAD_COPY = {0, 0, NULL, NULL, NULL, copy_shape, NULL, copy_emit};

/* ------------------------------------------------------------------ CastBF16 */

static VccStatus cast_bf16_grad(VccDiff *d, int k) {
    VccNode n = d->g->nodes[k];
    int dy = vcc_diff_dy(d, k, 0), dx = vcc_diff_new_grad(d, n.in[0]);
    vcc_diff_add_node(d, VCC_OP_CAST_BF16, k, "grad", &dy, 1, &dx, 1);
    vcc_diff_accum(d, n.in[0], dx);
    return VCC_OK;
}

static VccStatus cast_bf16_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    fprintf(e->f, "    bf16_round_forward(rt, %" PRId64 ", %s, %s);\n", vcc_emit_numel(e, n->out[0]),
            vcc_emit_f32(e, n->in[0]), vcc_emit_f32(e, n->out[0]));
    return VCC_OK;
}

const VccOpDef vcc_def_CAST_BF16 = {0, 0, NULL, NULL, NULL, copy_shape, cast_bf16_grad, cast_bf16_emit};
