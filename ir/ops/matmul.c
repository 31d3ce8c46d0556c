/*
 * matmul.c — the matmul family: Gemm and GemmGrad, MatMul and MatMulT (OpenBLAS sgemm on the CPU, cuBLAS
 * on CUDA).
 *
 * Kernels: runtime/{elem,proto,cpu,cuda}/matmul.*.
 * Source: ONNX Operators "Gemm": 1/6 (broadcast), 7, 9, 11 (C optional), 13:
 *   Y (M, N) = alpha * A' (M, K) B' (K, N) + beta * C (unidirectional broadcast to (M, N)),
 * A' = transA ? A^T : A, B' = transB ? B^T : B. Gradients as PyTorch's addmm backward.
 * ONNX Operators "MatMul" 1, 9, 13 (no attributes): numpy.matmul. A 1-D A (K) is the row (1, K), a 1-D
 * B (K) the column (K, 1), and the added dim is removed from Y; the dims before the last two are batch
 * dims, broadcast as numpy does (right-aligned, equal or 1): A (..., M, K) x B (..., K, N) -> Y (..., M, N).
 * Gradients as PyTorch's matmul backward: dA = dY B^T, dB = A^T dY, each a MatMulT (MatMul with the
 * transposes as attributes transA, transB, same kernel), then summed over the batch dims the operand was
 * broadcast along (vcc_diff_sum_to). dB of a shared B (2-D or 1-D) against a batched A is one GEMM over
 * the stacked batch (MatMulT fold_batch: A^T dY with the batch in the contraction).
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

/* ------------------------------------------------------------------ MatMul, MatMulT */

/* The geometry of a MatMul or MatMulT node: Y[i] (M, N) = op(A[i]) (M, K) op(B[i]) (K, N) over the batch
 * dims; ab and bb are A's and B's batch dims right-aligned to batch's rank (1 where an operand has none). */
typedef struct {
    int ta, tb;
    int64_t M, N, K;
    VccShape batch, ab, bb;
    VccShape y; /* the output: MatMul drops the dims of 1-D operands, MatMulT keeps (batch..., M, N) */
} MatmulGeom;

/* The geometry of a product of operands of shapes a and b (a 1-D A is (1, K), a 1-D B is (K, 1), before
 * the transposes ta, tb); fold: the operands' equal batch dims are part of the contraction (ta 1, tb 0:
 * A^T B over the stacked matrices), Y has none; full: Y keeps the dims of 1-D operands. False with an
 * error naming node n when the shapes do not multiply. */
static bool matmul_geom(VccCtx *ctx, const VccNode *n, const VccShape *a, const VccShape *b, int ta, int tb,
                        bool fold, bool full, MatmulGeom *m) {
    char s1[128], s2[128];
    if (a->rank < 1 || b->rank < 1) {
        vcc_error(ctx, "node '%s' (%s): A and B must have at least one dim", n->name, vcc_node_op(n));
        return false;
    }
    int64_t ar = a->rank == 1 ? 1 : a->dims[a->rank - 2], ac = a->dims[a->rank - 1];
    int64_t br = b->rank == 1 ? b->dims[0] : b->dims[b->rank - 2], bc = b->rank == 1 ? 1 : b->dims[b->rank - 1];
    m->ta = ta, m->tb = tb;
    m->M = ta ? ac : ar, m->K = ta ? ar : ac;
    m->N = tb ? br : bc;
    int ra = a->rank > 2 ? a->rank - 2 : 0, rb = b->rank > 2 ? b->rank - 2 : 0, r = ra > rb ? ra : rb;
    bool ok = m->K == (tb ? bc : br) && r + 2 <= VCC_MAX_RANK;
    m->batch.rank = m->ab.rank = m->bb.rank = r;
    for (int i = 0; i < r && ok; i++) {
        int64_t da = i >= r - ra ? a->dims[i - (r - ra)] : 1, db = i >= r - rb ? b->dims[i - (r - rb)] : 1;
        m->ab.dims[i] = da, m->bb.dims[i] = db;
        m->batch.dims[i] = da == 1 ? db : da;
        ok = da == db || da == 1 || db == 1;
    }
    if (ok && fold) {
        ok = ra == rb && ta && !tb && vcc_same_shape(&m->ab, &m->bb);
        m->K *= vcc_shape_numel(&m->batch);
        m->batch.rank = m->ab.rank = m->bb.rank = 0;
    }
    if (!ok) {
        vcc_shape_str(s1, sizeof s1, a);
        vcc_shape_str(s2, sizeof s2, b);
        vcc_error(ctx, "node '%s' (%s): A %s and B %s do not multiply (transA=%d, transB=%d%s)", n->name,
                  vcc_node_op(n), s1, s2, ta, tb, fold ? ", batch folded" : "");
        return false;
    }
    m->y = m->batch;
    if (full || a->rank > 1) m->y.dims[m->y.rank++] = m->M;
    if (full || b->rank > 1) m->y.dims[m->y.rank++] = m->N;
    return true;
}

/* The geometry of node n of g (MatMul, or MatMulT with its attributes). */
static bool matmul_node_geom(VccCtx *ctx, const VccGraph *g, const VccNode *n, MatmulGeom *m) {
    const VccTensor *a = vcc_need_input(ctx, g, n, 0, VCC_F32), *b;
    if (!a || !(b = vcc_need_input(ctx, g, n, 1, VCC_F32))) return false;
    bool t = n->op == VCC_OP_MATMUL_T;
    return matmul_geom(ctx, n, &a->shape, &b->shape, t && vcc_attr_int(n, "transA", 0) != 0,
                       t && vcc_attr_int(n, "transB", 0) != 0, t && vcc_attr_int(n, "fold_batch", 0) != 0, t, m);
}

static VccStatus matmul_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    MatmulGeom m;
    if (!matmul_node_geom(ctx, g, n, &m)) return VCC_ERR_SHAPE;
    return vcc_put_output(ctx, g, n, check, n->out[0], VCC_F32, &m.y) ? VCC_OK : VCC_ERR_SHAPE;
}

/* Gradient tensor gt seen with shape s (the same elements): gt itself, or a view made by a backward
 * Reshape "<node fwd>.<suffix>". */
static int grad_view(VccDiff *d, int fwd, const char *suffix, int gt, const VccShape *s) {
    if (vcc_same_shape(&d->g->tensors[gt].shape, s)) return gt;
    int v = vcc_tensor_add_unique(d->g, VCC_F32, s, VCC_T_GRAD_TEMP, "%s.%s", d->g->tensors[gt].name, suffix);
    vcc_diff_grow(d);
    d->g->tensors[v].alias_of = gt;
    vcc_diff_add_node(d, VCC_OP_RESHAPE, fwd, suffix, &gt, 1, &v, 1);
    return v;
}

/* A MatMulT node "<node fwd>.<suffix>" computing op(a) op(b) (transposes ta, tb; fold: fold_batch) into a
 * new gradient temporary named after tensor of; returns it. */
static int matmul_t(VccDiff *d, int fwd, const char *suffix, int a, int b, int ta, int tb, bool fold, int of) {
    MatmulGeom m;
    VccGraph *g = d->g;
    bool ok = matmul_geom(d->ctx, &g->nodes[fwd], &g->tensors[a].shape, &g->tensors[b].shape, ta, tb, fold, true, &m);
    VCC_ASSERT(ok);
    int out = vcc_tensor_add_unique(g, VCC_F32, &m.y, VCC_T_GRAD_TEMP, "%s.%s", g->tensors[of].name, suffix);
    vcc_diff_grow(d);
    int in[2] = {a, b};
    int j = vcc_diff_add_node(d, VCC_OP_MATMUL_T, fwd, suffix, in, 2, &out, 1);
    vcc_attr_set_int(&g->nodes[j], "transA", ta);
    vcc_attr_set_int(&g->nodes[j], "transB", tb);
    if (fold) vcc_attr_set_int(&g->nodes[j], "fold_batch", 1);
    return out;
}

/* MatMul(A, B) -> Y: dYf = dY viewed as (batch..., M, N) (the dims of 1-D operands back);
 * dA = sum_to(MatMulT(dYf, B, transB), A); dB = sum_to(MatMulT(A, dYf, transA), B), a 1-D B's
 * (..., K, 1) viewed as (..., K) first; a shared B (rank <= 2) against a batched A folds the batch. */
static VccStatus matmul_grad(VccDiff *d, int k) {
    VccNode n = d->g->nodes[k]; /* a copy: the node array grows */
    int a = n.in[0], b = n.in[1], dy = vcc_diff_dy(d, k, 0);
    const VccShape as = d->g->tensors[a].shape, bs = d->g->tensors[b].shape;
    MatmulGeom m;
    if (!matmul_geom(d->ctx, &n, &as, &bs, 0, 0, false, true, &m)) return VCC_ERR_SHAPE;
    int dyf = grad_view(d, k, "grad_dy", dy, &m.y);
    if (d->req[a]) {
        int full = matmul_t(d, k, "grad_a", dyf, b, 0, 1, false, a);
        vcc_diff_accum(d, a, vcc_diff_sum_to(d, k, "grad_a_sum", full, a, -1, 1.0f));
    }
    if (d->req[b]) {
        int full = matmul_t(d, k, "grad_b", a, dyf, 1, 0, as.rank > 2 && bs.rank <= 2, b);
        if (bs.rank == 1) {
            VccShape s = d->g->tensors[full].shape;
            s.rank--;
            full = grad_view(d, k, "grad_b_col", full, &s);
        }
        vcc_diff_accum(d, b, vcc_diff_sum_to(d, k, "grad_b_sum", full, b, -1, 1.0f));
    }
    return VCC_OK;
}

/* matmul_forward with a VccMatmul descriptor: size-1 batch dims dropped, neighbouring dims that A and B
 * read alike merged, and a batched contiguous A against a shared B (ta 0) folded into M (one GEMM). */
static VccStatus matmul_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    MatmulGeom m;
    if (!matmul_node_geom(e->ctx, e->g, n, &m)) return VCC_ERR_SHAPE;
    int64_t dims[VCC_MAX_RANK] = {1}, sa[VCC_MAX_RANK] = {0}, sb[VCC_MAX_RANK] = {0}, nb, M = m.M;
    VccBroadcast bc = {m.ab, m.bb, m.batch, -1};
    int r = vcc_bcast_collapse(&bc, m.M * m.K, m.K * m.N, dims, sa, sb, &nb);
    if (r == 1 && sa[0] != 0 && sb[0] == 0 && !m.ta) { /* (batch * M, K) x (K, N): one GEMM */
        M *= dims[0];
        r = 0;
    }
    if (r == 0) dims[0] = nb = 1, sa[0] = sb[0] = 0;
    const int64_t *lists[3] = {dims, sa, sb};
    int lens[3] = {r ? r : 1, r ? r : 1, r ? r : 1};
    fprintf(e->f,
            "    {\n        static const VccMatmul d = {%d, %d, %" PRId64 ", %" PRId64 ", %" PRId64 ", {%d, %" PRId64 ", ",
            m.ta, m.tb, M, m.N, m.K, r, nb);
    vcc_emit_i64s(e, 3, lists, lens);
    fprintf(e->f, "}};\n        matmul_forward(rt, &d, %s, %s, %s);\n    }\n", vcc_emit_f32(e, n->in[0]),
            vcc_emit_f32(e, n->in[1]), vcc_emit_f32(e, n->out[0]));
    return VCC_OK;
}

static const VccAttrSpec matmul_attrs[] = {{NULL, 0, 0, 0}};

const VccOpDef vcc_def_MATMUL = {0, 0, matmul_attrs, NULL, NULL, matmul_shape, matmul_grad, matmul_emit};

/* MatMulT(A, B) -> Y: op(A) op(B) with attributes transA, transB and fold_batch (backward only). */
const VccOpDef vcc_def_MATMUL_T = {0, 0, NULL, NULL, NULL, matmul_shape, NULL, matmul_emit};
