/*
 * optimizer.c — the parameter update.
 *
 * Requires: autodiff (each trained PARAM has t->grad).
 * Produces: per parameter p an OPT_STATE tensor "<p>.momentum" (zero at start) and a node
 *   SGDMomentum(p, p.grad, p.momentum) updating p and the buffer in place, PyTorch torch.optim.SGD
 *   semantics with dampening 0 and nesterov off: g' = g + wd*p; v = m*v + g'; p -= lr*v
 *   (m = ctx->momentum is baked into the graph; lr and wd are trainer arguments).
 */
#include "passes.h"

#include <stdlib.h>

VccStatus vcc_optimizer(VccCtx *ctx, VccGraph *g) {
    int n0 = g->ntensors;
    for (int p = 0; p < n0; p++) {
        if (g->tensors[p].kind != VCC_T_PARAM || g->tensors[p].grad < 0) continue;
        VccShape s = g->tensors[p].shape;
        int v = vcc_tensor_add_unique(g, VCC_F32, &s, VCC_T_OPT_STATE, "%s.momentum", g->tensors[p].name);
        g->tensors[v].param_of = p;
        int in[3] = {p, g->tensors[p].grad, v};
        char *name = vcc_strfmt("%s.sgd", g->tensors[p].name);
        int k = vcc_node_add(g, VCC_OP_SGD, name, in, 3, NULL, 0, VCC_PHASE_UPDATE);
        free(name);
        vcc_attr_set_float(&g->nodes[k], "momentum", ctx->momentum);
    }
    return VCC_OK;
}
