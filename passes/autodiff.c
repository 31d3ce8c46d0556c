/*
 * autodiff.c — reverse-mode differentiation of the loss.
 *
 * Requires: loss appended (g->loss), shapes known.
 * Produces: backward nodes (phase BACKWARD) in reverse schedule order, by each op's gradient rule
 *   (ir/ops/<family>.c, VccOpDef.grad; e.g. Conv -> ConvGradData + ConvGradFilter, Relu -> ReluGrad,
 *   Add -> dA = dB = dY, a view's gradient -> a view of dY). A node no gradient reaches adds nothing.
 * A value with several consumers gets GradAccumulate(partial, partial). Each trained parameter's final
 * gradient becomes a persistent GRAD tensor (param_of set, param->grad set); where that tensor is a view
 * or was made as the gradient of another value, a GradCopy gives the parameter one of its own.
 * Source: the gradient formulas match PyTorch autograd (torch/csrc/autograd/FunctionsManual.cpp semantics).
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

/* The gradient rule of node k (its family's). */
static VccStatus diff_node(VccDiff *d, int k) {
    const VccNode *n = &d->g->nodes[k];
    const VccOpDef *def = vcc_op_def(n->op);
    bool reached = n->phase == VCC_PHASE_LOSS; /* a node with several outputs (Split) is reached through any */
    for (int i = 0; i < n->nout && !reached; i++) reached = vcc_diff_dy(d, k, i) != -1;
    if (!reached) return VCC_OK; /* no gradient reaches it */
    if (!def->grad) {
        vcc_error(d->ctx, "node '%s' (%s): no gradient rule", n->name, vcc_op_name(n->op));
        return VCC_ERR_UNSUPPORTED;
    }
    return def->grad(d, k);
}

VccStatus vcc_autodiff(VccCtx *ctx, VccGraph *g) {
    VccDiff d = {ctx, g, NULL, NULL, NULL, 0};
    vcc_diff_grow(&d);
    for (int t = 0; t < g->ntensors; t++) d.req[t] = g->tensors[t].kind == VCC_T_PARAM;
    int nfwd = g->nnodes;
    for (int k = 0; k < nfwd; k++) {
        const VccNode *n = &g->nodes[k];
        bool r = false;
        for (int i = 0; i < n->nin; i++)
            if (n->in[i] >= 0 && d.req[n->in[i]]) r = true;
        for (int i = 0; i < n->nout; i++)
            if (n->out[i] >= 0) d.req[n->out[i]] = r;
    }
    VccStatus st = VCC_OK;
    for (int k = nfwd - 1; k >= 0 && !st; k--) {
        VccNode *n = &g->nodes[k];
        if (n->phase != VCC_PHASE_FORWARD && n->phase != VCC_PHASE_LOSS) continue;
        bool any = n->phase == VCC_PHASE_LOSS; /* the loss node seeds the gradients */
        for (int i = 0; i < n->nout; i++)
            if (n->out[i] >= 0 && d.req[n->out[i]]) any = true;
        if (any) st = diff_node(&d, k);
    }
    int trained = 0;
    for (int p = 0; !st && p < g->ntensors && p < d.cap; p++) trained += g->tensors[p].kind == VCC_T_PARAM && d.grad[p] >= 0;
    if (!st && !trained) {
        vcc_error(ctx, "the loss depends on no parameter (no float initializer reaches the logits): there is "
                  "nothing to train");
        st = VCC_ERR_UNSUPPORTED;
    }
    if (!st) {
        int np = g->ntensors;
        for (int p = 0; p < np; p++) {
            if (g->tensors[p].kind != VCC_T_PARAM || p >= d.cap || d.grad[p] < 0) continue;
            int gt = d.grad[p];
            if (g->tensors[gt].alias_of >= 0 || gt >= d.cap || d.owner[gt] != p) {
                /* a view, or the gradient of another value (Add(p, q) passes one dY to both): the
                 * parameter gets a copy of its own */
                int own = vcc_diff_new_grad(&d, p);
                char *name = vcc_strfmt("%s.copy", g->tensors[own].name);
                vcc_node_add(g, VCC_OP_GRAD_COPY, name, &gt, 1, &own, 1, VCC_PHASE_BACKWARD);
                free(name);
                gt = own;
            }
            g->tensors[gt].kind = VCC_T_GRAD;
            g->tensors[gt].param_of = p;
            g->tensors[p].grad = gt;
        }
    }
    free(d.grad);
    free(d.req);
    free(d.owner);
    return st;
}
