/*
 * canonical.c — bring ONNX variants to one internal form.
 *
 * Requires: the forward graph from frontend/onnx.c.
 * Checks: nodes in topological order; every attribute known to vcc for its op, with its ONNX type.
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
    int sm = vcc_tensor_add_unique(g, VCC_DT_UNDEF, NULL, VCC_T_ACT, "%s.saved_mean", n->name);
    int si = vcc_tensor_add_unique(g, VCC_DT_UNDEF, NULL, VCC_T_ACT, "%s.saved_invstd", g->nodes[k].name);
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

/* The attributes vcc knows for each forward op and their ONNX types (ONNX Operators, opset 17). An
 * attribute of another type, or one vcc does not know (its meaning would be ignored), is an error. */
static const struct {
    VccOp op;
    const char *name;
    VccAttrType type;
} known_attrs[] = {
    {VCC_OP_CONV, "auto_pad", VCC_A_STRING},        {VCC_OP_CONV, "dilations", VCC_A_INTS},
    {VCC_OP_CONV, "group", VCC_A_INT},              {VCC_OP_CONV, "kernel_shape", VCC_A_INTS},
    {VCC_OP_CONV, "pads", VCC_A_INTS},              {VCC_OP_CONV, "strides", VCC_A_INTS},
    {VCC_OP_BATCHNORM, "epsilon", VCC_A_FLOAT},     {VCC_OP_BATCHNORM, "momentum", VCC_A_FLOAT},
    {VCC_OP_BATCHNORM, "training_mode", VCC_A_INT}, {VCC_OP_FLATTEN, "axis", VCC_A_INT},
    {VCC_OP_RESHAPE, "allowzero", VCC_A_INT},       {VCC_OP_GEMM, "alpha", VCC_A_FLOAT},
    {VCC_OP_GEMM, "beta", VCC_A_FLOAT},             {VCC_OP_GEMM, "transA", VCC_A_INT},
    {VCC_OP_GEMM, "transB", VCC_A_INT},
    {VCC_OP_GEMM, "broadcast", VCC_A_INT}, /* Gemm before opset 7; C is always broadcast from opset 7 on */
};

static const char *attr_type_name(VccAttrType t) {
    static const char *names[] = {"INT", "FLOAT", "INTS", "FLOATS", "STRING"};
    return names[t];
}

static VccStatus check_attrs(VccCtx *ctx, const VccNode *n) {
    VccStatus st = VCC_OK;
    for (int a = 0; a < n->nattrs; a++) {
        const VccAttr *at = &n->attrs[a];
        int found = -1;
        for (size_t i = 0; i < sizeof known_attrs / sizeof known_attrs[0]; i++)
            if (known_attrs[i].op == n->op && !strcmp(known_attrs[i].name, at->name)) found = (int)i;
        if (found < 0) {
            vcc_error(ctx, "node '%s' (%s): attribute '%s' is not supported", n->name, vcc_op_name(n->op), at->name);
            st = VCC_ERR_UNSUPPORTED;
        } else if (known_attrs[found].type != at->type) {
            vcc_error(ctx, "node '%s' (%s): attribute '%s' has type %s, expected %s", n->name, vcc_op_name(n->op),
                      at->name, attr_type_name(at->type), attr_type_name(known_attrs[found].type));
            st = VCC_ERR_SHAPE;
        }
    }
    return st;
}

/* ONNX requires nodes in topological order; a node reading a value that a later node produces means a
 * cycle or an unsorted file. */
static VccStatus check_order(VccCtx *ctx, const VccGraph *g) {
    for (int k = 0; k < g->nnodes; k++) {
        const VccNode *n = &g->nodes[k];
        for (int i = 0; i < n->nin; i++)
            if (n->in[i] >= 0 && g->tensors[n->in[i]].producer >= k) {
                vcc_error(ctx, "node '%s' (%s) reads '%s', which node '%s' produces later: the graph has a cycle or "
                          "its nodes are not topologically sorted as ONNX requires",
                          n->name, n->onnx_op ? n->onnx_op : vcc_op_name(n->op), g->tensors[n->in[i]].name,
                          g->nodes[g->tensors[n->in[i]].producer].name);
                return VCC_ERR_PARSE;
            }
    }
    return VCC_OK;
}

VccStatus vcc_canonicalize(VccCtx *ctx, VccGraph *g) {
    VccStatus st = check_order(ctx, g);
    if (st) return st;
    for (int k = 0; k < g->nnodes; k++)
        if (check_attrs(ctx, &g->nodes[k]) != VCC_OK) st = VCC_ERR_UNSUPPORTED;
    if (st) return st;
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
