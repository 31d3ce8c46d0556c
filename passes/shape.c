/*
 * shape.c — static shape and dtype inference for forward nodes.
 *
 * Requires: canonical form; every graph input's shape bound (frontend resolves --shape).
 * Produces: dtype and shape for every forward node output; views get their own shape; each Conv gains a
 *   WORKSPACE output (vcc_conv_add_workspace).
 * Rules follow the ONNX operator spec (Conv, BatchNormalization, Relu, Add, GlobalAveragePool, Flatten,
 * Reshape, Identity, Gemm). Add requires equal shapes (no broadcasting yet).
 */
#include "passes.h"

#include <string.h>

static bool same_shape(const VccShape *a, const VccShape *b) {
    if (a->rank != b->rank) return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return false;
    return true;
}

static void shape_str(char *buf, size_t len, const VccShape *s) {
    size_t o = (size_t)snprintf(buf, len, "(");
    for (int i = 0; i < s->rank && o < len; i++) o += (size_t)snprintf(buf + o, len - o, i ? ", %lld" : "%lld", (long long)s->dims[i]);
    if (o < len) snprintf(buf + o, len - o, ")");
}

static void set_out(VccGraph *g, int t, VccDType dt, const VccShape *s) {
    if (t < 0) return;
    g->tensors[t].dtype = dt;
    g->tensors[t].shape = *s;
}

/* The tensor at input i, or NULL with an error when absent or of the wrong dtype. */
static const VccTensor *need_input(VccCtx *ctx, const VccGraph *g, const VccNode *n, int i, VccDType dt) {
    if (i >= n->nin || n->in[i] < 0) {
        vcc_error(ctx, "node '%s' (%s): missing input %d", n->name, n->onnx_op ? n->onnx_op : vcc_op_name(n->op), i);
        return NULL;
    }
    const VccTensor *t = &g->tensors[n->in[i]];
    if (t->dtype != dt) {
        vcc_error(ctx, "node '%s' (%s): input %d '%s' has dtype %s, expected %s", n->name, vcc_op_name(n->op), i,
                  t->name, vcc_dtype_name(t->dtype), vcc_dtype_name(dt));
        return NULL;
    }
    return t;
}

static VccStatus infer_node(VccCtx *ctx, VccGraph *g, int k) {
    VccNode *n = &g->nodes[k];
    const char *op = vcc_op_name(n->op);
    char s1[128], s2[128];
    VccShape out = {0};
    const VccTensor *x = need_input(ctx, g, n, 0, VCC_F32);
    if (!x) return VCC_ERR_SHAPE;
    switch (n->op) {
    case VCC_OP_CONV: {
        const VccTensor *w = need_input(ctx, g, n, 1, VCC_F32);
        if (!w) return VCC_ERR_SHAPE;
        VccConvParams p;
        VccStatus st = vcc_conv_params(ctx, n, &x->shape, &w->shape, &p);
        if (st) return st;
        if (n->nin > 2 && n->in[2] >= 0) {
            const VccTensor *b = need_input(ctx, g, n, 2, VCC_F32);
            if (!b) return VCC_ERR_SHAPE;
            if (b->shape.rank != 1 || b->shape.dims[0] != p.K) {
                shape_str(s1, sizeof s1, &b->shape);
                vcc_error(ctx, "node '%s' (Conv): bias has shape %s, expected (%lld)", n->name, s1, (long long)p.K);
                return VCC_ERR_SHAPE;
            }
        }
        out.rank = x->shape.rank;
        out.dims[0] = p.N;
        out.dims[1] = p.K;
        for (int i = 0; i < p.nsp; i++) out.dims[2 + i] = p.out[i];
        set_out(g, n->out[0], VCC_F32, &out);
        if (n->nout != 1) {
            vcc_error(ctx, "node '%s' (Conv): expected one output", n->name);
            return VCC_ERR_SHAPE;
        }
        return vcc_conv_add_workspace(ctx, g, k, &x->shape, &w->shape);
    }
    case VCC_OP_BATCHNORM: {
        if (x->shape.rank < 2) {
            vcc_error(ctx, "node '%s' (BatchNormalization): input rank %d < 2", n->name, x->shape.rank);
            return VCC_ERR_SHAPE;
        }
        for (int i = 1; i < 5; i++) {
            const VccTensor *p = need_input(ctx, g, n, i, VCC_F32);
            if (!p) return VCC_ERR_SHAPE;
            if (p->shape.rank != 1 || p->shape.dims[0] != x->shape.dims[1]) {
                shape_str(s1, sizeof s1, &p->shape);
                vcc_error(ctx, "node '%s' (BatchNormalization): input %d '%s' has shape %s, expected (%lld)", n->name,
                          i, p->name, s1, (long long)x->shape.dims[1]);
                return VCC_ERR_SHAPE;
            }
        }
        set_out(g, n->out[0], VCC_F32, &x->shape);
        VccShape c = {1, {x->shape.dims[1]}};
        for (int i = 1; i < n->nout; i++) set_out(g, n->out[i], VCC_F32, &c);
        return VCC_OK;
    }
    case VCC_OP_RELU:
    case VCC_OP_IDENTITY:
        set_out(g, n->out[0], VCC_F32, &x->shape);
        return VCC_OK;
    case VCC_OP_ADD: {
        const VccTensor *b = need_input(ctx, g, n, 1, VCC_F32);
        if (!b) return VCC_ERR_SHAPE;
        if (!same_shape(&x->shape, &b->shape)) {
            shape_str(s1, sizeof s1, &x->shape);
            shape_str(s2, sizeof s2, &b->shape);
            vcc_error(ctx, "node '%s' (Add): broadcasting %s with %s is not supported yet (shapes must be equal)",
                      n->name, s1, s2);
            return VCC_ERR_UNSUPPORTED;
        }
        set_out(g, n->out[0], VCC_F32, &x->shape);
        return VCC_OK;
    }
    case VCC_OP_GLOBALAVGPOOL:
        if (x->shape.rank < 3) {
            vcc_error(ctx, "node '%s' (GlobalAveragePool): input rank %d < 3", n->name, x->shape.rank);
            return VCC_ERR_SHAPE;
        }
        out = x->shape;
        for (int i = 2; i < out.rank; i++) out.dims[i] = 1;
        set_out(g, n->out[0], VCC_F32, &out);
        return VCC_OK;
    case VCC_OP_FLATTEN: {
        int64_t axis = vcc_attr_int(n, "axis", 1);
        if (axis < 0) axis += x->shape.rank;
        if (axis < 0 || axis > x->shape.rank) {
            vcc_error(ctx, "node '%s' (Flatten): axis out of range for rank %d", n->name, x->shape.rank);
            return VCC_ERR_SHAPE;
        }
        out.rank = 2;
        out.dims[0] = out.dims[1] = 1;
        for (int i = 0; i < x->shape.rank; i++) out.dims[i < axis ? 0 : 1] *= x->shape.dims[i];
        set_out(g, n->out[0], VCC_F32, &out);
        return VCC_OK;
    }
    case VCC_OP_RESHAPE: {
        const VccTensor *sh = need_input(ctx, g, n, 1, VCC_I64);
        if (!sh) return VCC_ERR_SHAPE;
        int64_t cnt = vcc_shape_numel(&sh->shape);
        if (sh->shape.rank != 1 || cnt > VCC_MAX_RANK || !sh->data) {
            vcc_error(ctx, "node '%s' (Reshape): shape must be a constant 1-D int64 tensor of at most %d values",
                      n->name, VCC_MAX_RANK);
            return VCC_ERR_SHAPE;
        }
        const int64_t *v = sh->data;
        int64_t known = 1, total = vcc_shape_numel(&x->shape);
        int infer = -1;
        out.rank = (int)cnt;
        for (int i = 0; i < cnt; i++) {
            int64_t d = v[i];
            if (d == 0 && vcc_attr_int(n, "allowzero", 0) == 0) d = i < x->shape.rank ? x->shape.dims[i] : -2;
            if (d == -1 && infer < 0) infer = i;
            else if (d < 0) {
                vcc_error(ctx, "node '%s' (Reshape): invalid shape value %lld at %d", n->name, (long long)v[i], i);
                return VCC_ERR_SHAPE;
            } else if (!vcc_mul_i64(known, d, &known)) {
                known = -1; /* overflows: cannot equal the input's element count */
            }
            out.dims[i] = d;
        }
        if (infer >= 0) out.dims[infer] = known > 0 ? total / known : 0;
        if (known < 0 || vcc_shape_numel(&out) != total) {
            shape_str(s1, sizeof s1, &x->shape);
            vcc_error(ctx, "node '%s' (Reshape): cannot reshape %s to the requested shape", n->name, s1);
            return VCC_ERR_SHAPE;
        }
        set_out(g, n->out[0], VCC_F32, &out);
        return VCC_OK;
    }
    case VCC_OP_GEMM: {
        const VccTensor *b = need_input(ctx, g, n, 1, VCC_F32);
        if (!b) return VCC_ERR_SHAPE;
        if (x->shape.rank != 2 || b->shape.rank != 2) {
            vcc_error(ctx, "node '%s' (Gemm): A and B must be 2-D", n->name);
            return VCC_ERR_SHAPE;
        }
        int ta = vcc_attr_int(n, "transA", 0) != 0, tb = vcc_attr_int(n, "transB", 0) != 0;
        int64_t M = x->shape.dims[ta], K = x->shape.dims[!ta], K2 = b->shape.dims[tb], N = b->shape.dims[!tb];
        if (K != K2) {
            shape_str(s1, sizeof s1, &x->shape);
            shape_str(s2, sizeof s2, &b->shape);
            vcc_error(ctx, "node '%s' (Gemm): inner dims differ: A %s (transA=%d), B %s (transB=%d)", n->name, s1, ta,
                      s2, tb);
            return VCC_ERR_SHAPE;
        }
        if (n->nin > 2 && n->in[2] >= 0) {
            const VccTensor *c = need_input(ctx, g, n, 2, VCC_F32);
            if (!c) return VCC_ERR_SHAPE;
            int64_t cr = c->shape.rank == 2 ? c->shape.dims[0] : 1;
            int64_t cc = c->shape.rank >= 1 ? c->shape.dims[c->shape.rank - 1] : 1;
            if (c->shape.rank > 2 || (cr != 1 && cr != M) || (cc != 1 && cc != N)) {
                shape_str(s1, sizeof s1, &c->shape);
                vcc_error(ctx, "node '%s' (Gemm): C of shape %s does not broadcast to (%lld, %lld)", n->name, s1,
                          (long long)M, (long long)N);
                return VCC_ERR_SHAPE;
            }
        }
        out.rank = 2;
        out.dims[0] = M;
        out.dims[1] = N;
        set_out(g, n->out[0], VCC_F32, &out);
        return VCC_OK;
    }
    default:
        vcc_error(ctx, "node '%s' (%s): no shape rule", n->name, op);
        return VCC_ERR_UNSUPPORTED;
    }
}

VccStatus vcc_infer_shapes(VccCtx *ctx, VccGraph *g) {
    int64_t bytes;
    /* graph inputs: every dim at least 1; all sizes within VCC_MAX_TENSOR_BYTES, so no later size overflows */
    for (int i = 0; i < g->ninputs; i++) {
        const VccTensor *t = &g->tensors[g->inputs[i]];
        for (int d = 0; d < t->shape.rank; d++)
            if (t->shape.dims[d] < 1) {
                vcc_error(ctx, "input '%s': dim %d is %lld; vcc needs every input dim to be at least 1", t->name, d,
                          (long long)t->shape.dims[d]);
                return VCC_ERR_SHAPE;
            }
    }
    for (int i = 0; i < g->ntensors; i++) {
        const VccTensor *t = &g->tensors[i];
        if (t->producer < 0 && t->alias_of < 0 && t->dtype != VCC_DT_UNDEF &&
            !vcc_shape_checked_bytes(&t->shape, t->dtype, &bytes)) {
            vcc_error(ctx, "tensor '%s' is larger than vcc's limit of 2^47 bytes", t->name);
            return VCC_ERR_SHAPE;
        }
    }
    for (int k = 0; k < g->nnodes; k++) {
        if (g->nodes[k].phase != VCC_PHASE_FORWARD) continue;
        VccStatus st = infer_node(ctx, g, k);
        if (st) return st;
        const VccNode *n = &g->nodes[k];
        for (int i = 0; i < n->nout; i++) {
            const VccTensor *t = n->out[i] >= 0 ? &g->tensors[n->out[i]] : NULL;
            if (t && t->dtype != VCC_DT_UNDEF && !vcc_shape_checked_bytes(&t->shape, t->dtype, &bytes)) {
                vcc_error(ctx, "node '%s' (%s): output '%s' would be larger than vcc's limit of 2^47 bytes", n->name,
                          vcc_op_name(n->op), t->name);
                return VCC_ERR_SHAPE;
            }
        }
    }
    /* views created by canonical (BN running outputs) already carry shapes; check all outputs known */
    for (int i = 0; i < g->ntensors; i++) {
        VccTensor *t = &g->tensors[i];
        if (t->dtype == VCC_DT_UNDEF && (t->producer >= 0 || t->alias_of >= 0)) {
            const VccNode *p = t->producer >= 0 ? &g->nodes[t->producer] : NULL;
            if (p)
                vcc_error(ctx, "node '%s' (%s): the shape of its output '%s' could not be inferred", p->name,
                          p->onnx_op ? p->onnx_op : vcc_op_name(p->op), t->name);
            else
                vcc_error(ctx, "tensor '%s': the shape could not be inferred", t->name);
            return VCC_ERR_SHAPE;
        }
    }
    return VCC_OK;
}
