/*
 * optimizer.c — the parameter update.
 *
 * Requires: autodiff (each trained PARAM has t->grad).
 * Produces, where the updates go:
 *   - by default, each gradient is a planned tensor (GRAD_PLANNED) whose only reader is its parameter's
 *     update, and the update has no other gradient input: passes/schedule runs it as soon as the
 *     gradient is final and every other reader of the parameter (e.g. a ConvGradData reading the weight)
 *     has run, so a gradient lives from its first contribution to its update and the gradients are never
 *     all held at once. The updates are independent of each other: the weights and losses are bit for
 *     bit those of the order below;
 *   - with ctx->keep_grads (vcc --keep-grads), the gradients are kept (GRAD, persistent: the trainer's
 *     --save-grads reads them after the step) and one GradNormClip node reads them all, writing
 *     "grad_norm.clip", a float64 pair (sum of the gradients' squares, clip scale) that the trainer fills
 *     when run with --clip-grad-norm (torch.nn.utils.clip_grad_norm_ semantics: the norm of all
 *     gradients before any update); every update node reads it, so it runs after the last gradient and
 *     before the first update;
 *   - per parameter p, for ctx->optimizer:
 *     sgd:   an OPT_STATE tensor "<p>.momentum" (zero at start) and SGDMomentum(p, p.grad, p.momentum
 *            [, clip]), PyTorch torch.optim.SGD semantics with dampening 0 and nesterov off:
 *            g' = g + wd*p; v = m*v + g'; p -= lr*v (m = ctx->momentum is baked into the graph as the
 *            trainer's default; lr and wd are trainer arguments);
 *     adamw: OPT_STATE tensors "<p>.exp_avg" and "<p>.exp_avg_sq" (zero at start) and
 *            AdamW(p, p.grad, p.exp_avg, p.exp_avg_sq[, clip]), PyTorch torch.optim.AdamW semantics
 *            (amsgrad and maximize off); lr, betas, eps and wd are trainer arguments.
 */
#include "passes.h"

#include <stdlib.h>

/* The OPT_STATE tensor "<param p's name><suffix>" of p's shape, zero at start. */
static int opt_state(VccGraph *g, int p, const char *suffix) {
    VccShape s = g->tensors[p].shape;
    int v = vcc_tensor_add_unique(g, VCC_F32, &s, VCC_T_OPT_STATE, "%s%s", g->tensors[p].name, suffix);
    g->tensors[v].param_of = p;
    return v;
}

VccStatus vcc_optimizer(VccCtx *ctx, VccGraph *g) {
    int n0 = g->ntensors, ngrad = 0;
    int *grads = vcc_malloc(sizeof(int) * (size_t)(n0 ? n0 : 1));
    for (int p = 0; p < n0; p++)
        if (g->tensors[p].kind == VCC_T_PARAM && g->tensors[p].grad >= 0) grads[ngrad++] = g->tensors[p].grad;
    int clip = -1;
    for (int i = 0; i < ngrad; i++) g->tensors[grads[i]].kind = ctx->keep_grads ? VCC_T_GRAD : VCC_T_GRAD_PLANNED;
    if (ngrad && ctx->keep_grads) {
        VccShape pair = {1, {2}};
        clip = vcc_tensor_add_unique(g, VCC_F64, &pair, VCC_T_ACT, "grad_norm.clip");
        vcc_node_add(g, VCC_OP_GRAD_NORM, "grad_norm", grads, ngrad, &clip, 1, VCC_PHASE_UPDATE);
    }
    free(grads);
    for (int p = 0; p < n0; p++) {
        if (g->tensors[p].kind != VCC_T_PARAM || g->tensors[p].grad < 0) continue;
        if (ctx->optimizer == VCC_OPTIM_ADAMW) {
            int m = opt_state(g, p, ".exp_avg"), v = opt_state(g, p, ".exp_avg_sq");
            int in[5] = {p, g->tensors[p].grad, m, v, clip};
            char *name = vcc_strfmt("%s.adamw", g->tensors[p].name);
            vcc_node_add(g, VCC_OP_ADAMW, name, in, clip >= 0 ? 5 : 4, NULL, 0, VCC_PHASE_UPDATE);
            free(name);
            continue;
        }
        int v = opt_state(g, p, ".momentum");
        int in[4] = {p, g->tensors[p].grad, v, clip};
        char *name = vcc_strfmt("%s.sgd", g->tensors[p].name);
        int k = vcc_node_add(g, VCC_OP_SGD, name, in, clip >= 0 ? 4 : 3, NULL, 0, VCC_PHASE_UPDATE);
        free(name);
        vcc_attr_set_float(&g->nodes[k], "momentum", ctx->momentum);
    }
    return VCC_OK;
}
