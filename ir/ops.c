/*
 * ops.c — attribute decoding shared by the passes and the emitters.
 *
 * Requires: a node carrying ONNX Conv attributes. Produces: VccConvParams (explicit pads, out sizes).
 * Source: ONNX Operators, "Conv" (opset 11, unchanged through 22): output size
 *   out = floor((in + pad_begin + pad_end - dilation*(kernel-1) - 1) / stride) + 1,
 * auto_pad SAME_UPPER/SAME_LOWER: out = ceil(in / stride), the odd pad at the end (UPPER) or begin (LOWER).
 */
#include "ir.h"

#include <string.h>

#define VCC_CONV_ATTR_MAX (((int64_t)1 << 31) - 1) /* bound on sizes, strides, dilations, pads: no overflow below */

/* ONNX: pads must not be used together with auto_pad (all-zero pads are tolerated). */
static bool has_nonzero_pads(const VccNode *node) {
    const VccAttr *a = vcc_attr_get(node, "pads");
    for (int i = 0; a && a->type == VCC_A_INTS && i < a->n; i++)
        if (a->ints[i]) return true;
    return false;
}

VccStatus vcc_conv_params(VccCtx *ctx, const VccNode *node, const VccShape *x, const VccShape *w,
                          VccConvParams *p) {
    memset(p, 0, sizeof *p);
    const char *op = node->onnx_op ? node->onnx_op : vcc_op_name(node->op);
    if (x->rank < 3 || x->rank > 5) {
        vcc_error(ctx, "node '%s' (%s): input has rank %d; vcc supports 1-3 spatial dims (rank 3-5)", node->name,
                  op, x->rank);
        return VCC_ERR_UNSUPPORTED;
    }
    if (w->rank != x->rank) {
        vcc_error(ctx, "node '%s' (%s): weight rank %d differs from input rank %d", node->name, op, w->rank,
                  x->rank);
        return VCC_ERR_SHAPE;
    }
    int n = x->rank - 2;
    p->nsp = n;
    p->N = x->dims[0];
    p->C = x->dims[1];
    p->K = w->dims[0];
    p->group = vcc_attr_int(node, "group", 1);
    if (p->group < 1 || p->C % p->group || p->K % p->group || w->dims[1] * p->group != p->C) {
        vcc_error(ctx, "node '%s' (%s): group=%lld does not fit input channels %lld and weight (%lld, %lld, ...)",
                  node->name, op, (long long)p->group, (long long)p->C, (long long)w->dims[0],
                  (long long)w->dims[1]);
        return VCC_ERR_SHAPE;
    }
    int64_t v[6] = {0};
    int cnt;
    for (int i = 0; i < n; i++) {
        p->in[i] = x->dims[2 + i];
        p->kernel[i] = w->dims[2 + i];
        p->stride[i] = p->dilation[i] = 1;
    }
    if ((cnt = vcc_attr_ints(node, "kernel_shape", v, 6)) >= 0) {
        if (cnt != n) goto bad_len_kernel;
        for (int i = 0; i < n; i++)
            if (v[i] != p->kernel[i]) {
                vcc_error(ctx, "node '%s' (%s): kernel_shape[%d]=%lld but the weight has %lld", node->name, op, i,
                          (long long)v[i], (long long)p->kernel[i]);
                return VCC_ERR_SHAPE;
            }
    }
    if ((cnt = vcc_attr_ints(node, "strides", v, 6)) >= 0) {
        if (cnt != n) {
            vcc_error(ctx, "node '%s' (%s): strides has %d values, expected %d", node->name, op, cnt, n);
            return VCC_ERR_SHAPE;
        }
        for (int i = 0; i < n; i++) p->stride[i] = v[i];
    }
    if ((cnt = vcc_attr_ints(node, "dilations", v, 6)) >= 0) {
        if (cnt != n) {
            vcc_error(ctx, "node '%s' (%s): dilations has %d values, expected %d", node->name, op, cnt, n);
            return VCC_ERR_SHAPE;
        }
        for (int i = 0; i < n; i++) p->dilation[i] = v[i];
    }
    for (int i = 0; i < n; i++)
        if (p->stride[i] < 1 || p->dilation[i] < 1 || p->kernel[i] < 1 || p->stride[i] > VCC_CONV_ATTR_MAX ||
            p->dilation[i] > VCC_CONV_ATTR_MAX || p->kernel[i] > VCC_CONV_ATTR_MAX || p->in[i] > VCC_CONV_ATTR_MAX) {
            vcc_error(ctx, "node '%s' (%s): strides, dilations, kernel and input sizes must be from 1 to 2^31-1",
                      node->name, op);
            return VCC_ERR_SHAPE;
        }
    const char *auto_pad = vcc_attr_string(node, "auto_pad", "NOTSET");
    if (strcmp(auto_pad, "NOTSET") == 0) {
        if ((cnt = vcc_attr_ints(node, "pads", v, 6)) >= 0) {
            if (cnt != 2 * n) {
                vcc_error(ctx, "node '%s' (%s): pads has %d values, expected %d", node->name, op, cnt, 2 * n);
                return VCC_ERR_SHAPE;
            }
            for (int i = 0; i < n; i++) {
                p->pad_begin[i] = v[i];
                p->pad_end[i] = v[n + i];
                if (v[i] < 0 || v[n + i] < 0 || v[i] > VCC_CONV_ATTR_MAX || v[n + i] > VCC_CONV_ATTR_MAX) {
                    vcc_error(ctx, "node '%s' (%s): pads must be from 0 to 2^31-1", node->name, op);
                    return VCC_ERR_SHAPE;
                }
            }
        }
    } else if (has_nonzero_pads(node)) {
        vcc_error(ctx, "node '%s' (%s): auto_pad=%s and explicit pads are given together", node->name, op, auto_pad);
        return VCC_ERR_SHAPE;
    } else if (strcmp(auto_pad, "VALID") == 0) {
        /* all pads zero */
    } else if (strcmp(auto_pad, "SAME_UPPER") == 0 || strcmp(auto_pad, "SAME_LOWER") == 0) {
        for (int i = 0; i < n; i++) {
            int64_t out = (p->in[i] + p->stride[i] - 1) / p->stride[i];
            int64_t total = (out - 1) * p->stride[i] + (p->kernel[i] - 1) * p->dilation[i] + 1 - p->in[i];
            if (total < 0) total = 0;
            int64_t small = total / 2, big = total - small;
            p->pad_begin[i] = auto_pad[5] == 'U' ? small : big;
            p->pad_end[i] = auto_pad[5] == 'U' ? big : small;
        }
    } else {
        vcc_error(ctx, "node '%s' (%s): unknown auto_pad '%s'", node->name, op, auto_pad);
        return VCC_ERR_SHAPE;
    }
    for (int i = 0; i < n; i++) {
        int64_t span = p->in[i] + p->pad_begin[i] + p->pad_end[i] - p->dilation[i] * (p->kernel[i] - 1) - 1;
        if (span < 0) {
            vcc_error(ctx, "node '%s' (%s): kernel extent exceeds the padded input in spatial dim %d", node->name,
                      op, i);
            return VCC_ERR_SHAPE;
        }
        p->out[i] = span / p->stride[i] + 1;
    }
    return VCC_OK;

bad_len_kernel:
    vcc_error(ctx, "node '%s' (%s): kernel_shape has %d values, expected %d", node->name, op, cnt, n);
    return VCC_ERR_SHAPE;
}

int64_t vcc_conv_ws_bytes(const VccConvParams *p) {
    int64_t n = p->C / p->group;
    for (int i = 0; i < p->nsp; i++)
        if (!vcc_mul_i64(n, p->kernel[i], &n) || !vcc_mul_i64(n, p->out[i], &n)) return -1;
    return n > VCC_MAX_TENSOR_BYTES / 4 ? -1 : n * 4;
}

VccStatus vcc_conv_add_workspace(VccCtx *ctx, VccGraph *g, int k, const VccShape *x, const VccShape *w) {
    VccConvParams p;
    VccStatus st = vcc_conv_params(ctx, &g->nodes[k], x, w, &p);
    if (st) return st;
    int64_t bytes = vcc_conv_ws_bytes(&p);
    if (bytes < 0) {
        vcc_error(ctx, "node '%s' (%s): its im2col workspace would be larger than vcc's limit of 2^47 bytes",
                  g->nodes[k].name, g->nodes[k].onnx_op ? g->nodes[k].onnx_op : vcc_op_name(g->nodes[k].op));
        return VCC_ERR_SHAPE;
    }
    VccShape s = {1, {bytes / 4}};
    int ws = vcc_tensor_add_unique(g, VCC_F32, &s, VCC_T_WORKSPACE, "%s.ws", g->nodes[k].name);
    VccNode *n = &g->nodes[k];
    n->out = vcc_realloc(n->out, sizeof(int) * (size_t)(n->nout + 1));
    n->out[n->nout++] = ws;
    g->tensors[ws].producer = k;
    return VCC_OK;
}
