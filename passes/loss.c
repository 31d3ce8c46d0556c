/*
 * loss.c — append the training loss.
 *
 * Requires: shapes inferred; one float data input; one graph output, the logits (N, K).
 * Produces: input "labels" (int64 (N), LABEL), node SoftmaxCrossEntropyLoss(logits, labels) ->
 *   (loss f32[] LOSS, probabilities f32[N, K]) with reduction "mean" — PyTorch nn.CrossEntropyLoss()
 *   semantics, ONNX SoftmaxCrossEntropyLoss (opset 13) with reduction="mean" and no weights.
 */
#include "passes.h"

#include <string.h>

VccStatus vcc_add_loss(VccCtx *ctx, VccGraph *g) {
    int data = -1, ndata = 0;
    for (int i = 0; i < g->ninputs; i++) {
        const VccTensor *t = &g->tensors[g->inputs[i]];
        if (t->kind == VCC_T_INPUT && t->dtype == VCC_F32) {
            data = g->inputs[i];
            ndata++;
        }
    }
    if (ndata != 1) {
        vcc_error(ctx, "the model has %d float inputs; vcc trains models with exactly one (the clip batch)", ndata);
        return VCC_ERR_UNSUPPORTED;
    }
    if (g->noutputs != 1) {
        vcc_error(ctx, "the model has %d outputs; vcc appends the loss to exactly one output (the logits)",
                  g->noutputs);
        return VCC_ERR_UNSUPPORTED;
    }
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
    int64_t N = lt->shape.dims[0];
    VccShape sl = {1, {N}};
    int label = vcc_tensor_add_unique(g, VCC_I64, &sl, VCC_T_LABEL, "labels");
    g->inputs = vcc_realloc(g->inputs, sizeof(int) * (size_t)(g->ninputs + 1));
    g->inputs[g->ninputs++] = label;
    VccShape s0 = {0, {0}};
    int loss = vcc_tensor_add_unique(g, VCC_F32, &s0, VCC_T_LOSS, "loss");
    int prob = vcc_tensor_add_unique(g, VCC_F32, &g->tensors[logits].shape, VCC_T_ACT, "loss.prob");
    int in[2] = {logits, label}, out[2] = {loss, prob};
    int k = vcc_node_add(g, VCC_OP_SOFTMAXXENT, "loss", in, 2, out, 2, VCC_PHASE_LOSS);
    vcc_attr_set_string(&g->nodes[k], "reduction", "mean");
    g->data_input = data;
    g->label = label;
    g->loss = loss;
    return VCC_OK;
}
