/*
 * conv.c — the conv family: Conv, and its backward ops ConvGradData and ConvGradFilter.
 *
 * Kernels: runtime/{elem,proto,cpu,cuda}/conv.* (im2col + GEMM on the CPU, cuDNN on CUDA).
 * Attribute decoding (vcc_conv_params) gives VccConvParams: explicit pads, out sizes.
 * Source: ONNX Operators, "Conv" (opsets 1 and 11, no semantic change through 22): output size
 *   out = floor((in + pad_begin + pad_end - dilation*(kernel-1) - 1) / stride) + 1,
 * auto_pad SAME_UPPER/SAME_LOWER: out = ceil(in / stride), the odd pad at the end (UPPER) or begin (LOWER).
 */
#include "ops.h"

#include <inttypes.h>
#include <stdlib.h>
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

/* ------------------------------------------------------------------ Conv */

static const VccAttrSpec conv_attrs[] = {
    {"auto_pad", 1, VCC_OPSET_NOW, VCC_A_STRING}, {"dilations", 1, VCC_OPSET_NOW, VCC_A_INTS},
    {"group", 1, VCC_OPSET_NOW, VCC_A_INT},       {"kernel_shape", 1, VCC_OPSET_NOW, VCC_A_INTS},
    {"pads", 1, VCC_OPSET_NOW, VCC_A_INTS},       {"strides", 1, VCC_OPSET_NOW, VCC_A_INTS},
    {NULL, 0, 0, 0},
};

static void conv_check_attrs(VccCtx *ctx, const VccGraph *g, const VccNode *n) {
    (void)g;
    const char *ap = vcc_attr_string(n, "auto_pad", "NOTSET");
    if (strcmp(ap, "NOTSET") && strcmp(ap, "SAME_UPPER") && strcmp(ap, "SAME_LOWER") && strcmp(ap, "VALID"))
        vcc_op_attr_problem(ctx, n, "%s attribute '%s'", "auto_pad", "not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
}

/* The workspace output ws of conv-family node n must be the im2col buffer of geometry p (check mode). */
static bool check_ws(VccCtx *ctx, VccGraph *g, const VccNode *n, int ws, const VccConvParams *p) {
    int64_t bytes = vcc_conv_ws_bytes(p);
    VccShape s = {1, {bytes / 4}};
    if (ws < 0 || bytes < 0) {
        vcc_error(ctx, "node '%s' (%s): its workspace output is missing or too large", n->name, vcc_op_name(n->op));
        return false;
    }
    return vcc_put_output(ctx, g, n, true, ws, VCC_F32, &s);
}

/* (X (N, C, D...), W (K, C/group, k...), B (K) | _) -> (Y (N, K, O...), ws) */
static VccStatus conv_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    VccNode *n = &g->nodes[k];
    char s1[128];
    const VccTensor *x = vcc_need_input(ctx, g, n, 0, VCC_F32), *w;
    if (!x || !(w = vcc_need_input(ctx, g, n, 1, VCC_F32))) return VCC_ERR_SHAPE;
    VccConvParams p;
    VccStatus st = vcc_conv_params(ctx, n, &x->shape, &w->shape, &p);
    if (st) return st;
    if (n->nin > 2 && n->in[2] >= 0) {
        const VccTensor *b = vcc_need_input(ctx, g, n, 2, VCC_F32);
        if (!b) return VCC_ERR_SHAPE;
        if (b->shape.rank != 1 || b->shape.dims[0] != p.K) {
            vcc_shape_str(s1, sizeof s1, &b->shape);
            vcc_error(ctx, "node '%s' (Conv): bias has shape %s, expected (%lld)", n->name, s1, (long long)p.K);
            return VCC_ERR_SHAPE;
        }
    }
    VccShape out = {x->shape.rank, {p.N, p.K}};
    for (int i = 0; i < p.nsp; i++) out.dims[2 + i] = p.out[i];
    if (n->nout != (check ? 2 : 1) || n->out[0] < 0) {
        vcc_error(ctx, "node '%s' (Conv): expected one output%s", n->name, check ? " and a workspace" : "");
        return VCC_ERR_SHAPE;
    }
    if (!vcc_put_output(ctx, g, n, check, n->out[0], VCC_F32, &out)) return VCC_ERR_SHAPE;
    if (check) return check_ws(ctx, g, n, n->out[1], &p) ? VCC_OK : VCC_ERR_SHAPE;
    return vcc_conv_add_workspace(ctx, g, k, &x->shape, &w->shape);
}

/* Conv(X, W, B) -> ConvGradData(dY, W) -> (dX, ws)       [only if X needs a gradient]
 *                  ConvGradFilter(X, dY) -> (dW, dB|_, ws) */
static VccStatus conv_grad(VccDiff *d, int k) {
    VccGraph *g = d->g;
    VccNode n = g->nodes[k]; /* copy: the node array grows below */
    int x = n.in[0], dy = vcc_diff_dy(d, k, 0);
    VccShape xs = g->tensors[x].shape, ws = g->tensors[n.in[1]].shape;
    if (d->req[x]) {
        int dx = vcc_diff_new_grad(d, x);
        int in[2] = {dy, n.in[1]};
        int kk = vcc_diff_add_node(d, VCC_OP_CONV_GRAD_DATA, k, "grad_data", in, 2, &dx, 1);
        VccStatus st = vcc_conv_add_workspace(d->ctx, g, kk, &xs, &ws);
        if (st) return st;
        vcc_diff_grow(d);
        vcc_diff_accum(d, x, dx);
    }
    int w = n.in[1], b = n.nin > 2 ? n.in[2] : -1;
    int dw = vcc_diff_new_grad(d, w), db = b >= 0 ? vcc_diff_new_grad(d, b) : -1;
    int in[2] = {x, dy}, out[2] = {dw, db};
    int kk = vcc_diff_add_node(d, VCC_OP_CONV_GRAD_FILTER, k, "grad_filter", in, 2, out, 2);
    VccStatus st = vcc_conv_add_workspace(d->ctx, g, kk, &xs, &ws);
    if (st) return st;
    vcc_diff_grow(d);
    vcc_diff_accum(d, w, dw);
    if (b >= 0) vcc_diff_accum(d, b, db);
    return VCC_OK;
}

/* The descriptor index of the geometry of node n (x, w: the forward conv's input and weight shapes),
 * registered in e->convs. The CUDA target needs symmetric pads (cuDNN). */
static VccStatus conv_desc(VccEmit *e, const VccNode *n, const VccShape *x, const VccShape *w, int *idx) {
    VccConvParams p;
    VccStatus st = vcc_conv_params(e->ctx, n, x, w, &p);
    if (st) return st;
    for (int i = 0; i < p.nsp && e->target == VCC_TARGET_CUDA; i++)
        if (p.pad_begin[i] != p.pad_end[i]) {
            vcc_error(e->ctx, "node '%s' (%s): asymmetric pads (%lld before, %lld after in spatial dim %d) are not "
                      "supported by the CUDA target (cuDNN pads symmetrically); the C target supports them",
                      n->name, vcc_node_op(n), (long long)p.pad_begin[i], (long long)p.pad_end[i], i);
            return VCC_ERR_UNSUPPORTED;
        }
    for (int i = 0; i < e->nconv; i++)
        if (!memcmp(&e->convs[i], &p, sizeof p)) {
            *idx = i;
            return VCC_OK;
        }
    e->convs = vcc_realloc(e->convs, sizeof p * (size_t)(e->nconv + 1));
    e->convs[e->nconv] = p;
    *idx = e->nconv++;
    return VCC_OK;
}

static VccStatus conv_emit(VccEmit *e, int k) {
    const VccGraph *g = e->g;
    const VccNode *n = &g->nodes[k];
    int ci, ws = n->out[1];
    VccStatus st = conv_desc(e, n, &g->tensors[n->in[0]].shape, &g->tensors[n->in[1]].shape, &ci);
    if (st) return st;
    fprintf(e->f, "    conv_forward(rt, &vcc_conv[%d], %s, %s, %s, %s, A + %" PRId64 ", %" PRId64 ");\n", ci,
            vcc_emit_f32(e, n->in[0]), vcc_emit_f32(e, n->in[1]), vcc_emit_f32(e, n->nin > 2 ? n->in[2] : -1),
            vcc_emit_f32(e, n->out[0]), g->tensors[ws].offset, vcc_tensor_bytes(&g->tensors[ws]));
    return VCC_OK;
}

const VccOpDef vcc_def_CONV = {VCC_OPF_WORKSPACE, 1, conv_attrs, conv_check_attrs, NULL, conv_shape, conv_grad,
                               conv_emit};

/* ------------------------------------------------------------------ ConvGradData */

/* (dY, W) -> (dX, ws), the geometry of the forward conv of x = dX */
static VccStatus conv_grad_data_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    const VccTensor *a = vcc_need_input(ctx, g, n, 0, VCC_F32), *b;
    if (!a || !(b = vcc_need_input(ctx, g, n, 1, VCC_F32)) || n->nout != 2 || n->out[0] < 0)
        return vcc_operands_missing(ctx, n);
    VccConvParams p;
    if (vcc_conv_params(ctx, n, &g->tensors[n->out[0]].shape, &b->shape, &p)) return VCC_ERR_SHAPE;
    VccShape s = {2 + p.nsp, {p.N, p.K}};
    for (int i = 0; i < p.nsp; i++) s.dims[2 + i] = p.out[i];
    if (g->tensors[n->out[0]].dtype != VCC_F32 || !vcc_same_shape(&a->shape, &s)) {
        vcc_error(ctx, "node '%s' (ConvGradData): dy does not have the shape of the conv's output", n->name);
        return VCC_ERR_SHAPE;
    }
    return check_ws(ctx, g, n, n->out[1], &p) ? VCC_OK : VCC_ERR_SHAPE;
}

static VccStatus conv_grad_data_emit(VccEmit *e, int k) {
    const VccGraph *g = e->g;
    const VccNode *n = &g->nodes[k];
    int ci, ws = n->out[1];
    VccStatus st = conv_desc(e, n, &g->tensors[n->out[0]].shape, &g->tensors[n->in[1]].shape, &ci);
    if (st) return st;
    fprintf(e->f, "    conv_backward_data(rt, &vcc_conv[%d], %s, %s, %s, A + %" PRId64 ", %" PRId64 ");\n", ci,
            vcc_emit_f32(e, n->in[0]), vcc_emit_f32(e, n->in[1]), vcc_emit_f32(e, n->out[0]), g->tensors[ws].offset,
            vcc_tensor_bytes(&g->tensors[ws]));
    return VCC_OK;
}

const VccOpDef vcc_def_CONV_GRAD_DATA = {VCC_OPF_WORKSPACE, 1, NULL, NULL, NULL, conv_grad_data_shape, NULL,
                                         conv_grad_data_emit};

/* ------------------------------------------------------------------ ConvGradFilter */

/* (X, dY) -> (dW, dB | _, ws) */
static VccStatus conv_grad_filter_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    const VccTensor *a = vcc_need_input(ctx, g, n, 0, VCC_F32), *b;
    if (!a || !(b = vcc_need_input(ctx, g, n, 1, VCC_F32)) || n->nout != 3 || n->out[0] < 0)
        return vcc_operands_missing(ctx, n);
    VccConvParams p;
    if (vcc_conv_params(ctx, n, &a->shape, &g->tensors[n->out[0]].shape, &p)) return VCC_ERR_SHAPE;
    VccShape s = {2 + p.nsp, {p.N, p.K}};
    for (int i = 0; i < p.nsp; i++) s.dims[2 + i] = p.out[i];
    if (g->tensors[n->out[0]].dtype != VCC_F32 || !vcc_same_shape(&b->shape, &s)) {
        vcc_error(ctx, "node '%s' (ConvGradFilter): dy does not have the shape of the conv's output", n->name);
        return VCC_ERR_SHAPE;
    }
    s = (VccShape){1, {p.K}};
    if (!vcc_put_output(ctx, g, n, true, n->out[1], VCC_F32, &s)) return VCC_ERR_SHAPE;
    return check_ws(ctx, g, n, n->out[2], &p) ? VCC_OK : VCC_ERR_SHAPE;
}

static VccStatus conv_grad_filter_emit(VccEmit *e, int k) {
    const VccGraph *g = e->g;
    const VccNode *n = &g->nodes[k];
    int ci, ws = n->out[2];
    VccStatus st = conv_desc(e, n, &g->tensors[n->in[0]].shape, &g->tensors[n->out[0]].shape, &ci);
    if (st) return st;
    fprintf(e->f, "    conv_backward_filter(rt, &vcc_conv[%d], %s, %s, %s, %s, A + %" PRId64 ", %" PRId64 ");\n", ci,
            vcc_emit_f32(e, n->in[0]), vcc_emit_f32(e, n->in[1]), vcc_emit_f32(e, n->out[0]),
            vcc_emit_f32(e, n->out[1]), g->tensors[ws].offset, vcc_tensor_bytes(&g->tensors[ws]));
    return VCC_OK;
}

const VccOpDef vcc_def_CONV_GRAD_FILTER = {VCC_OPF_WORKSPACE, 2, NULL, NULL, NULL, conv_grad_filter_shape, NULL,
                                           conv_grad_filter_emit};
