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

/* Give output t its rule's dtype and shape (check false), or compare them with what it has (check true:
 * a graph read back from a .vir dump, whose types a hand edit may have broken). False, with an error
 * naming the node, on a mismatch. An absent output (-1) is fine. */
static bool put(VccCtx *ctx, VccGraph *g, const VccNode *n, bool check, int t, VccDType dt, const VccShape *s) {
    if (t < 0) return true;
    VccTensor *x = &g->tensors[t];
    if (!check) {
        x->dtype = dt;
        x->shape = *s;
        return true;
    }
    if (x->dtype == dt && same_shape(&x->shape, s)) return true;
    char have[160], want[160];
    VccTensor w = *x;
    w.dtype = dt;
    w.shape = *s;
    vcc_format_type(have, sizeof have, x);
    vcc_format_type(want, sizeof want, &w);
    vcc_error(ctx, "node '%s' (%s): output '%s' is %s, but its inputs and attributes give %s", n->name,
              vcc_op_name(n->op), x->name, have, want);
    return false;
}

/* The workspace output ws of conv-family node n must be the im2col buffer of geometry p (check mode). */
static bool check_ws(VccCtx *ctx, VccGraph *g, const VccNode *n, int ws, const VccConvParams *p) {
    int64_t bytes = vcc_conv_ws_bytes(p);
    VccShape s = {1, {bytes / 4}};
    if (ws < 0 || bytes < 0) {
        vcc_error(ctx, "node '%s' (%s): its workspace output is missing or too large", n->name, vcc_op_name(n->op));
        return false;
    }
    return put(ctx, g, n, true, ws, VCC_F32, &s);
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

/* The shape rule of forward node k: sets its outputs' dtypes and shapes (check false), or checks them
 * (check true); a Conv gains its workspace output, or has it checked. */
static VccStatus infer_node(VccCtx *ctx, VccGraph *g, int k, bool check) {
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
        if (n->nout != (check ? 2 : 1) || n->out[0] < 0) {
            vcc_error(ctx, "node '%s' (Conv): expected one output%s", n->name, check ? " and a workspace" : "");
            return VCC_ERR_SHAPE;
        }
        if (!put(ctx, g, n, check, n->out[0], VCC_F32, &out)) return VCC_ERR_SHAPE;
        if (check) return check_ws(ctx, g, n, n->out[1], &p) ? VCC_OK : VCC_ERR_SHAPE;
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
        if (n->nin > 5 && n->in[5] >= 0) { /* the batch counter: an int64 scalar */
            const VccTensor *cnt = need_input(ctx, g, n, 5, VCC_I64);
            if (!cnt || cnt->shape.rank != 0) {
                if (cnt) vcc_error(ctx, "node '%s' (BatchNormalization): the batch counter must be a scalar", n->name);
                return VCC_ERR_SHAPE;
            }
        }
        if (!put(ctx, g, n, check, n->out[0], VCC_F32, &x->shape)) return VCC_ERR_SHAPE;
        VccShape c = {1, {x->shape.dims[1]}};
        for (int i = 1; i < n->nout; i++)
            if (!put(ctx, g, n, check, n->out[i], VCC_F32, &c)) return VCC_ERR_SHAPE;
        return VCC_OK;
    }
    case VCC_OP_RELU:
    case VCC_OP_IDENTITY:
        return put(ctx, g, n, check, n->out[0], VCC_F32, &x->shape) ? VCC_OK : VCC_ERR_SHAPE;
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
        return put(ctx, g, n, check, n->out[0], VCC_F32, &x->shape) ? VCC_OK : VCC_ERR_SHAPE;
    }
    case VCC_OP_GLOBALAVGPOOL:
        if (x->shape.rank < 3) {
            vcc_error(ctx, "node '%s' (GlobalAveragePool): input rank %d < 3", n->name, x->shape.rank);
            return VCC_ERR_SHAPE;
        }
        out = x->shape;
        for (int i = 2; i < out.rank; i++) out.dims[i] = 1;
        return put(ctx, g, n, check, n->out[0], VCC_F32, &out) ? VCC_OK : VCC_ERR_SHAPE;
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
        return put(ctx, g, n, check, n->out[0], VCC_F32, &out) ? VCC_OK : VCC_ERR_SHAPE;
    }
    case VCC_OP_RESHAPE: {
        const VccTensor *sh = need_input(ctx, g, n, 1, VCC_I64);
        if (!sh) return VCC_ERR_SHAPE;
        int64_t cnt = vcc_shape_numel(&sh->shape);
        if (check && !sh->data) { /* a .vir dump holds no values: the element count must be kept */
            const VccTensor *y = n->out[0] >= 0 ? &g->tensors[n->out[0]] : NULL;
            if (y && y->dtype == VCC_F32 && y->shape.rank == cnt && vcc_shape_numel(&y->shape) == vcc_shape_numel(&x->shape))
                return VCC_OK;
            vcc_error(ctx, "node '%s' (Reshape): its output does not hold its input's %lld elements in %lld dims",
                      n->name, (long long)vcc_shape_numel(&x->shape), (long long)cnt);
            return VCC_ERR_SHAPE;
        }
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
        return put(ctx, g, n, check, n->out[0], VCC_F32, &out) ? VCC_OK : VCC_ERR_SHAPE;
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
        return put(ctx, g, n, check, n->out[0], VCC_F32, &out) ? VCC_OK : VCC_ERR_SHAPE;
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
        VccStatus st = infer_node(ctx, g, k, false);
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
    /* the graph outputs as the model declares them (element type, fixed dims) */
    for (int i = 0; i < g->noutputs && g->output_decl; i++) {
        const VccTensor *t = &g->tensors[g->outputs[i]];
        const VccShape *d = &g->output_decl[i];
        int want = g->output_elem_type[i], have = t->dtype == VCC_F32 ? 1 : t->dtype == VCC_I64 ? 7 : 9;
        bool ok = (want == 0 || want == have) && (d->rank < 0 || d->rank == t->shape.rank);
        for (int k = 0; ok && d->rank >= 0 && k < d->rank; k++) ok = d->dims[k] < 0 || d->dims[k] == t->shape.dims[k];
        if (!ok) {
            char ty[160], dims[128];
            vcc_format_type(ty, sizeof ty, t);
            if (d->rank >= 0) shape_str(dims, sizeof dims, d);
            vcc_error(ctx, "graph output '%s' is declared %s %s, but the graph computes %s", t->name,
                      want == 1 ? "FLOAT" : want == 7 ? "INT64" : want == 9 ? "BOOL" : want ? "of another element type"
                                                                                         : "(any type)",
                      d->rank >= 0 ? dims : "(any shape)", ty);
            return VCC_ERR_SHAPE;
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

/* ------------------------------------------------------------------ type check of a whole graph */

/* Input i of n, which must be there with dtype dt (NULL, reported, otherwise). */
static const VccShape *in_shape(VccCtx *ctx, const VccGraph *g, const VccNode *n, int i, VccDType dt) {
    const VccTensor *t = need_input(ctx, g, n, i, dt);
    return t ? &t->shape : NULL;
}

/* The rules of the ops vcc makes itself (backward, loss, update): each output's dtype and shape from
 * the inputs and attributes, compared with what the graph holds. */
static VccStatus check_internal(VccCtx *ctx, VccGraph *g, const VccNode *n) {
    const VccShape *a, *b, *c;
    VccShape s = {0};
    VccConvParams p;
    switch (n->op) {
    case VCC_OP_CONV_GRAD_DATA: /* (dy, w) -> (dx, ws), the geometry of the forward conv of x = dx */
        if (!(a = in_shape(ctx, g, n, 0, VCC_F32)) || !(b = in_shape(ctx, g, n, 1, VCC_F32)) || n->nout != 2 ||
            n->out[0] < 0)
            break;
        if (vcc_conv_params(ctx, n, &g->tensors[n->out[0]].shape, b, &p)) return VCC_ERR_SHAPE;
        s.rank = 2 + p.nsp, s.dims[0] = p.N, s.dims[1] = p.K;
        for (int i = 0; i < p.nsp; i++) s.dims[2 + i] = p.out[i];
        if (g->tensors[n->out[0]].dtype != VCC_F32 || !same_shape(a, &s)) {
            vcc_error(ctx, "node '%s' (ConvGradData): dy does not have the shape of the conv's output", n->name);
            return VCC_ERR_SHAPE;
        }
        return check_ws(ctx, g, n, n->out[1], &p) ? VCC_OK : VCC_ERR_SHAPE;
    case VCC_OP_CONV_GRAD_FILTER: /* (x, dy) -> (dw, db | _, ws) */
        if (!(a = in_shape(ctx, g, n, 0, VCC_F32)) || !(b = in_shape(ctx, g, n, 1, VCC_F32)) || n->nout != 3 ||
            n->out[0] < 0)
            break;
        if (vcc_conv_params(ctx, n, a, &g->tensors[n->out[0]].shape, &p)) return VCC_ERR_SHAPE;
        s.rank = 2 + p.nsp, s.dims[0] = p.N, s.dims[1] = p.K;
        for (int i = 0; i < p.nsp; i++) s.dims[2 + i] = p.out[i];
        if (g->tensors[n->out[0]].dtype != VCC_F32 || !same_shape(b, &s)) {
            vcc_error(ctx, "node '%s' (ConvGradFilter): dy does not have the shape of the conv's output", n->name);
            return VCC_ERR_SHAPE;
        }
        s = (VccShape){1, {p.K}};
        if (!put(ctx, g, n, true, n->out[1], VCC_F32, &s)) return VCC_ERR_SHAPE;
        return check_ws(ctx, g, n, n->out[2], &p) ? VCC_OK : VCC_ERR_SHAPE;
    case VCC_OP_BATCHNORM_GRAD: /* (x, dy, scale, saved_mean, saved_invstd) -> (dx, dscale, dbias) */
        if (!(a = in_shape(ctx, g, n, 0, VCC_F32)) || !(b = in_shape(ctx, g, n, 1, VCC_F32)) || a->rank < 2 ||
            n->nout != 3)
            break;
        s = (VccShape){1, {a->dims[1]}};
        for (int i = 2; i < 5; i++)
            if (!(c = in_shape(ctx, g, n, i, VCC_F32)) || !same_shape(c, &s)) goto bad_inputs;
        if (!same_shape(a, b) || !put(ctx, g, n, true, n->out[0], VCC_F32, a) ||
            !put(ctx, g, n, true, n->out[1], VCC_F32, &s) || !put(ctx, g, n, true, n->out[2], VCC_F32, &s))
            goto bad_inputs;
        return VCC_OK;
    case VCC_OP_RELU_GRAD:   /* (y, dy) -> dx */
    case VCC_OP_GRAD_ACCUM:  /* (a, b) -> a + b */
        if (!(a = in_shape(ctx, g, n, 0, VCC_F32)) || !(b = in_shape(ctx, g, n, 1, VCC_F32)) || n->nout != 1 ||
            !same_shape(a, b))
            goto bad_inputs;
        return put(ctx, g, n, true, n->out[0], VCC_F32, a) ? VCC_OK : VCC_ERR_SHAPE;
    case VCC_OP_GLOBALAVGPOOL_GRAD: /* dy (N, C, 1, ...) -> dx (N, C, S...) */
        if (!(a = in_shape(ctx, g, n, 0, VCC_F32)) || n->nout != 1 || n->out[0] < 0) break;
        s = g->tensors[n->out[0]].shape;
        for (int i = 2; i < s.rank; i++) s.dims[i] = 1;
        if (g->tensors[n->out[0]].dtype != VCC_F32 || s.rank < 3 || !same_shape(a, &s)) goto bad_inputs;
        return VCC_OK;
    case VCC_OP_RESHAPE: /* the gradient of a view: dy -> dx, the same elements */
        if (!(a = in_shape(ctx, g, n, 0, VCC_F32)) || n->nout != 1 || n->out[0] < 0) break;
        if (g->tensors[n->out[0]].dtype != VCC_F32 || vcc_shape_numel(a) != vcc_shape_numel(&g->tensors[n->out[0]].shape))
            goto bad_inputs;
        return VCC_OK;
    case VCC_OP_GEMM_GRAD: { /* (A, B, dY) -> (dA, dB, dC) */
        if (!(a = in_shape(ctx, g, n, 0, VCC_F32)) || !(b = in_shape(ctx, g, n, 1, VCC_F32)) ||
            !(c = in_shape(ctx, g, n, 2, VCC_F32)) || a->rank != 2 || b->rank != 2 || n->nout != 3)
            break;
        int ta = vcc_attr_int(n, "transA", 0) != 0, tb = vcc_attr_int(n, "transB", 0) != 0;
        s = (VccShape){2, {a->dims[ta], b->dims[!tb]}};
        if (a->dims[!ta] != b->dims[tb] || !same_shape(c, &s)) goto bad_inputs;
        int64_t cs[2];
        int r = vcc_attr_ints(n, "c_shape", cs, 2);
        VccShape sc = {r < 0 ? 0 : r, {r > 0 ? cs[0] : 0, r > 1 ? cs[1] : 0}};
        if (r > 2 || (r >= 0 && (sc.dims[0] < 1 || (r == 2 && sc.dims[1] < 1)))) goto bad_inputs;
        if (!put(ctx, g, n, true, n->out[0], VCC_F32, a) || !put(ctx, g, n, true, n->out[1], VCC_F32, b) ||
            (n->out[2] >= 0 && (r < 0 || !put(ctx, g, n, true, n->out[2], VCC_F32, &sc))))
            return VCC_ERR_SHAPE;
        return VCC_OK;
    }
    case VCC_OP_SOFTMAXXENT: /* (logits (N, K), labels (N)) -> (loss [], prob (N, K)) */
    case VCC_OP_SOFTMAXXENT_GRAD: /* (prob (N, K), labels (N), seed []) -> dlogits (N, K) */
        if (!(a = in_shape(ctx, g, n, 0, VCC_F32)) || !(b = in_shape(ctx, g, n, 1, VCC_I64)) || a->rank != 2 ||
            b->rank != 1 || b->dims[0] != a->dims[0])
            goto bad_inputs;
        if (n->op == VCC_OP_SOFTMAXXENT) {
            VccShape sc = {0, {0}};
            if (n->nout != 2 || !put(ctx, g, n, true, n->out[0], VCC_F32, &sc) ||
                !put(ctx, g, n, true, n->out[1], VCC_F32, a))
                return VCC_ERR_SHAPE;
            return VCC_OK;
        }
        if (!(c = in_shape(ctx, g, n, 2, VCC_F32)) || c->rank != 0 || n->nout != 1) goto bad_inputs;
        return put(ctx, g, n, true, n->out[0], VCC_F32, a) ? VCC_OK : VCC_ERR_SHAPE;
    case VCC_OP_SGD: /* (param, grad, momentum) updated in place */
        if (!(a = in_shape(ctx, g, n, 0, VCC_F32)) || !(b = in_shape(ctx, g, n, 1, VCC_F32)) ||
            !(c = in_shape(ctx, g, n, 2, VCC_F32)) || !same_shape(a, b) || !same_shape(a, c))
            goto bad_inputs;
        return VCC_OK;
    default:
        vcc_error(ctx, "node '%s' (%s): no type rule", n->name, vcc_op_name(n->op));
        return VCC_ERR_UNSUPPORTED;
    }
    vcc_error(ctx, "node '%s' (%s): inputs or outputs missing or of the wrong rank", n->name, vcc_op_name(n->op));
    return VCC_ERR_SHAPE;
bad_inputs:
    vcc_error(ctx, "node '%s' (%s): its inputs and outputs do not have the shapes the op needs", n->name,
              vcc_op_name(n->op));
    return VCC_ERR_SHAPE;
}

VccStatus vcc_check_types(VccCtx *ctx, VccGraph *g) {
    VccStatus st = VCC_OK;
    for (int k = 0; k < g->nnodes && !st; k++) {
        const VccNode *n = &g->nodes[k];
        for (int i = 0; i < n->nout; i++)
            if (n->out[i] >= 0 && g->tensors[n->out[i]].dtype == VCC_DT_UNDEF) {
                vcc_error(ctx, "node '%s' (%s): output '%s' has no type", n->name, vcc_op_name(n->op),
                          g->tensors[n->out[i]].name);
                return VCC_ERR_SHAPE;
            }
        bool view = n->op == VCC_OP_FLATTEN || n->op == VCC_OP_RESHAPE || n->op == VCC_OP_IDENTITY;
        if (view && (n->nin < 1 || n->nout != 1 || n->out[0] < 0 || g->tensors[n->out[0]].alias_of != n->in[0])) {
            /* the emitters write no code for a view: its output must be its input's bytes */
            vcc_error(ctx, "node '%s' (%s): its output is not a view of its input (view_of=)", n->name,
                      vcc_op_name(n->op));
            return VCC_ERR_SHAPE;
        }
        bool forward_rule = n->phase == VCC_PHASE_FORWARD && n->op != VCC_OP_UNSUPPORTED;
        st = forward_rule ? infer_node(ctx, g, k, true) : check_internal(ctx, g, n);
    }
    return st;
}
