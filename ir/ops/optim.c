/*
 * optim.c — the optim family: SGDMomentum (appended by passes/optimizer), PyTorch torch.optim.SGD
 * semantics (momentum, dampening 0, weight decay, no Nesterov).
 *
 * Kernels: runtime/{elem,proto,cpu,cuda}/optim.*.
 */
#include "ops.h"

#include <inttypes.h>

/* (param, grad, momentum), all of one shape, updated in place: no outputs */
static VccStatus sgd_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    const VccTensor *a = vcc_need_input(ctx, g, n, 0, VCC_F32), *b = NULL, *c = NULL;
    if (!a || !(b = vcc_need_input(ctx, g, n, 1, VCC_F32)) || !(c = vcc_need_input(ctx, g, n, 2, VCC_F32)) ||
        !vcc_same_shape(&a->shape, &b->shape) || !vcc_same_shape(&a->shape, &c->shape))
        return vcc_shape_mismatch(ctx, n);
    return VCC_OK;
}

static VccStatus sgd_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    fprintf(e->f, "    sgd_update(rt, %" PRId64 ", %s, %s, %s, lr, momentum, wd);\n", vcc_emit_numel(e, n->in[0]),
            vcc_emit_f32(e, n->in[0]), vcc_emit_f32(e, n->in[1]), vcc_emit_f32(e, n->in[2]));
    return VCC_OK;
}

const VccOpDef vcc_def_SGD = {0, 0, NULL, NULL, NULL, sgd_shape, NULL, sgd_emit};
