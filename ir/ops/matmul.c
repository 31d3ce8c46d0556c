/*
 * matmul.c — the matmul family: Gemm and GemmGrad, MatMul and MatMulT (OpenBLAS sgemm on the CPU, cuBLAS
 * on CUDA); Einsum, lowered into MatMul, Transpose, Reshape, ReduceSum and Mul (see its section below).
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
#include <stdlib.h>
#include <string.h>

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
                       vcc_attr_int(n, "transB", 0) != 0, t && vcc_attr_int(n, "fold_batch", 0) != 0, t, m);
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
 * (..., K, 1) viewed as (..., K) first; a shared B (rank <= 2) against a batched A folds the batch.
 * With transB=1 (passes/fuse.c: Y = A B^T): dA = MatMulT(dYf, B) and dB = sum_to(MatMulT(dYf, A,
 * transA), B), (A^T dY)^T = dY^T A, folded the same way. */
static VccStatus matmul_grad(VccDiff *d, int k) {
    VccNode n = d->g->nodes[k]; /* a copy: the node array grows */
    int a = n.in[0], b = n.in[1], dy = vcc_diff_dy(d, k, 0), tb = vcc_attr_int(&n, "transB", 0) != 0;
    const VccShape as = d->g->tensors[a].shape, bs = d->g->tensors[b].shape;
    MatmulGeom m;
    if (!matmul_geom(d->ctx, &n, &as, &bs, 0, tb, false, true, &m)) return VCC_ERR_SHAPE;
    int dyf = grad_view(d, k, "grad_dy", dy, &m.y);
    if (d->req[a]) {
        int full = matmul_t(d, k, "grad_a", dyf, b, 0, !tb, false, a);
        vcc_diff_accum(d, a, vcc_diff_sum_to(d, k, "grad_a_sum", full, a, -1, 1.0f));
    }
    if (d->req[b] && tb) {
        int full = matmul_t(d, k, "grad_b", dyf, a, 1, 0, as.rank > 2 && bs.rank <= 2, b);
        vcc_diff_accum(d, b, vcc_diff_sum_to(d, k, "grad_b_sum", full, b, -1, 1.0f));
    } else if (d->req[b]) {
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

/* MatMul's internal attribute transB=1 (set by passes/fuse.c, never read from ONNX): Y = A B^T, B of rank
 * >= 2 with its last two dims swapped. */
const VccOpDef vcc_def_MATMUL = {0, 0, matmul_attrs, NULL, NULL, matmul_shape, matmul_grad, matmul_emit};

/* MatMulT(A, B) -> Y: op(A) op(B) with attributes transA, transB and fold_batch (backward only). */
const VccOpDef vcc_def_MATMUL_T = {0, 0, NULL, NULL, NULL, matmul_shape, NULL, matmul_emit};

/* ------------------------------------------------------------------ Einsum */

/* Einsum(X [, Y]) -> Z, ONNX Operators "Einsum" 12: an equation of one term of subscripts per input, comma
 * separated, and optionally "->" and the output's term (numpy.einsum / torch.einsum semantics). Letters
 * a-z, A-Z name dims; "..." stands for the dims the letters leave, right-aligned and broadcast across the
 * inputs. Without "->" the output is the letters that appear once, in ASCII order, after the ellipsis
 * dims. Subscripts of the inputs that the output lacks are summed. vcc lowers one or two inputs, no
 * subscript repeated within one input (a diagonal), into the ops below; its canonical form runs during
 * shapes (VCC_OPF_LOWER), when the sizes are known:
 *   - a subscript of one input only and not of the output: ReduceSum over its dim, first;
 *   - one input: then a Transpose to the output's order (an Identity, a view, when there is nothing to do);
 *   - two inputs, no subscript summed over both (elementwise and outer products): each input transposed
 *     to the output's order, reshaped with dims of 1 where it lacks a subscript, then Mul (broadcast);
 *   - two inputs with summed subscripts (the K group): MatMul of the inputs transposed and reshaped
 *     (views) to (batch..., M, K) and (batch..., K, N), then a Reshape (a view) to the output (and a
 *     Transpose where the output's order needs one). Batch dims are the subscripts kept in the output
 *     before the rows (M) and columns (N); a batch subscript one input lacks is a dim of 1 there, which
 *     MatMul broadcasts. Two plans are weighed by the elements they move (transposes of the inputs and
 *     of the output, and the full gradient a broadcast operand's sum comes from): the output's own order
 *     (its trailing subscripts of one input are N, those of the other before them M; no output
 *     transpose), and batch = the subscripts of both inputs, M and N all of each input's own.
 *     "bythwc,hkc->bythwk" (MViT's relative positions) is then one MatMul of X as it is, (byt, h, w, c),
 *     with the small hkc transposed to (1, h, c, k); "bythwc,wkc->bythwk" moves w to the front instead.
 * A dim of size 1 against a larger one of the same subscript is broadcast (dropped from its input by a
 * Reshape). Gradients come from those ops' rules: no kernel of its own. */

#define EIN_LETTERS 52                           /* A-Z then a-z: ids in ASCII order */
#define EIN_LABELS (EIN_LETTERS + VCC_MAX_RANK)  /* and the ellipsis dims, right-aligned: the last is 59 */
#define EIN_ELL (-1)                             /* the token "..." */
#define EIN_MAX_STEPS 24

/* An equation as written: the tokens (subscript ids, EIN_ELL) of input terms 0 and 1 and of the output
 * term (2). */
typedef struct {
    int nterms;
    int len[3];
    int tok[3][VCC_MAX_RANK + 1];
    bool out_given; /* "->" */
} EinEq;

static int ein_id(char c) { return c >= 'A' && c <= 'Z' ? c - 'A' : c >= 'a' && c <= 'z' ? 26 + c - 'a' : -1; }

static char ein_char(int id) { return (char)(id < 26 ? 'A' + id : 'a' + id - 26); }

/* Parse equation s into q; false with the reason in why (what vcc refuses included: more than two
 * inputs, a subscript repeated within one input). */
static bool ein_parse(const char *s, EinEq *q, char *why, size_t wlen) {
    memset(q, 0, sizeof *q);
    int t = 0;
    bool out = false;
    for (const char *p = s; *p; p++) {
        int term = out ? 2 : t, tok;
        if (*p == ' ' || *p == '\t') continue;
        if (*p == ',' && !out) {
            t++;
            continue;
        }
        if (*p == '-' && p[1] == '>' && !out) {
            out = true;
            p++;
            continue;
        }
        if (*p == '.' && p[1] == '.' && p[2] == '.') {
            tok = EIN_ELL;
            p += 2;
        } else if ((tok = ein_id(*p)) < 0) {
            snprintf(why, wlen, "'%c' is not a subscript (letters a-z, A-Z, '...', ',' and one '->')", *p);
            return false;
        }
        if (!out && t > 1) continue; /* a third input: counted, refused below */
        if (q->len[term] > VCC_MAX_RANK) {
            snprintf(why, wlen, "a term has more than %d subscripts", VCC_MAX_RANK);
            return false;
        }
        for (int i = 0; i < q->len[term]; i++)
            if (q->tok[term][i] == tok) {
                if (tok == EIN_ELL) snprintf(why, wlen, "a term has two ellipses");
                else if (term == 2) snprintf(why, wlen, "subscript '%c' appears twice in the output", ein_char(tok));
                else
                    snprintf(why, wlen, "subscript '%c' appears twice in input %d (a diagonal); vcc does not take "
                             "diagonals", ein_char(tok), term);
                return false;
            }
        q->tok[term][q->len[term]++] = tok;
    }
    q->nterms = t + 1;
    q->out_given = out;
    if (q->nterms > 2) {
        snprintf(why, wlen, "%d inputs; vcc lowers Einsum of one or two inputs", q->nterms);
        return false;
    }
    for (int i = 0; i < q->len[2]; i++) {
        bool found = false;
        for (int j = 0; j < q->nterms; j++)
            for (int a = 0; a < q->len[j]; a++) found |= q->tok[j][a] == q->tok[2][i];
        if (!found) {
            if (q->tok[2][i] == EIN_ELL) snprintf(why, wlen, "the output has an ellipsis and no input does");
            else snprintf(why, wlen, "output subscript '%c' is in no input", ein_char(q->tok[2][i]));
            return false;
        }
    }
    return true;
}

static const VccAttrSpec einsum_attrs[] = {{"equation", 12, VCC_OPSET_NOW, VCC_A_STRING}, {NULL, 0, 0, 0}};

/* Equations vcc does not lower, for the model's one report (the equation and the reason). */
static void einsum_check_attrs(VccCtx *ctx, const VccGraph *g, const VccNode *n) {
    (void)g;
    const VccAttr *a = vcc_attr_get(n, "equation");
    EinEq q;
    char why[160], msg[320];
    if (!a || a->type != VCC_A_STRING) {
        vcc_op_attr_problem(ctx, n, "%s attribute '%s'", "equation", "missing; ONNX requires it");
        return;
    }
    if (!ein_parse(a->s, &q, why, sizeof why)) {
        snprintf(msg, sizeof msg, "'%.120s': %s", a->s, why);
        vcc_op_attr_problem(ctx, n, "%s attribute '%s'", "equation", msg);
    } else if (q.nterms != n->nin) {
        snprintf(msg, sizeof msg, "'%.120s' has %d input terms for %d inputs", a->s, q.nterms, n->nin);
        vcc_op_attr_problem(ctx, n, "%s attribute '%s'", "equation", msg);
    }
}

/* A value of the lowering: a tensor of the graph (ref >= 0) or the output of step -1 - ref, with the
 * subscript of each dim. */
typedef struct {
    int ref;
    VccShape shape;
    int lab[VCC_MAX_RANK];
} EinVal;

/* One node of the lowering, before it is made: op, inputs (refs), output shape, and its list attribute
 * (Transpose's perm, ReduceSum's axes; Reshape's shape is the output shape). */
typedef struct {
    VccOp op;
    int in[2], nin;
    VccShape shape;
    int64_t ints[VCC_MAX_RANK];
    int nints;
} EinStep;

typedef struct {
    EinStep step[EIN_MAX_STEPS];
    int n;
    int64_t size[EIN_LABELS]; /* per subscript: its size (the largest of its dims) */
} EinPlan;

#define EIN_NONE (-1000) /* a step's absent second input */

/* A step of op reading refs a and b (EIN_NONE: one input) writing a value of shape s; returns its ref. */
static int ein_push(EinPlan *p, VccOp op, int a, int b, const VccShape *s) {
    VCC_ASSERT(p->n < EIN_MAX_STEPS);
    EinStep *st = &p->step[p->n];
    memset(st, 0, sizeof *st);
    st->op = op;
    st->in[0] = a;
    st->in[1] = b;
    st->nin = b == EIN_NONE ? 1 : 2;
    st->shape = *s;
    return -1 - p->n++;
}

/* v with its dims in the order of subscripts order[0..n) (a permutation of v's): a Transpose step
 * unless it is the order v has. */
static void ein_transpose(EinPlan *p, EinVal *v, const int *order) {
    int perm[VCC_MAX_RANK];
    bool same = true;
    for (int i = 0; i < v->shape.rank; i++) {
        for (perm[i] = 0; v->lab[perm[i]] != order[i]; perm[i]++) VCC_ASSERT(perm[i] < v->shape.rank - 1);
        same &= perm[i] == i;
    }
    if (same) return;
    EinVal o = *v;
    for (int i = 0; i < v->shape.rank; i++) o.shape.dims[i] = v->shape.dims[perm[i]], o.lab[i] = order[i];
    o.ref = ein_push(p, VCC_OP_TRANSPOSE, v->ref, EIN_NONE, &o.shape);
    for (int i = 0; i < v->shape.rank; i++) p->step[-1 - o.ref].ints[i] = perm[i];
    p->step[-1 - o.ref].nints = v->shape.rank;
    *v = o;
}

/* v seen with shape s (the same elements): a Reshape step (a view) unless it has that shape; v's
 * subscripts are the caller's to set. */
static void ein_reshape(EinPlan *p, EinVal *v, const VccShape *s) {
    if (!vcc_same_shape(&v->shape, s)) v->ref = ein_push(p, VCC_OP_RESHAPE, v->ref, EIN_NONE, s);
    v->shape = *s;
}

/* v without the dims whose subscript keep[] does not name: summed by a ReduceSum step (none when every
 * dim is kept). */
static void ein_sum(EinPlan *p, EinVal *v, const bool *keep) {
    EinVal o = *v;
    int64_t axes[VCC_MAX_RANK];
    int na = 0;
    o.shape.rank = 0;
    for (int i = 0; i < v->shape.rank; i++) {
        if (!keep[v->lab[i]]) {
            axes[na++] = i;
            continue;
        }
        o.lab[o.shape.rank] = v->lab[i];
        o.shape.dims[o.shape.rank++] = v->shape.dims[i];
    }
    if (!na) return;
    o.ref = ein_push(p, VCC_OP_REDUCESUM, v->ref, EIN_NONE, &o.shape);
    memcpy(p->step[-1 - o.ref].ints, axes, sizeof(int64_t) * (size_t)na);
    p->step[-1 - o.ref].nints = na;
    *v = o;
}

static bool ein_has(const EinVal *v, int l) {
    for (int i = 0; i < v->shape.rank; i++)
        if (v->lab[i] == l) return true;
    return false;
}

/* The MatMul form of a product of two values: the operand on the left, the batch subscripts (in the
 * output's order), the rows (M) and the columns (N); K: the subscripts both have and the output lacks,
 * in the left operand's order. */
typedef struct {
    int left;
    int nb, nm, nn, nk;
    int bat[VCC_MAX_RANK], row[VCC_MAX_RANK], col[VCC_MAX_RANK], kk[VCC_MAX_RANK];
} EinMM;

static int64_t ein_prod(const EinPlan *p, const int *lab, int n) {
    int64_t r = 1;
    for (int i = 0; i < n; i++) r *= p->size[lab[i]];
    return r;
}

/* The batch dims of m on operand v (which has or lacks each batch subscript): runs of consecutive batch
 * subscripts that both operands have, or that only one has, merged; their sizes on v into dims (1 where v
 * lacks them) and the full sizes into full. Returns the count. */
static int ein_groups(const EinPlan *p, const EinMM *m, const EinVal *v, const EinVal *a, const EinVal *b,
                      int64_t *dims, int64_t *full) {
    int g = 0;
    for (int i = 0; i < m->nb; i++) {
        int l = m->bat[i], kind = ein_has(a, l) + 2 * ein_has(b, l);
        int prev = i ? ein_has(a, m->bat[i - 1]) + 2 * ein_has(b, m->bat[i - 1]) : -1;
        if (kind != prev) {
            if (g == VCC_MAX_RANK) return VCC_MAX_RANK + 1;
            dims[g] = full[g] = 1;
            g++;
        }
        full[g - 1] *= p->size[l];
        if (ein_has(v, l)) dims[g - 1] *= p->size[l];
    }
    return g;
}

/* Elements the MatMul form m moves besides the product (see the Einsum comment); -1 when it needs more
 * dims than vcc has. out: the output's subscripts. */
static int64_t ein_cost(const EinPlan *p, const EinMM *m, const EinVal *v, const int *out, int nout) {
    const EinVal *l = &v[m->left], *r = &v[1 - m->left];
    int64_t d[VCC_MAX_RANK + 1], f[VCC_MAX_RANK + 1], cost = 0;
    int order[VCC_MAX_RANK], n;
    if (ein_groups(p, m, l, &v[0], &v[1], d, f) > VCC_MAX_RANK - 2) return -1;
    int64_t batch = ein_prod(p, m->bat, m->nb), M = ein_prod(p, m->row, m->nm), N = ein_prod(p, m->col, m->nn);
    int64_t K = ein_prod(p, m->kk, m->nk);
    bool l_lacks = false, r_lacks = false;
    for (int i = 0; i < m->nb; i++) l_lacks |= !ein_has(l, m->bat[i]), r_lacks |= !ein_has(r, m->bat[i]);
    for (int side = 0; side < 2; side++) { /* an input not in [batch, M, K] / [batch, K, N] order is copied */
        const EinVal *x = side ? r : l;
        n = 0;
        for (int i = 0; i < m->nb; i++)
            if (ein_has(x, m->bat[i])) order[n++] = m->bat[i];
        for (int i = 0; i < (side ? m->nk : m->nm); i++) order[n++] = side ? m->kk[i] : m->row[i];
        for (int i = 0; i < (side ? m->nn : m->nk); i++) order[n++] = side ? m->col[i] : m->kk[i];
        for (int i = 0; i < n; i++)
            if (order[i] != x->lab[i]) {
                cost += vcc_shape_numel(&x->shape);
                break;
            }
    }
    n = 0;
    for (int i = 0; i < m->nb; i++) order[n++] = m->bat[i];
    for (int i = 0; i < m->nm; i++) order[n++] = m->row[i];
    for (int i = 0; i < m->nn; i++) order[n++] = m->col[i];
    for (int i = 0; i < nout; i++)
        if (order[i] != out[i]) {
            cost += batch * M * N;
            break;
        }
    if (r_lacks) cost += batch * K * N; /* the right operand's gradient before its sum over what it lacks */
    if (l_lacks) cost += batch * M * K;
    return cost;
}

/* K of m: the subscripts both values have and out lacks, in the left one's order. */
static void ein_contracted(EinMM *m, const EinVal *v, const bool *in_out) {
    const EinVal *l = &v[m->left];
    m->nk = 0;
    for (int i = 0; i < l->shape.rank; i++)
        if (!in_out[l->lab[i]] && ein_has(&v[1 - m->left], l->lab[i])) m->kk[m->nk++] = l->lab[i];
}

/* The two MatMul forms of v[0] v[1] -> out (the Einsum comment): the one that moves fewer elements. */
static bool ein_choose(const EinPlan *p, const EinVal *v, const int *out, int nout, const bool *in_out, EinMM *best) {
    EinMM c[3];
    int nc = 0;
    memset(c, 0, sizeof c);
    /* the output's own order: N the trailing run of subscripts of one input only, M the run before it of
     * the other's only; the left operand is M's (or the other than N's) */
    EinMM *t = &c[nc++];
    int j = nout, side_n = -1;
    for (; j > 0; j--) {
        int l = out[j - 1], s = ein_has(&v[0], l) && ein_has(&v[1], l) ? -1 : ein_has(&v[0], l) ? 0 : 1;
        if (s < 0 || (side_n >= 0 && s != side_n)) break;
        side_n = s;
    }
    int nstart = j;
    for (; j > 0 && side_n >= 0; j--) {
        int l = out[j - 1];
        if (ein_has(&v[side_n], l) || !ein_has(&v[1 - side_n], l)) break;
    }
    t->left = side_n >= 0 ? 1 - side_n : 0;
    for (int i = 0; i < j; i++) t->bat[t->nb++] = out[i];
    for (int i = j; i < nstart; i++) t->row[t->nm++] = out[i];
    for (int i = nstart; i < nout; i++) t->col[t->nn++] = out[i];
    /* batch = the subscripts of both, M and N each input's own, in the output's order; either on the left */
    for (int left = 0; left < 2; left++) {
        EinMM *m = &c[nc++];
        m->left = left;
        for (int i = 0; i < nout; i++) {
            bool a = ein_has(&v[left], out[i]), b = ein_has(&v[1 - left], out[i]);
            if (a && b) m->bat[m->nb++] = out[i];
            else if (a) m->row[m->nm++] = out[i];
            else m->col[m->nn++] = out[i];
        }
    }
    int64_t best_cost = -1;
    for (int i = 0; i < nc; i++) {
        ein_contracted(&c[i], v, in_out);
        int64_t cost = ein_cost(p, &c[i], v, out, nout);
        if (cost >= 0 && (best_cost < 0 || cost < best_cost)) best_cost = cost, *best = c[i];
    }
    return best_cost >= 0;
}

/* The steps of v[0] v[1] -> out by the MatMul form m; returns the output value. */
static EinVal ein_matmul(EinPlan *p, const EinMM *m, EinVal *v, const int *out, int nout) {
    EinVal *l = &v[m->left], *r = &v[1 - m->left];
    int64_t dl[VCC_MAX_RANK + 1], dr[VCC_MAX_RANK + 1], full[VCC_MAX_RANK + 1];
    int g = ein_groups(p, m, l, &v[0], &v[1], dl, full);
    ein_groups(p, m, r, &v[0], &v[1], dr, full);
    for (int side = 0; side < 2; side++) {
        EinVal *x = side ? r : l;
        int order[VCC_MAX_RANK], n = 0;
        for (int i = 0; i < m->nb; i++)
            if (ein_has(x, m->bat[i])) order[n++] = m->bat[i];
        for (int i = 0; i < (side ? m->nk : m->nm); i++) order[n++] = side ? m->kk[i] : m->row[i];
        for (int i = 0; i < (side ? m->nn : m->nk); i++) order[n++] = side ? m->col[i] : m->kk[i];
        ein_transpose(p, x, order);
        VccShape s = {g + 2, {0}};
        for (int i = 0; i < g; i++) s.dims[i] = side ? dr[i] : dl[i];
        s.dims[g] = side ? ein_prod(p, m->kk, m->nk) : ein_prod(p, m->row, m->nm);
        s.dims[g + 1] = side ? ein_prod(p, m->col, m->nn) : ein_prod(p, m->kk, m->nk);
        ein_reshape(p, x, &s);
    }
    EinVal y = {0};
    y.shape.rank = g + 2;
    for (int i = 0; i < g; i++) y.shape.dims[i] = full[i];
    y.shape.dims[g] = ein_prod(p, m->row, m->nm);
    y.shape.dims[g + 1] = ein_prod(p, m->col, m->nn);
    y.ref = ein_push(p, VCC_OP_MATMUL, l->ref, r->ref, &y.shape);
    VccShape s = {0, {0}};
    for (int i = 0; i < m->nb; i++) y.lab[s.rank] = m->bat[i], s.dims[s.rank++] = p->size[m->bat[i]];
    for (int i = 0; i < m->nm; i++) y.lab[s.rank] = m->row[i], s.dims[s.rank++] = p->size[m->row[i]];
    for (int i = 0; i < m->nn; i++) y.lab[s.rank] = m->col[i], s.dims[s.rank++] = p->size[m->col[i]];
    ein_reshape(p, &y, &s);
    ein_transpose(p, &y, out);
    (void)nout;
    return y;
}

/* The steps of v[0] v[1] -> out when nothing is summed over both: Mul of each transposed to the output's
 * order, with dims of 1 where it lacks a subscript. */
static EinVal ein_mul(EinPlan *p, EinVal *v, const int *out, int nout) {
    for (int side = 0; side < 2; side++) {
        int order[VCC_MAX_RANK], n = 0;
        VccShape s = {nout, {0}};
        for (int i = 0; i < nout; i++) {
            s.dims[i] = ein_has(&v[side], out[i]) ? p->size[out[i]] : 1;
            if (ein_has(&v[side], out[i])) order[n++] = out[i];
        }
        ein_transpose(p, &v[side], order);
        ein_reshape(p, &v[side], &s);
    }
    EinVal y = {0};
    y.shape.rank = nout;
    for (int i = 0; i < nout; i++) y.shape.dims[i] = p->size[out[i]], y.lab[i] = out[i];
    y.ref = ein_push(p, VCC_OP_MUL, v[0].ref, v[1].ref, &y.shape);
    return y;
}

/* The nodes of plan p: each step but the last a new node (its output a new value named after node k's
 * output), the last one node k itself, rewritten to write k's output. Views (Reshape, Identity) alias
 * their input; Reshape's shape is a new int64 constant. */
static void ein_make(VccGraph *g, int k, const EinPlan *p) {
    int *made = vcc_malloc(sizeof(int) * (size_t)p->n);
    for (int s = 0; s < p->n; s++) {
        const EinStep *st = &p->step[s];
        bool last = s == p->n - 1;
        int in[2], nin = st->nin, out;
        for (int i = 0; i < nin; i++) in[i] = st->in[i] >= 0 ? st->in[i] : made[-1 - st->in[i]];
        if (st->op == VCC_OP_RESHAPE) {
            VccShape r = {1, {st->shape.rank}};
            int c = vcc_tensor_add_unique(g, VCC_I64, &r, VCC_T_CONST, "%s.einsum%d_shape", g->nodes[k].name, s);
            g->tensors[c].data = vcc_malloc(sizeof(int64_t) * (size_t)(st->shape.rank ? st->shape.rank : 1));
            g->tensors[c].data_bytes = sizeof(int64_t) * (size_t)st->shape.rank;
            if (st->shape.rank) memcpy(g->tensors[c].data, st->shape.dims, g->tensors[c].data_bytes);
            in[nin++] = c;
        }
        VccNode *n;
        if (last) {
            n = &g->nodes[k];
            out = n->out[0];
            n->op = st->op;
            free(n->onnx_op);
            n->onnx_op = NULL;
            vcc_attr_drop(n, "equation");
            n->in = vcc_realloc(n->in, sizeof(int) * (size_t)nin);
            memcpy(n->in, in, sizeof(int) * (size_t)nin);
            n->nin = nin;
        } else {
            out = vcc_tensor_add_unique(g, VCC_F32, &st->shape, VCC_T_ACT, "%s.einsum%d", g->tensors[g->nodes[k].out[0]].name, s);
            char *name = vcc_strfmt("%s.einsum%d", g->nodes[k].name, s);
            n = &g->nodes[vcc_node_add(g, st->op, name, in, nin, &out, 1, VCC_PHASE_FORWARD)];
            free(name);
        }
        made[s] = out;
        if (st->op == VCC_OP_TRANSPOSE) vcc_attr_set_ints(n, "perm", st->ints, st->nints);
        if (st->op == VCC_OP_REDUCESUM) {
            vcc_attr_set_ints(n, "axes", st->ints, st->nints);
            vcc_attr_set_int(n, "keepdims", 0);
        }
        if (st->op == VCC_OP_RESHAPE || st->op == VCC_OP_IDENTITY) g->tensors[out].alias_of = in[0];
    }
    free(made);
}

/* Canonical form of Einsum (VCC_OPF_LOWER: during shapes, when its inputs' shapes are known): the steps
 * of the Einsum comment as nodes before node k, node k rewritten into the last of them. */
static VccStatus einsum_canon(VccCtx *ctx, VccGraph *g, int k) {
    const VccNode *n = &g->nodes[k];
    const char *eq = vcc_attr_string(n, "equation", "");
    EinEq q;
    char why[160];
    bool parsed = ein_parse(eq, &q, why, sizeof why);
    if (!parsed || q.nterms != n->nin || n->nout != 1 || n->out[0] < 0) {
        if (parsed) snprintf(why, sizeof why, "%d input terms for %d inputs and %d outputs", q.nterms, n->nin, n->nout);
        vcc_error(ctx, "node '%s' (Einsum): equation '%s': %s", n->name, eq, why);
        return VCC_ERR_UNSUPPORTED;
    }
    EinPlan *p = vcc_calloc(1, sizeof *p);
    EinVal v[2];
    bool in_out[EIN_LABELS] = {false};
    int out[2 * VCC_MAX_RANK + 2], nout = 0, emax = 0, count[EIN_LABELS] = {0};
    VccStatus st = VCC_OK;
    char s1[128];
    for (int i = 0; i < n->nin && !st; i++) {
        const VccTensor *x = vcc_need_input(ctx, g, n, i, VCC_F32);
        if (!x) {
            st = VCC_ERR_SHAPE;
            break;
        }
        int letters = 0, r = x->shape.rank;
        bool ell = false;
        for (int t = 0; t < q.len[i]; t++) ell |= q.tok[i][t] == EIN_ELL, letters += q.tok[i][t] != EIN_ELL;
        int e = r - letters;
        if (e < 0 || (!ell && e)) {
            vcc_shape_str(s1, sizeof s1, &x->shape);
            vcc_error(ctx, "node '%s' (Einsum): equation '%s': input %d %s does not have the %d dims its term names%s",
                      n->name, eq, i, s1, letters, ell ? " (and an ellipsis)" : "");
            st = VCC_ERR_SHAPE;
            break;
        }
        emax = e > emax ? e : emax;
        v[i].ref = n->in[i];
        v[i].shape = x->shape;
        for (int t = 0, d = 0; t < q.len[i]; t++)
            if (q.tok[i][t] != EIN_ELL) v[i].lab[d++] = q.tok[i][t];
            else
                for (int j = 0; j < e; j++) v[i].lab[d++] = EIN_LABELS - e + j;
        for (int d = 0; d < r; d++) {
            int l = v[i].lab[d];
            int64_t dim = x->shape.dims[d];
            count[l]++;
            if (p->size[l] == 0 || p->size[l] == 1) p->size[l] = dim > p->size[l] ? dim : p->size[l];
            else if (dim != p->size[l] && dim != 1) {
                vcc_shape_str(s1, sizeof s1, &x->shape);
                if (l < EIN_LETTERS)
                    vcc_error(ctx, "node '%s' (Einsum): equation '%s': subscript '%c' is %lld long in one input and "
                              "%lld in input %d %s", n->name, eq, ein_char(l), (long long)p->size[l], (long long)dim,
                              i, s1);
                else
                    vcc_error(ctx, "node '%s' (Einsum): equation '%s': the ellipsis dims of the inputs do not "
                              "broadcast (input %d %s)", n->name, eq, i, s1);
                st = VCC_ERR_SHAPE;
            }
        }
    }
    if (q.out_given) {
        for (int t = 0; t < q.len[2]; t++)
            if (q.tok[2][t] != EIN_ELL) out[nout++] = q.tok[2][t];
            else
                for (int j = 0; j < emax; j++) out[nout++] = EIN_LABELS - emax + j;
    } else { /* the ellipsis dims, then the letters that appear once, in ASCII order */
        for (int j = 0; j < emax; j++) out[nout++] = EIN_LABELS - emax + j;
        for (int l = 0; l < EIN_LETTERS; l++)
            if (count[l] == 1) out[nout++] = l;
    }
    if (!st && nout > VCC_MAX_RANK) {
        vcc_error(ctx, "node '%s' (Einsum): equation '%s': the output would have more than %d dims", n->name, eq,
                  VCC_MAX_RANK);
        st = VCC_ERR_SHAPE;
    }
    for (int i = 0; i < nout; i++) in_out[out[i]] = true;
    for (int i = 0; i < n->nin && !st; i++) { /* broadcast dims of 1 go; what only this input has and the
                                                 output lacks is summed */
        VccShape s = {0, {0}};
        EinVal w = v[i];
        for (int d = 0; d < v[i].shape.rank; d++)
            if (v[i].shape.dims[d] == p->size[v[i].lab[d]]) w.lab[s.rank] = v[i].lab[d], s.dims[s.rank++] = v[i].shape.dims[d];
        ein_reshape(p, &w, &s);
        v[i] = w;
    }
    for (int i = 0; i < n->nin && !st; i++) {
        bool keep[EIN_LABELS];
        for (int l = 0; l < EIN_LABELS; l++) keep[l] = in_out[l] || (n->nin == 2 && ein_has(&v[1 - i], l));
        ein_sum(p, &v[i], keep);
    }
    EinVal y = v[0];
    if (!st && n->nin == 1) {
        ein_transpose(p, &y, out);
    } else if (!st) {
        bool contracted = false;
        for (int d = 0; d < v[0].shape.rank; d++) contracted |= !in_out[v[0].lab[d]] && ein_has(&v[1], v[0].lab[d]);
        EinMM m;
        if (!contracted) {
            y = ein_mul(p, v, out, nout);
        } else if (ein_choose(p, v, out, nout, in_out, &m)) {
            y = ein_matmul(p, &m, v, out, nout);
        } else {
            vcc_error(ctx, "node '%s' (Einsum): equation '%s': its product needs more batch dims than vcc's "
                      "MatMul has (%d)", n->name, eq, VCC_MAX_RANK - 2);
            st = VCC_ERR_UNSUPPORTED;
        }
    }
    if (!st && (p->n == 0 || y.ref >= 0)) y.ref = ein_push(p, VCC_OP_IDENTITY, y.ref, EIN_NONE, &y.shape);
    if (!st) ein_make(g, k, p);
    free(p);
    return st;
}

/* Never reached for a forward graph: the canonical form replaced the node during shapes. */
static VccStatus einsum_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    (void)check;
    vcc_error(ctx, "node '%s' (Einsum): not lowered into other ops (its canonical form runs during shapes)",
              g->nodes[k].name);
    return VCC_ERR_INTERNAL;
}

const VccOpDef vcc_def_EINSUM = {VCC_OPF_LOWER, 0, einsum_attrs, einsum_check_attrs, einsum_canon, einsum_shape,
                                 NULL, NULL};
