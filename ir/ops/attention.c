/*
 * attention.c — the attention family: FusedAttention, the one op passes/fuse.c makes of scaled
 * dot-product attention (MatMul(Q, K^T), a scale, an optional additive mask, Softmax along the last
 * axis, an optional Dropout, MatMul with V), and its backward op FusedAttentionGrad. No ONNX model holds
 * them; they are vcc's own (ops.def kind I).
 *
 *   FusedAttention(Q, K, V [, bias]) -> (O, lse)
 *     Q (..., Lq, D); K (..., Lk, D), or with k_t = 1 K^T (..., D, Lk) (the operand the graph's MatMul
 *     read); V (..., Lk, Dv); the leading dims equal; bias broadcasts to (..., Lq, Lk) (numpy rules) and
 *     gets no gradient; O (..., Lq, Dv); lse (..., Lq), each row's log-sum-exp of its scores.
 *     Attributes: scale (float), k_t (int), ratio, stream and seed when a Dropout in training mode sat on
 *     the probabilities (its stream and seed: the same draws), else ratio 0.
 *   FusedAttentionGrad(Q, K, V, O, lse, dO [, bias]) -> (dQ, dK, dV, delta)
 *     the gradients in their inputs' shapes (dK in K's layout), delta a (prod(...) * Lq) workspace.
 *
 * The forward saves O and lse only: no tensor of L x L elements is planned, in forward or backward
 * (runtime/elem/attention.h has the arithmetic, after FlashAttention-2: T. Dao, "FlashAttention-2:
 * Faster Attention with Better Parallelism and Work Partitioning", 2023).
 */
#include "ops.h"

#include "../../runtime/elem/attention.h" /* VCC_ATTN_MAXD, VCC_ATTN_MAXB */

#include <inttypes.h>
#include <math.h>
#include <string.h>

/* The geometry of a FusedAttention(-Grad) node from its Q, K, V (and bias) shapes: a kernel descriptor
 * without its dropout fields, the leading dims, and the O and lse shapes. Errors name the node. */
static VccStatus attn_geom(VccCtx *ctx, const VccNode *n, const VccShape *q, const VccShape *k, const VccShape *v,
                           const VccShape *bias, VccAttnDesc *d, VccShape *o, VccShape *lse) {
    const int r = q->rank, kt = (int)vcc_attr_int(n, "k_t", 0);
    memset(d, 0, sizeof *d);
    if (r < 2 || k->rank != r || v->rank != r || r - 2 > VCC_ATTN_MAXB) return vcc_shape_mismatch(ctx, n);
    d->B = 1;
    for (int a = 0; a < r - 2; a++) {
        if (k->dims[a] != q->dims[a] || v->dims[a] != q->dims[a]) return vcc_shape_mismatch(ctx, n);
        d->bdims[a] = q->dims[a];
        d->B *= q->dims[a];
    }
    d->nb = r - 2;
    d->Lq = q->dims[r - 2];
    d->D = q->dims[r - 1];
    d->Lk = kt ? k->dims[r - 1] : k->dims[r - 2];
    d->Dv = v->dims[r - 1];
    d->k_t = kt;
    d->scale = vcc_attr_float(n, "scale", 1.0f);
    if ((kt ? k->dims[r - 2] : k->dims[r - 1]) != d->D || v->dims[r - 2] != d->Lk) return vcc_shape_mismatch(ctx, n);
    if (d->D > VCC_ATTN_MAXD || d->Dv > VCC_ATTN_MAXD) {
        vcc_error(ctx, "node '%s' (%s): head dims %" PRId64 " and %" PRId64 " must be at most %d", n->name,
                  vcc_node_op(n), d->D, d->Dv, VCC_ATTN_MAXD);
        return VCC_ERR_UNSUPPORTED;
    }
    if (bias) { /* right-aligned strides over (leading..., Lq, Lk), 0 where the bias is broadcast */
        int64_t stride = 1, st[VCC_MAX_RANK] = {0};
        if (bias->rank > r) return vcc_shape_mismatch(ctx, n);
        for (int a = bias->rank - 1; a >= 0; a--) {
            const int ya = a + r - bias->rank;
            const int64_t want = ya == r - 1 ? d->Lk : ya == r - 2 ? d->Lq : q->dims[ya];
            if (bias->dims[a] != want && bias->dims[a] != 1) return vcc_shape_mismatch(ctx, n);
            st[ya] = bias->dims[a] == 1 ? 0 : stride;
            stride *= bias->dims[a];
        }
        for (int a = 0; a < r - 2; a++) d->bias_sb[a] = st[a];
        d->bias_si = st[r - 2];
        d->bias_sj = st[r - 1];
    }
    *o = *q;
    o->dims[r - 1] = d->Dv;
    *lse = *q;
    lse->rank = r - 1;
    return VCC_OK;
}

/* Q, K, V and the bias (NULL when absent) of node n: its inputs 0-2 and bias_at. */
static bool attn_inputs(VccCtx *ctx, const VccGraph *g, const VccNode *n, int bias_at, const VccTensor **q,
                        const VccTensor **k, const VccTensor **v, const VccTensor **bias) {
    *q = vcc_need_input(ctx, g, n, 0, VCC_F32);
    *k = *q ? vcc_need_input(ctx, g, n, 1, VCC_F32) : NULL;
    *v = *k ? vcc_need_input(ctx, g, n, 2, VCC_F32) : NULL;
    *bias = NULL;
    if (*v && bias_at < n->nin && n->in[bias_at] >= 0) *bias = vcc_need_input(ctx, g, n, bias_at, VCC_F32);
    return *v && (bias_at >= n->nin || n->in[bias_at] < 0 || *bias);
}

static VccStatus attn_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    const VccTensor *q, *kk, *v, *bias;
    VccAttnDesc d;
    VccShape o, lse;
    if (n->nout != 2 || !attn_inputs(ctx, g, n, 3, &q, &kk, &v, &bias)) return vcc_operands_missing(ctx, n);
    VccStatus st = attn_geom(ctx, n, &q->shape, &kk->shape, &v->shape, bias ? &bias->shape : NULL, &d, &o, &lse);
    if (st) return st;
    return vcc_put_output(ctx, g, n, check, n->out[0], VCC_F32, &o) &&
                   vcc_put_output(ctx, g, n, check, n->out[1], VCC_F32, &lse)
               ? VCC_OK
               : VCC_ERR_SHAPE;
}

/* FusedAttention(Q, K, V [, bias]) -> (O, lse): FusedAttentionGrad(Q, K, V, O, lse, dO [, bias]) ->
 * (dQ, dK, dV, delta); the bias gets no gradient (passes/fuse.c fuses only a bias that needs none) */
static VccStatus attn_grad(VccDiff *d, int k) {
    VccNode n = d->g->nodes[k]; /* a copy: the node array grows */
    int dy = vcc_diff_dy(d, k, 0);
    if (dy < 0) return VCC_OK;
    int in[7] = {n.in[0], n.in[1], n.in[2], n.out[0], n.out[1], dy, n.nin > 3 ? n.in[3] : -1};
    int out[4];
    for (int i = 0; i < 3; i++) out[i] = vcc_diff_new_grad(d, n.in[i]);
    VccShape ws = d->g->tensors[n.out[1]].shape;
    int64_t rows = vcc_shape_numel(&ws);
    ws.rank = 1;
    ws.dims[0] = rows;
    out[3] = vcc_tensor_add_unique(d->g, VCC_F32, &ws, VCC_T_WORKSPACE, "%s.delta", n.name);
    vcc_diff_grow(d);
    vcc_diff_add_node(d, VCC_OP_ATTENTION_GRAD, k, "grad", in, n.nin > 3 ? 7 : 6, out, 4);
    for (int i = 0; i < 3; i++)
        if (d->req[n.in[i]]) vcc_diff_accum(d, n.in[i], out[i]);
    return VCC_OK;
}

/* The descriptor of node n as a C initializer, the dropout fields from its ratio, stream and seed. */
static VccStatus attn_emit_desc(VccEmit *e, const VccNode *n, const VccShape *q, const VccShape *k, const VccShape *v,
                                const VccShape *bias) {
    VccAttnDesc d;
    VccShape o, lse;
    VccStatus st = attn_geom(e->ctx, n, q, k, v, bias, &d, &o, &lse);
    if (st) return st;
    double ratio = vcc_attr_float(n, "ratio", 0.0f), t = ratio * 4294967296.0;
    uint32_t threshold = ratio <= 0.0 ? 0 : t >= 4294967295.0 ? UINT32_MAX : (uint32_t)(t + 0.5);
    const VccAttr *seed = vcc_attr_get(n, "seed");
    fprintf(e->f, "    {\n        static const VccAttnDesc d = {%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
            ", %s, %d, %d, ", d.B, d.Lq, d.Lk, d.D, d.Dv, vcc_emit_float(e, d.scale), d.k_t, d.nb);
    const int64_t *lists[2] = {d.bdims, d.bias_sb};
    int lens[2] = {VCC_ATTN_MAXB, VCC_ATTN_MAXB};
    vcc_emit_i64s(e, 2, lists, lens);
    fprintf(e->f, ", %" PRId64 ", %" PRId64 ", %" PRIu32 "u, %" PRIu32 "u, %s, %d, %" PRIu64 "ull};\n", d.bias_si,
            d.bias_sj, threshold, (uint32_t)vcc_attr_int(n, "stream", 0),
            vcc_emit_float(e, ratio > 0.0 ? 1.0f / (float)(1.0 - ratio) : 1.0f), seed != NULL,
            seed ? (uint64_t)seed->i : 0);
    return VCC_OK;
}

static VccStatus attn_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    const VccGraph *g = e->g;
    const int bias = n->nin > 3 ? n->in[3] : -1;
    VccStatus st = attn_emit_desc(e, n, &g->tensors[n->in[0]].shape, &g->tensors[n->in[1]].shape,
                                  &g->tensors[n->in[2]].shape, bias >= 0 ? &g->tensors[bias].shape : NULL);
    if (st) return st;
    fprintf(e->f, "        attention_forward(rt, &d, %s, %s, %s, %s, ", vcc_emit_f32(e, n->in[0]), vcc_emit_f32(e, n->in[1]),
            vcc_emit_f32(e, n->in[2]), vcc_emit_f32(e, bias));
    fprintf(e->f, "%s, %s);\n    }\n", vcc_emit_f32(e, n->out[0]), vcc_emit_f32(e, n->out[1]));
    return VCC_OK;
}

const VccOpDef vcc_def_ATTENTION = {0, 0, NULL, NULL, NULL, attn_shape, attn_grad, attn_emit};

static VccStatus attn_grad_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    const VccTensor *q, *kk, *v, *bias, *o, *lse, *dout;
    VccAttnDesc d;
    VccShape os, ls, ws;
    if (n->nout != 4 || !attn_inputs(ctx, g, n, 6, &q, &kk, &v, &bias) || !(o = vcc_need_input(ctx, g, n, 3, VCC_F32)) ||
        !(lse = vcc_need_input(ctx, g, n, 4, VCC_F32)) || !(dout = vcc_need_input(ctx, g, n, 5, VCC_F32)))
        return vcc_operands_missing(ctx, n);
    VccStatus st = attn_geom(ctx, n, &q->shape, &kk->shape, &v->shape, bias ? &bias->shape : NULL, &d, &os, &ls);
    if (st) return st;
    if (!vcc_same_shape(&os, &o->shape) || !vcc_same_shape(&os, &dout->shape) || !vcc_same_shape(&ls, &lse->shape))
        return vcc_shape_mismatch(ctx, n);
    ws.rank = 1;
    ws.dims[0] = d.B * d.Lq;
    return vcc_put_output(ctx, g, n, check, n->out[0], VCC_F32, &q->shape) &&
                   vcc_put_output(ctx, g, n, check, n->out[1], VCC_F32, &kk->shape) &&
                   vcc_put_output(ctx, g, n, check, n->out[2], VCC_F32, &v->shape) &&
                   vcc_put_output(ctx, g, n, check, n->out[3], VCC_F32, &ws)
               ? VCC_OK
               : VCC_ERR_SHAPE;
}

static VccStatus attn_grad_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    const VccGraph *g = e->g;
    const int bias = n->nin > 6 ? n->in[6] : -1;
    VccStatus st = attn_emit_desc(e, n, &g->tensors[n->in[0]].shape, &g->tensors[n->in[1]].shape,
                                  &g->tensors[n->in[2]].shape, bias >= 0 ? &g->tensors[bias].shape : NULL);
    if (st) return st;
    fprintf(e->f, "        attention_backward(rt, &d, %s, %s, %s, %s, ", vcc_emit_f32(e, n->in[0]), vcc_emit_f32(e, n->in[1]),
            vcc_emit_f32(e, n->in[2]), vcc_emit_f32(e, bias));
    fprintf(e->f, "%s, %s, %s, ", vcc_emit_f32(e, n->in[3]), vcc_emit_f32(e, n->in[4]), vcc_emit_f32(e, n->in[5]));
    fprintf(e->f, "%s, %s, %s, %s);\n    }\n", vcc_emit_f32(e, n->out[0]), vcc_emit_f32(e, n->out[1]),
            vcc_emit_f32(e, n->out[2]), vcc_emit_f32(e, n->out[3]));
    return VCC_OK;
}

const VccOpDef vcc_def_ATTENTION_GRAD = {VCC_OPF_WORKSPACE, 3, NULL, NULL, NULL, attn_grad_shape, NULL, attn_grad_emit};
