/*
 * autodiff.c — reverse-mode differentiation of the loss.
 *
 * Requires: loss appended (g->loss), shapes known.
 * Produces: backward nodes (phase BACKWARD), one gradient rule per op, in reverse schedule order:
 *   Conv(X, W, B)           -> ConvGradData(dY, W) -> (dX, ws)        [only if X needs a gradient]
 *                              ConvGradFilter(X, dY) -> (dW, dB|_, ws)
 *   BatchNormalization      -> BatchNormalizationGrad(X, dY, scale, saved_mean, saved_invstd) -> (dX, dscale, dB)
 *   Relu(X) -> Y            -> ReluGrad(Y, dY) -> dX
 *   Add(A, B)               -> dA = dB = dY
 *   GlobalAveragePool       -> GlobalAveragePoolGrad(dY) -> dX
 *   Flatten/Reshape/Identity-> Reshape(dY) -> dX, a view of dY
 *   Gemm(A, B, C)           -> GemmGrad(A, B, dY) -> (dA|_, dB|_, dC|_)
 *   SoftmaxCrossEntropyLoss -> SoftmaxCrossEntropyLossGrad(prob, labels, seed) -> dlogits
 * A value with several consumers gets GradAccumulate(partial, partial). Each trained parameter's final
 * gradient becomes a persistent GRAD tensor (param_of set, param->grad set).
 * Source: the gradient formulas match PyTorch autograd (torch/csrc/autograd/FunctionsManual.cpp semantics).
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    VccGraph *g;
    int *grad;      /* per tensor: its gradient so far, -1 */
    bool *req;      /* per tensor: depends on a parameter */
    int cap;
} Diff;

static void grow(Diff *d) {
    if (d->g->ntensors <= d->cap) return;
    int ncap = d->g->ntensors * 2;
    d->grad = vcc_realloc(d->grad, sizeof(int) * (size_t)ncap);
    d->req = vcc_realloc(d->req, sizeof(bool) * (size_t)ncap);
    for (int i = d->cap; i < ncap; i++) {
        d->grad[i] = -1;
        d->req[i] = false;
    }
    d->cap = ncap;
}

/* A new GRAD_TEMP tensor shaped like t, named "<t>.grad" (made unique). */
static int new_grad(Diff *d, int t) {
    VccShape s = d->g->tensors[t].shape;
    int id = vcc_tensor_add_unique(d->g, VCC_F32, &s, VCC_T_GRAD_TEMP, "%s.grad", d->g->tensors[t].name);
    grow(d);
    return id;
}

/* Add partial gradient gt to t's gradient (GradAccumulate when t already has one). */
static void accum(Diff *d, int t, int gt) {
    if (d->grad[t] < 0) {
        d->grad[t] = gt;
        return;
    }
    int sum = new_grad(d, t);
    int in[2] = {d->grad[t], gt};
    char *name = vcc_strfmt("%s.accum", d->g->tensors[sum].name);
    vcc_node_add(d->g, VCC_OP_GRAD_ACCUM, name, in, 2, &sum, 1, VCC_PHASE_BACKWARD);
    free(name);
    d->grad[t] = sum;
}

static void copy_attrs(VccNode *dst, const VccNode *src) {
    for (int a = 0; a < src->nattrs; a++) {
        const VccAttr *at = &src->attrs[a];
        switch (at->type) {
        case VCC_A_INT: vcc_attr_set_int(dst, at->name, at->i); break;
        case VCC_A_FLOAT: vcc_attr_set_float(dst, at->name, at->f); break;
        case VCC_A_INTS: vcc_attr_set_ints(dst, at->name, at->ints, at->n); break;
        case VCC_A_FLOATS: vcc_attr_set_floats(dst, at->name, at->floats, at->n); break;
        case VCC_A_STRING: vcc_attr_set_string(dst, at->name, at->s); break;
        }
    }
}

static int add_bwd(Diff *d, VccOp op, int fwd, const char *suffix, const int *in, int nin, const int *out, int nout) {
    char *name = vcc_strfmt("%s.%s", d->g->nodes[fwd].name, suffix);
    int k = vcc_node_add(d->g, op, name, in, nin, out, nout, VCC_PHASE_BACKWARD);
    free(name);
    copy_attrs(&d->g->nodes[k], &d->g->nodes[fwd]);
    free(d->g->nodes[k].onnx_op);
    d->g->nodes[k].onnx_op = NULL;
    return k;
}

static VccStatus diff_node(VccCtx *ctx, Diff *d, int k) {
    VccGraph *g = d->g;
    VccNode n = g->nodes[k]; /* copy: the node array grows below */
    int dy = n.out[0] >= 0 ? d->grad[n.out[0]] : -1;
    if (n.op == VCC_OP_SOFTMAXXENT) dy = -2;
    if (dy == -1) return VCC_OK;
    int x = n.nin > 0 ? n.in[0] : -1;
    switch (n.op) {
    case VCC_OP_SOFTMAXXENT: {
        VccShape s0 = {0, {0}};
        int seed = vcc_tensor_add_unique(g, VCC_F32, &s0, VCC_T_CONST, "%s.grad_seed", g->tensors[g->loss].name);
        g->tensors[seed].data = vcc_malloc(4);
        g->tensors[seed].data_bytes = 4;
        *(float *)g->tensors[seed].data = 1.0f;
        grow(d);
        int dx = new_grad(d, x);
        int in[3] = {n.out[1], n.in[1], seed};
        add_bwd(d, VCC_OP_SOFTMAXXENT_GRAD, k, "grad", in, 3, &dx, 1);
        accum(d, x, dx);
        return VCC_OK;
    }
    case VCC_OP_CONV: {
        VccShape xs = g->tensors[x].shape, ws = g->tensors[n.in[1]].shape;
        if (d->req[x]) {
            int dx = new_grad(d, x);
            int in[2] = {dy, n.in[1]};
            int kk = add_bwd(d, VCC_OP_CONV_GRAD_DATA, k, "grad_data", in, 2, &dx, 1);
            VccStatus st = vcc_conv_add_workspace(ctx, g, kk, &xs, &ws);
            if (st) return st;
            grow(d);
            accum(d, x, dx);
        }
        int w = n.in[1], b = n.nin > 2 ? n.in[2] : -1;
        int dw = new_grad(d, w), db = b >= 0 ? new_grad(d, b) : -1;
        int in[2] = {x, dy}, out[2] = {dw, db};
        int kk = add_bwd(d, VCC_OP_CONV_GRAD_FILTER, k, "grad_filter", in, 2, out, 2);
        VccStatus st = vcc_conv_add_workspace(ctx, g, kk, &xs, &ws);
        if (st) return st;
        grow(d);
        accum(d, w, dw);
        if (b >= 0) accum(d, b, db);
        return VCC_OK;
    }
    case VCC_OP_BATCHNORM: {
        int dx = new_grad(d, x), ds = new_grad(d, n.in[1]), dbias = new_grad(d, n.in[2]);
        int in[5] = {x, dy, n.in[1], n.out[1], n.out[2]}, out[3] = {dx, ds, dbias};
        add_bwd(d, VCC_OP_BATCHNORM_GRAD, k, "grad", in, 5, out, 3);
        if (d->req[x]) accum(d, x, dx);
        accum(d, n.in[1], ds);
        accum(d, n.in[2], dbias);
        return VCC_OK;
    }
    case VCC_OP_RELU: {
        int dx = new_grad(d, x);
        int in[2] = {n.out[0], dy};
        add_bwd(d, VCC_OP_RELU_GRAD, k, "grad", in, 2, &dx, 1);
        accum(d, x, dx);
        return VCC_OK;
    }
    case VCC_OP_ADD:
        for (int i = 0; i < 2; i++)
            if (d->req[n.in[i]]) accum(d, n.in[i], dy);
        return VCC_OK;
    case VCC_OP_GLOBALAVGPOOL: {
        int dx = new_grad(d, x);
        add_bwd(d, VCC_OP_GLOBALAVGPOOL_GRAD, k, "grad", &dy, 1, &dx, 1);
        accum(d, x, dx);
        return VCC_OK;
    }
    case VCC_OP_FLATTEN:
    case VCC_OP_RESHAPE:
    case VCC_OP_IDENTITY: {
        int dx = new_grad(d, x);
        g->tensors[dx].alias_of = dy;
        add_bwd(d, VCC_OP_RESHAPE, k, "grad", &dy, 1, &dx, 1);
        accum(d, x, dx);
        return VCC_OK;
    }
    case VCC_OP_GEMM: {
        int c = n.nin > 2 ? n.in[2] : -1;
        int da = d->req[x] ? new_grad(d, x) : -1;
        int db = d->req[n.in[1]] ? new_grad(d, n.in[1]) : -1;
        int dc = c >= 0 && d->req[c] ? new_grad(d, c) : -1;
        int in[3] = {x, n.in[1], dy}, out[3] = {da, db, dc};
        int kk = add_bwd(d, VCC_OP_GEMM_GRAD, k, "grad", in, 3, out, 3);
        if (c >= 0) vcc_attr_set_ints(&g->nodes[kk], "c_shape", g->tensors[c].shape.dims, g->tensors[c].shape.rank);
        if (da >= 0) accum(d, x, da);
        if (db >= 0) accum(d, n.in[1], db);
        if (dc >= 0) accum(d, c, dc);
        return VCC_OK;
    }
    default:
        vcc_error(ctx, "node '%s' (%s): no gradient rule", n.name, vcc_op_name(n.op));
        return VCC_ERR_UNSUPPORTED;
    }
}

VccStatus vcc_autodiff(VccCtx *ctx, VccGraph *g) {
    Diff d = {g, NULL, NULL, 0};
    grow(&d);
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
        bool any = n->op == VCC_OP_SOFTMAXXENT;
        for (int i = 0; i < n->nout; i++)
            if (n->out[i] >= 0 && d.req[n->out[i]]) any = true;
        if (any) st = diff_node(ctx, &d, k);
    }
    int trained = 0;
    for (int p = 0; !st && p < g->ntensors && p < d.cap; p++) trained += g->tensors[p].kind == VCC_T_PARAM && d.grad[p] >= 0;
    if (!st && !trained) {
        vcc_error(ctx, "the loss depends on no parameter (no float initializer reaches the logits): there is "
                  "nothing to train");
        st = VCC_ERR_UNSUPPORTED;
    }
    if (!st) {
        for (int p = 0; p < g->ntensors; p++) {
            if (g->tensors[p].kind != VCC_T_PARAM || p >= d.cap || d.grad[p] < 0) continue;
            int gt = d.grad[p];
            g->tensors[gt].kind = VCC_T_GRAD;
            g->tensors[gt].param_of = p;
            g->tensors[p].grad = gt;
        }
    }
    free(d.grad);
    free(d.req);
    return st;
}
