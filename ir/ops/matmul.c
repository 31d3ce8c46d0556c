/*
 * matmul.c — the matmul family: Gemm and GemmGrad (OpenBLAS sgemm on the CPU, cuBLAS on CUDA).
 *
 * Kernels: runtime/{elem,proto,cpu,cuda}/matmul.*.
 * Source: ONNX Operators "Gemm": 1/6 (broadcast), 7, 9, 11 (C optional), 13:
 *   Y (M, N) = alpha * A' (M, K) B' (K, N) + beta * C (unidirectional broadcast to (M, N)),
 * A' = transA ? A^T : A, B' = transB ? B^T : B. Gradients as PyTorch's addmm backward.
 */
#include "ops.h"

#include <inttypes.h>

/* ------------------------------------------------------------------ Gemm */

static const VccAttrSpec gemm_attrs[] = {
    {"alpha", 1, VCC_OPSET_NOW, VCC_A_FLOAT}, {"beta", 1, VCC_OPSET_NOW, VCC_A_FLOAT},
    {"transA", 1, VCC_OPSET_NOW, VCC_A_INT},  {"transB", 1, VCC_OPSET_NOW, VCC_A_INT},
    {"broadcast", 1, 6, VCC_A_INT},           {NULL, 0, 0, 0},
};

static VccStatus gemm_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    char s1[128], s2[128];
    const VccTensor *x = vcc_need_input(ctx, g, n, 0, VCC_F32), *b;
    if (!x || !(b = vcc_need_input(ctx, g, n, 1, VCC_F32))) return VCC_ERR_SHAPE;
    if (x->shape.rank != 2 || b->shape.rank != 2) {
        vcc_error(ctx, "node '%s' (Gemm): A and B must be 2-D", n->name);
        return VCC_ERR_SHAPE;
    }
    int ta = vcc_attr_int(n, "transA", 0) != 0, tb = vcc_attr_int(n, "transB", 0) != 0;
    int64_t M = x->shape.dims[ta], K = x->shape.dims[!ta], K2 = b->shape.dims[tb], N = b->shape.dims[!tb];
    if (K != K2) {
        vcc_shape_str(s1, sizeof s1, &x->shape);
        vcc_shape_str(s2, sizeof s2, &b->shape);
        vcc_error(ctx, "node '%s' (Gemm): inner dims differ: A %s (transA=%d), B %s (transB=%d)", n->name, s1, ta, s2,
                  tb);
        return VCC_ERR_SHAPE;
    }
    if (n->nin > 2 && n->in[2] >= 0) {
        const VccTensor *c = vcc_need_input(ctx, g, n, 2, VCC_F32);
        if (!c) return VCC_ERR_SHAPE;
        int64_t cr = c->shape.rank == 2 ? c->shape.dims[0] : 1;
        int64_t cc = c->shape.rank >= 1 ? c->shape.dims[c->shape.rank - 1] : 1;
        if (c->shape.rank > 2 || (cr != 1 && cr != M) || (cc != 1 && cc != N)) {
            vcc_shape_str(s1, sizeof s1, &c->shape);
            vcc_error(ctx, "node '%s' (Gemm): C of shape %s does not broadcast to (%lld, %lld)", n->name, s1,
                      (long long)M, (long long)N);
            return VCC_ERR_SHAPE;
        }
    }
    VccShape out = {2, {M, N}};
    return vcc_put_output(ctx, g, n, check, n->out[0], VCC_F32, &out) ? VCC_OK : VCC_ERR_SHAPE;
}

/* Gemm(A, B, C) -> GemmGrad(A, B, dY) -> (dA|_, dB|_, dC|_) */
static VccStatus gemm_grad(VccDiff *d, int k) {
    VccGraph *g = d->g;
    VccNode n = g->nodes[k];
    int x = n.in[0], dy = vcc_diff_dy(d, k, 0), c = n.nin > 2 ? n.in[2] : -1;
    int da = d->req[x] ? vcc_diff_new_grad(d, x) : -1;
    int db = d->req[n.in[1]] ? vcc_diff_new_grad(d, n.in[1]) : -1;
    int dc = c >= 0 && d->req[c] ? vcc_diff_new_grad(d, c) : -1;
    int in[3] = {x, n.in[1], dy}, out[3] = {da, db, dc};
    int kk = vcc_diff_add_node(d, VCC_OP_GEMM_GRAD, k, "grad", in, 3, out, 3);
    if (c >= 0) vcc_attr_set_ints(&g->nodes[kk], "c_shape", g->tensors[c].shape.dims, g->tensors[c].shape.rank);
    if (da >= 0) vcc_diff_accum(d, x, da);
    if (db >= 0) vcc_diff_accum(d, n.in[1], db);
    if (dc >= 0) vcc_diff_accum(d, c, dc);
    return VCC_OK;
}

/* Gemm and GemmGrad: one geometry. */
static VccStatus gemm_emit(VccEmit *e, int k) {
    const VccGraph *g = e->g;
    const VccNode *n = &g->nodes[k];
    const int *in = n->in, *out = n->out;
    int ta = vcc_attr_int(n, "transA", 0) != 0, tb = vcc_attr_int(n, "transB", 0) != 0;
    const VccShape *as = &g->tensors[in[0]].shape, *bs = &g->tensors[in[1]].shape;
    int64_t M = as->dims[ta], K = as->dims[!ta], N = bs->dims[!tb];
    float alpha = vcc_attr_float(n, "alpha", 1.0f), beta = vcc_attr_float(n, "beta", 1.0f);
    int64_t cr = 1, cc = 1;
    if (n->op == VCC_OP_GEMM) {
        int cten = n->nin > 2 ? in[2] : -1;
        if (cten >= 0) {
            const VccShape *cs = &g->tensors[cten].shape;
            cr = cs->rank == 2 ? cs->dims[0] : 1;
            cc = cs->rank >= 1 ? cs->dims[cs->rank - 1] : 1;
        }
        fprintf(e->f,
                "    gemm_forward(rt, %d, %d, %" PRId64 ", %" PRId64 ", %" PRId64 ", (float)%.9g, %s, %s, (float)%.9g, %s, %" PRId64
                ", %" PRId64 ", %s);\n",
                ta, tb, M, N, K, (double)alpha, vcc_emit_f32(e, in[0]), vcc_emit_f32(e, in[1]), (double)beta,
                vcc_emit_f32(e, cten), cr, cc, vcc_emit_f32(e, out[0]));
        return VCC_OK;
    }
    int64_t cs[2];
    int r = vcc_attr_ints(n, "c_shape", cs, 2);
    if (r == 2) cr = cs[0], cc = cs[1];
    else if (r == 1) cc = cs[0];
    fprintf(e->f,
            "    gemm_backward(rt, %d, %d, %" PRId64 ", %" PRId64 ", %" PRId64
            ", (float)%.9g, (float)%.9g, %s, %s, %s, %s, %s, %s, %" PRId64 ", %" PRId64 ");\n",
            ta, tb, M, N, K, (double)alpha, (double)beta, vcc_emit_f32(e, in[0]), vcc_emit_f32(e, in[1]),
            vcc_emit_f32(e, in[2]), vcc_emit_f32(e, out[0]), vcc_emit_f32(e, out[1]), vcc_emit_f32(e, out[2]), cr, cc);
    return VCC_OK;
}

const VccOpDef vcc_def_GEMM = {0, 0, gemm_attrs, NULL, NULL, gemm_shape, gemm_grad, gemm_emit};

/* ------------------------------------------------------------------ GemmGrad */

/* (A, B, dY) -> (dA, dB, dC) */
static VccStatus gemm_grad_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    const VccTensor *ta_ = vcc_need_input(ctx, g, n, 0, VCC_F32), *tb_ = NULL, *tc_ = NULL;
    if (!ta_ || !(tb_ = vcc_need_input(ctx, g, n, 1, VCC_F32)) || !(tc_ = vcc_need_input(ctx, g, n, 2, VCC_F32)) ||
        ta_->shape.rank != 2 || tb_->shape.rank != 2 || n->nout != 3)
        return vcc_operands_missing(ctx, n);
    const VccShape *a = &ta_->shape, *b = &tb_->shape, *c = &tc_->shape;
    int ta = vcc_attr_int(n, "transA", 0) != 0, tb = vcc_attr_int(n, "transB", 0) != 0;
    VccShape s = {2, {a->dims[ta], b->dims[!tb]}};
    if (a->dims[!ta] != b->dims[tb] || !vcc_same_shape(c, &s)) return vcc_shape_mismatch(ctx, n);
    int64_t cs[2];
    int r = vcc_attr_ints(n, "c_shape", cs, 2);
    VccShape sc = {r < 0 ? 0 : r, {r > 0 ? cs[0] : 0, r > 1 ? cs[1] : 0}};
    if (r > 2 || (r >= 0 && (sc.dims[0] < 1 || (r == 2 && sc.dims[1] < 1)))) return vcc_shape_mismatch(ctx, n);
    if (!vcc_put_output(ctx, g, n, true, n->out[0], VCC_F32, a) || !vcc_put_output(ctx, g, n, true, n->out[1], VCC_F32, b) ||
        (n->out[2] >= 0 && (r < 0 || !vcc_put_output(ctx, g, n, true, n->out[2], VCC_F32, &sc))))
        return VCC_ERR_SHAPE;
    return VCC_OK;
}

const VccOpDef vcc_def_GEMM_GRAD = {0, 0, NULL, NULL, NULL, gemm_grad_shape, NULL, gemm_emit};
