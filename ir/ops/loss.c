/*
 * loss.c — the loss family: the losses passes/loss appends (--loss) and their gradients.
 *
 *   SoftmaxCrossEntropyLoss (logits (N, K), labels int64 (N)) -> (loss [], prob (N, K)): ONNX
 *     SoftmaxCrossEntropyLoss (opset 13) with reduction="mean" and no weights, PyTorch
 *     nn.CrossEntropyLoss() semantics (--loss ce).
 *   MeanSquaredError (pred, target, same shape) -> loss []: mean((pred - target)^2) over every element,
 *     PyTorch nn.MSELoss() (reduction "mean") (--loss mse).
 *   GraphLoss (x []) -> loss []: the model's own scalar output is the loss (--loss graph); the loss is a
 *     view of it, and the gradient of x is 1 (a LossSeed node fills it).
 *
 * Kernels: runtime/{elem,proto,cpu,cuda}/loss.*; LossSeed uses fill_forward (runtime base).
 */
#include "ops.h"

#include <inttypes.h>

/* ------------------------------------------------------------------ SoftmaxCrossEntropyLoss */

/* (logits (N, K), labels int64 (N)) -> (loss [], prob (N, K)); the gradient: (prob, labels, seed []) ->
 * dlogits (N, K) */
static VccStatus xent_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    const VccTensor *a = vcc_need_input(ctx, g, n, 0, VCC_F32), *b = NULL, *c;
    if (!a || !(b = vcc_need_input(ctx, g, n, 1, VCC_I64)) || a->shape.rank != 2 || b->shape.rank != 1 ||
        b->shape.dims[0] != a->shape.dims[0])
        return vcc_shape_mismatch(ctx, n);
    if (n->op == VCC_OP_SOFTMAXXENT) {
        VccShape sc = {0, {0}};
        if (n->nout != 2 || !vcc_put_output(ctx, g, n, true, n->out[0], VCC_F32, &sc) ||
            !vcc_put_output(ctx, g, n, true, n->out[1], VCC_F32, &a->shape))
            return VCC_ERR_SHAPE;
        return VCC_OK;
    }
    if (!(c = vcc_need_input(ctx, g, n, 2, VCC_F32)) || c->shape.rank != 0 || n->nout != 1)
        return vcc_shape_mismatch(ctx, n);
    return vcc_put_output(ctx, g, n, true, n->out[0], VCC_F32, &a->shape) ? VCC_OK : VCC_ERR_SHAPE;
}

/* SoftmaxCrossEntropyLoss -> SoftmaxCrossEntropyLossGrad(prob, labels, seed) -> dlogits, seed = 1 */
static VccStatus xent_grad(VccDiff *d, int k) {
    VccGraph *g = d->g;
    VccNode n = g->nodes[k];
    VccShape s0 = {0, {0}};
    int seed = vcc_tensor_add_unique(g, VCC_F32, &s0, VCC_T_CONST, "%s.grad_seed", g->tensors[g->loss].name);
    g->tensors[seed].data = vcc_malloc(4);
    g->tensors[seed].data_bytes = 4;
    *(float *)g->tensors[seed].data = 1.0f;
    vcc_diff_grow(d);
    int dx = vcc_diff_new_grad(d, n.in[0]);
    int in[3] = {n.out[1], n.in[1], seed};
    vcc_diff_add_node(d, VCC_OP_SOFTMAXXENT_GRAD, k, "grad", in, 3, &dx, 1);
    vcc_diff_accum(d, n.in[0], dx);
    return VCC_OK;
}

static VccStatus xent_emit(VccEmit *e, int k) {
    const VccGraph *g = e->g;
    const VccNode *n = &g->nodes[k];
    const VccShape *s = &g->tensors[n->in[0]].shape;
    if (n->op == VCC_OP_SOFTMAXXENT)
        fprintf(e->f, "    softmax_xent_forward(rt, %" PRId64 ", %" PRId64 ", %s, (const int64_t *)(A + %" PRId64 "), %s, %s);\n",
                s->dims[0], s->dims[1], vcc_emit_f32(e, n->in[0]), g->tensors[n->in[1]].offset,
                vcc_emit_f32(e, n->out[0]), vcc_emit_f32(e, n->out[1]));
    else
        fprintf(e->f, "    softmax_xent_backward(rt, %" PRId64 ", %" PRId64 ", %s, (const int64_t *)(A + %" PRId64 "), %s, %s);\n",
                s->dims[0], s->dims[1], vcc_emit_f32(e, n->in[0]), g->tensors[n->in[1]].offset,
                vcc_emit_f32(e, n->in[2]), vcc_emit_f32(e, n->out[0]));
    return VCC_OK;
}

const VccOpDef vcc_def_SOFTMAXXENT = {0, 0, NULL, NULL, NULL, xent_shape, xent_grad, xent_emit};
const VccOpDef vcc_def_SOFTMAXXENT_GRAD = {0, 0, NULL, NULL, NULL, xent_shape, NULL, xent_emit};

/* ------------------------------------------------------------------ MeanSquaredError */

/* (pred, target) of one shape -> loss []; the gradient: (pred, target) -> dpred, of pred's shape */
static VccStatus mse_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    const VccTensor *a = vcc_need_input(ctx, g, n, 0, VCC_F32), *b = NULL;
    if (!a || !(b = vcc_need_input(ctx, g, n, 1, VCC_F32)) || !vcc_same_shape(&a->shape, &b->shape) || n->nout != 1)
        return vcc_shape_mismatch(ctx, n);
    VccShape sc = {0, {0}};
    return vcc_put_output(ctx, g, n, true, n->out[0], VCC_F32, n->op == VCC_OP_MSE ? &sc : &a->shape) ? VCC_OK
                                                                                                      : VCC_ERR_SHAPE;
}

/* MeanSquaredError -> MeanSquaredErrorGrad(pred, target) -> dpred = 2 (pred - target) / n */
static VccStatus mse_grad(VccDiff *d, int k) {
    VccNode n = d->g->nodes[k];
    int dx = vcc_diff_new_grad(d, n.in[0]);
    int in[2] = {n.in[0], n.in[1]};
    vcc_diff_add_node(d, VCC_OP_MSE_GRAD, k, "grad", in, 2, &dx, 1);
    vcc_diff_accum(d, n.in[0], dx);
    return VCC_OK;
}

static VccStatus mse_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    fprintf(e->f, "    mse_%s(rt, %" PRId64 ", %s, %s, %s);\n", n->op == VCC_OP_MSE ? "forward" : "backward",
            vcc_emit_numel(e, n->in[0]), vcc_emit_f32(e, n->in[0]), vcc_emit_f32(e, n->in[1]), vcc_emit_f32(e, n->out[0]));
    return VCC_OK;
}

const VccOpDef vcc_def_MSE = {0, 0, NULL, NULL, NULL, mse_shape, mse_grad, mse_emit};
const VccOpDef vcc_def_MSE_GRAD = {0, 0, NULL, NULL, NULL, mse_shape, NULL, mse_emit};

/* ------------------------------------------------------------------ GraphLoss and LossSeed */

/* x [] (or one element) -> loss, a view of x */
static VccStatus graph_loss_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    const VccTensor *x = vcc_need_input(ctx, g, n, 0, VCC_F32);
    if (!x || vcc_shape_numel(&x->shape) != 1 || n->nout != 1) return vcc_shape_mismatch(ctx, n);
    return vcc_put_output(ctx, g, n, check, n->out[0], VCC_F32, &x->shape) ? VCC_OK : VCC_ERR_SHAPE;
}

/* GraphLoss(x) -> LossSeed() -> dx = 1 */
static VccStatus graph_loss_grad(VccDiff *d, int k) {
    int x = d->g->nodes[k].in[0];
    int dx = vcc_diff_new_grad(d, x);
    vcc_diff_add_node(d, VCC_OP_LOSS_SEED, k, "seed", NULL, 0, &dx, 1);
    vcc_diff_accum(d, x, dx);
    return VCC_OK;
}

static VccStatus graph_loss_emit(VccEmit *e, int k) {
    (void)k;
    fputs("    /* view: the loss is the model's output */\n", e->f);
    return VCC_OK;
}

const VccOpDef vcc_def_GRAPH_LOSS = {VCC_OPF_VIEW, 0, NULL, NULL, NULL, graph_loss_shape, graph_loss_grad,
                                     graph_loss_emit};

/* () -> a float tensor of ones (the gradient of the loss with respect to itself); its shape is its own */
static VccStatus seed_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    if (n->nin != 0 || n->nout != 1 || n->out[0] < 0 || g->tensors[n->out[0]].dtype != VCC_F32)
        return vcc_operands_missing(ctx, n);
    return VCC_OK;
}

static VccStatus seed_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    fprintf(e->f, "    fill_forward(rt, %" PRId64 ", 1.0f, %s);\n", vcc_emit_numel(e, n->out[0]), vcc_emit_f32(e, n->out[0]));
    return VCC_OK;
}

const VccOpDef vcc_def_LOSS_SEED = {0, 0, NULL, NULL, NULL, seed_shape, NULL, seed_emit};
