/*
 * loss.c — append the training loss (--loss, ctx->loss).
 *
 * Requires: shapes inferred.
 * Produces: g->loss (a float scalar, kind LOSS, made by the graph's one LOSS-phase node), g->data_input,
 *   and the per-sample inputs the trainer fills each step:
 *   ce    (the default) one float input, the clip batch (N, ...); one output, the logits (N, K). Adds input
 *         "labels" (int64 (N), LABEL) and SoftmaxCrossEntropyLoss(logits, labels) -> (loss, prob) with
 *         reduction "mean": PyTorch nn.CrossEntropyLoss(), ONNX SoftmaxCrossEntropyLoss (opset 13).
 *   mse   one float input (N, ...); one float output (N, ...). Adds input "targets" (the output's shape,
 *         float, LABEL; g->target) and MeanSquaredError(output, targets) -> loss: PyTorch nn.MSELoss().
 *   graph the model's single output, a float scalar, is the loss: GraphLoss(output) -> loss (a view).
 *         The model's float inputs are the data (the first, (N, ...)) and optionally targets (the
 *         second, (N, ...)); an int64 input (N) is the labels (g->label). Any other input is an error.
 */
#include "passes.h"

#include <string.h>

/* The first float graph input is the data (N, ...). */
static int data_input(const VccGraph *g) {
    for (int i = 0; i < g->ninputs; i++) {
        const VccTensor *t = &g->tensors[g->inputs[i]];
        if (t->kind == VCC_T_INPUT && t->dtype == VCC_F32) return g->inputs[i];
    }
    return -1;
}

/* A new per-sample input of the loss (labels or targets) added to the graph inputs. */
static int add_loss_input(VccGraph *g, const char *name, VccDType dt, const VccShape *s) {
    int t = vcc_tensor_add_unique(g, dt, s, VCC_T_LABEL, "%s", name);
    g->inputs = vcc_realloc(g->inputs, sizeof(int) * (size_t)(g->ninputs + 1));
    g->inputs[g->ninputs++] = t;
    return t;
}

static VccStatus add_ce(VccCtx *ctx, VccGraph *g, int data) {
    int logits = g->outputs[0];
    const VccTensor *lt = &g->tensors[logits];
    const VccTensor *dt = &g->tensors[data];
    if (lt->dtype != VCC_F32 || lt->shape.rank != 2 || lt->shape.dims[0] != dt->shape.dims[0]) {
        char ty[160];
        vcc_format_type(ty, sizeof ty, lt);
        vcc_error(ctx, "output '%s' is %s; softmax cross-entropy needs float logits (N, K) with N = batch %lld",
                  lt->name, ty, (long long)dt->shape.dims[0]);
        return VCC_ERR_UNSUPPORTED;
    }
    VccShape sl = {1, {lt->shape.dims[0]}};
    int label = add_loss_input(g, "labels", VCC_I64, &sl);
    VccShape s0 = {0, {0}};
    int loss = vcc_tensor_add_unique(g, VCC_F32, &s0, VCC_T_LOSS, "loss");
    int prob = vcc_tensor_add_unique(g, VCC_F32, &g->tensors[logits].shape, VCC_T_ACT, "loss.prob");
    int in[2] = {logits, label}, out[2] = {loss, prob};
    int k = vcc_node_add(g, VCC_OP_SOFTMAXXENT, "loss", in, 2, out, 2, VCC_PHASE_LOSS);
    vcc_attr_set_string(&g->nodes[k], "reduction", "mean");
    g->label = label;
    g->loss = loss;
    return VCC_OK;
}

static VccStatus add_mse(VccCtx *ctx, VccGraph *g, int data) {
    int pred = g->outputs[0];
    const VccTensor *pt = &g->tensors[pred];
    if (pt->dtype != VCC_F32 || pt->shape.rank < 1 || pt->shape.dims[0] != g->tensors[data].shape.dims[0]) {
        char ty[160];
        vcc_format_type(ty, sizeof ty, pt);
        vcc_error(ctx, "output '%s' is %s; --loss mse needs a float output (N, ...) with N = batch %lld", pt->name,
                  ty, (long long)g->tensors[data].shape.dims[0]);
        return VCC_ERR_UNSUPPORTED;
    }
    VccShape st = pt->shape;
    int target = add_loss_input(g, "targets", VCC_F32, &st);
    VccShape s0 = {0, {0}};
    int loss = vcc_tensor_add_unique(g, VCC_F32, &s0, VCC_T_LOSS, "loss");
    int in[2] = {pred, target};
    int k = vcc_node_add(g, VCC_OP_MSE, "loss", in, 2, &loss, 1, VCC_PHASE_LOSS);
    vcc_attr_set_string(&g->nodes[k], "reduction", "mean");
    g->target = target;
    g->loss = loss;
    return VCC_OK;
}

static VccStatus add_graph(VccCtx *ctx, VccGraph *g, int data) {
    int out = g->outputs[0];
    const VccTensor *ot = &g->tensors[out];
    if (ot->dtype != VCC_F32 || vcc_shape_numel(&ot->shape) != 1) {
        char ty[160];
        vcc_format_type(ty, sizeof ty, ot);
        vcc_error(ctx, "output '%s' is %s; --loss graph needs the model's output to be the loss, one float", ot->name,
                  ty);
        return VCC_ERR_UNSUPPORTED;
    }
    int64_t N = g->tensors[data].shape.dims[0];
    for (int i = 0; i < g->ninputs; i++) {
        int t = g->inputs[i];
        const VccTensor *x = &g->tensors[t];
        if (t == data || x->kind != VCC_T_INPUT) continue;
        bool per_sample = x->shape.rank >= 1 && x->shape.dims[0] == N;
        if (x->dtype == VCC_F32 && g->target < 0 && per_sample) {
            g->target = t;
        } else if (x->dtype == VCC_I64 && g->label < 0 && per_sample && x->shape.rank == 1) {
            g->label = t;
        } else {
            char ty[160];
            vcc_format_type(ty, sizeof ty, x);
            vcc_error(ctx, "input '%s' is %s; with --loss graph the inputs are the data (the first float input), "
                      "optional targets (a second float input (N, ...), from --targets) and optional labels (an "
                      "int64 input (N), from --labels), N = batch %lld", x->name, ty, (long long)N);
            return VCC_ERR_UNSUPPORTED;
        }
        g->tensors[t].kind = VCC_T_LABEL;
    }
    int loss = vcc_tensor_add_unique(g, VCC_F32, &ot->shape, VCC_T_LOSS, "loss");
    g->tensors[loss].alias_of = out;
    vcc_node_add(g, VCC_OP_GRAPH_LOSS, "loss", &out, 1, &loss, 1, VCC_PHASE_LOSS);
    g->loss = loss;
    return VCC_OK;
}

VccStatus vcc_add_loss(VccCtx *ctx, VccGraph *g) {
    int data = data_input(g), ndata = 0;
    for (int i = 0; i < g->ninputs; i++)
        ndata += g->tensors[g->inputs[i]].kind == VCC_T_INPUT && g->tensors[g->inputs[i]].dtype == VCC_F32;
    if (data < 0 || (ndata != 1 && ctx->loss != VCC_LOSS_GRAPH)) {
        vcc_error(ctx, "the model has %d float inputs; vcc trains models with exactly one (the clip batch)%s", ndata,
                  ndata > 1 ? " (with --loss graph, a second one holds the targets)" : "");
        return VCC_ERR_UNSUPPORTED;
    }
    if (g->noutputs != 1) {
        vcc_error(ctx, "the model has %d outputs; vcc appends the loss to exactly one output (%s)", g->noutputs,
                  ctx->loss == VCC_LOSS_GRAPH ? "the loss itself" : ctx->loss == VCC_LOSS_MSE ? "the prediction"
                                                                                           : "the logits");
        return VCC_ERR_UNSUPPORTED;
    }
    if (g->tensors[data].shape.rank < 1) {
        vcc_error(ctx, "input '%s' is a scalar; the data input needs a batch dimension (N, ...)", g->tensors[data].name);
        return VCC_ERR_UNSUPPORTED;
    }
    g->data_input = data;
    switch (ctx->loss) {
    case VCC_LOSS_MSE: return add_mse(ctx, g, data);
    case VCC_LOSS_GRAPH: return add_graph(ctx, g, data);
    default: return add_ce(ctx, g, data);
    }
}
