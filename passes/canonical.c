/*
 * canonical.c — bring ONNX variants to one internal form.
 *
 * Requires: the forward graph from frontend/onnx.c.
 * Produces:
 *   - BatchNormalization (training_mode=1, ONNX opset 14/15 form): inputs (X, scale, B, input_mean,
 *     input_var), outputs (Y, saved_mean, saved_invstd, running_mean, running_var) (absent running
 *     outputs are -1). Training: input_mean/input_var are BUFFER tensors updated in place each step and
 *     the running outputs are views of them. Forward-only (ctx->forward_only): the statistics may be
 *     graph inputs and the running outputs are tensors of their own (the kernel copies, then updates).
 *   - Flatten, Reshape, Identity outputs are views (alias_of) of their data input; Reshape's shape input
 *     is a CONST.
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

static bool is_initializer(const VccGraph *g, int t) {
    return t >= 0 && g->tensors[t].producer < 0 && g->tensors[t].data != NULL;
}

static VccStatus canonical_bn(VccCtx *ctx, VccGraph *g, int k) {
    VccNode *n = &g->nodes[k];
    if (vcc_attr_int(n, "training_mode", 0) != 1) {
        vcc_error(ctx,
                  "node '%s' (BatchNormalization): training_mode=0 (inference form) is not supported for training; "
                  "export with torch.onnx.TrainingMode.TRAINING",
                  n->name);
        return VCC_ERR_UNSUPPORTED;
    }
    if (n->nin != 5 || n->nout < 1 || n->out[0] < 0) {
        vcc_error(ctx, "node '%s' (BatchNormalization): expected 5 inputs and an output Y", n->name);
        return VCC_ERR_SHAPE;
    }
    for (int i = 1; i < 5 && !ctx->forward_only; i++)
        if (!is_initializer(g, n->in[i])) {
            vcc_error(ctx, "node '%s' (BatchNormalization): input %d must be an initializer", n->name, i);
            return VCC_ERR_UNSUPPORTED;
        }
    int running[2] = {n->nout > 1 ? n->out[1] : -1, n->nout > 2 ? n->out[2] : -1};
    for (int i = 0; i < 2; i++) {
        int t = running[i];
        if (ctx->forward_only) continue;
        g->tensors[n->in[3 + i]].kind = VCC_T_BUFFER;
        if (t < 0) continue;
        VccTensor *o = &g->tensors[t];
        o->alias_of = n->in[3 + i];
        o->dtype = VCC_F32;
        o->shape = g->tensors[n->in[3 + i]].shape;
        o->kind = VCC_T_BUFFER;
    }
    char name[512];
    snprintf(name, sizeof name, "%s.saved_mean", n->name);
    int sm = vcc_tensor_add(g, name, VCC_DT_UNDEF, NULL, VCC_T_ACT);
    snprintf(name, sizeof name, "%s.saved_invstd", g->nodes[k].name);
    int si = vcc_tensor_add(g, name, VCC_DT_UNDEF, NULL, VCC_T_ACT);
    n = &g->nodes[k];
    n->out = vcc_realloc(n->out, 5 * sizeof(int));
    n->nout = 5;
    n->out[1] = sm;
    n->out[2] = si;
    n->out[3] = running[0];
    n->out[4] = running[1];
    g->tensors[sm].producer = g->tensors[si].producer = k;
    return VCC_OK;
}

VccStatus vcc_canonicalize(VccCtx *ctx, VccGraph *g) {
    VccStatus st = VCC_OK;
    for (int k = 0; k < g->nnodes; k++) {
        VccNode *n = &g->nodes[k];
        switch (n->op) {
        case VCC_OP_BATCHNORM:
            if (canonical_bn(ctx, g, k) != VCC_OK) st = VCC_ERR_UNSUPPORTED;
            break;
        case VCC_OP_RESHAPE:
            if (n->nin == 2 && n->in[1] >= 0) {
                if (!is_initializer(g, n->in[1]) || g->tensors[n->in[1]].dtype != VCC_I64) {
                    vcc_error(ctx, "node '%s' (Reshape): the shape input must be a constant int64 tensor", n->name);
                    st = VCC_ERR_UNSUPPORTED;
                    break;
                }
                g->tensors[n->in[1]].kind = VCC_T_CONST;
            }
            /* fall through */
        case VCC_OP_FLATTEN:
        case VCC_OP_IDENTITY:
            if (n->nin < 1 || n->in[0] < 0 || n->nout != 1 || n->out[0] < 0) {
                vcc_error(ctx, "node '%s' (%s): expected one data input and one output", n->name, vcc_op_name(n->op));
                st = VCC_ERR_SHAPE;
                break;
            }
            g->tensors[n->out[0]].alias_of = n->in[0];
            break;
        default:
            break;
        }
    }
    return st;
}
