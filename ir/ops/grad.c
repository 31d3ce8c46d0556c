/*
 * grad.c — the grad family: gradient plumbing passes/autodiff adds. GradCopy(g) -> a copy of g, the
 * gradient of a parameter whose gradient would otherwise be a tensor it cannot own: a view of another
 * tensor's bytes (the gradient of a reshaped parameter) or the gradient another parameter already owns
 * (Add(p, q) passes one dY to both). Kernel: copy_forward (runtime base).
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
