/*
 * compare.c — the compare family: the comparisons Equal, Less, LessOrEqual, Greater, GreaterOrEqual,
 * the logic ops And, Or, Xor (two operands with broadcasting, a bool result), Not, and Where (a choice
 * between two tensors by a bool mask, three-way broadcasting), with Where's gradient (internal
 * WhereGrad).
 *
 * A node whose inputs are all known while compiling is evaluated by ir/ops/fold.c before it reaches
 * these rules (shape arithmetic, index lists, constant masks) and removed. The rules here are the run-time
 * form: masks from data (torch.where(x > 0, x, 0.1 * x), causal and attention masks, clamp-like
 * patterns). Kernels: runtime/{elem,proto,cpu,cuda}/compare.* (elements of any type read with
 * runtime/elem/typed.h).
 *
 * Source: ONNX Operators: Equal 1, 7, 11, 13, 19 (bool and every number type), Less and Greater 1, 7, 9,
 * 13 (number types), LessOrEqual and GreaterOrEqual 12, 16; And, Or, Xor 1, 7 (bool); Not 1; Where 9, 16
 * (any type). Opset 1 forms of Equal, Less, Greater, And, Or, Xor broadcast only with broadcast=1, B
 * aligned at axis (vcc_broadcast); from opset 7 numpy broadcasting. Comparisons of floats follow IEEE
 * 754 (any comparison with a NaN is false), as numpy and ONNX's reference. Gradients as PyTorch
 * autograd: comparisons and logic ops have none (bool outputs); Where (where_backward in
 * derivatives.yaml): dX = dOut where cond, dY = dOut where not cond, each summed back to its operand's
 * shape (vcc_diff_sum_to); cond gets none.
 */
#include "ops.h"

#include <inttypes.h>
#include <stdlib.h>

/* ------------------------------------------------------------------ comparisons and logic ops */

/* Equal, Less, Greater, And, Or, Xor before opset 7: broadcasting only with broadcast=1, B aligned at axis. */
static const VccAttrSpec legacy_broadcast_attrs[] = {
    {"broadcast", 1, 6, VCC_A_INT}, {"axis", 1, 6, VCC_A_INT}, {NULL, 0, 0, 0},
};
static const VccAttrSpec no_attrs[] = {{NULL, 0, 0, 0}};

/* The runtime's code of comparison or logic op op (runtime/elem/compare.h). */
static const char *compare_code(VccOp op) {
    switch (op) {
    case VCC_OP_EQUAL: return "VCC_CMP_EQ";
    case VCC_OP_LESS: return "VCC_CMP_LT";
    case VCC_OP_LESS_OR_EQUAL: return "VCC_CMP_LE";
    case VCC_OP_GREATER: return "VCC_CMP_GT";
    case VCC_OP_GREATER_OR_EQUAL: return "VCC_CMP_GE";
    case VCC_OP_AND: return "VCC_CMP_AND";
    case VCC_OP_OR: return "VCC_CMP_OR";
    default: return "VCC_CMP_XOR";
    }
}

/* Input i of comparison or logic node n, of the types its op takes: bool for And, Or, Xor; any number
 * type for Less, LessOrEqual, Greater, GreaterOrEqual; those and bool for Equal. NULL with an error. */
static const VccTensor *compare_input(VccCtx *ctx, const VccGraph *g, const VccNode *n, int i) {
    if (n->op == VCC_OP_AND || n->op == VCC_OP_OR || n->op == VCC_OP_XOR) return vcc_need_input(ctx, g, n, i, VCC_BOOL);
    if (n->op == VCC_OP_EQUAL && i < n->nin && n->in[i] >= 0 && g->tensors[n->in[i]].dtype == VCC_BOOL)
        return &g->tensors[n->in[i]];
    return vcc_need_numeric(ctx, g, n, i);
}

/* The broadcast of comparison or logic node n's two inputs, both of one type the op takes; false with an
 * error naming the node. */
static bool compare_broadcast(VccCtx *ctx, const VccGraph *g, const VccNode *n, VccBroadcast *bc) {
    const VccTensor *a = compare_input(ctx, g, n, 0), *b;
    if (!a || !(b = compare_input(ctx, g, n, 1))) return false;
    if (a->dtype != b->dtype) {
        vcc_error(ctx, "node '%s' (%s): input 1 '%s' has dtype %s, expected input 0's %s", n->name, vcc_node_op(n),
                  b->name, vcc_dtype_name(b->dtype), vcc_dtype_name(a->dtype));
        return false;
    }
    return vcc_broadcast(ctx, g, n, &a->shape, &b->shape, bc);
}

/* (A, B) -> bool Y of the broadcast shape. */
static VccStatus compare_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    VccBroadcast bc;
    if (!compare_broadcast(ctx, g, n, &bc)) return VCC_ERR_SHAPE;
    return vcc_put_output(ctx, g, n, check, n->out[0], VCC_BOOL, &bc.y) ? VCC_OK : VCC_ERR_SHAPE;
}

static VccStatus compare_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    VccBroadcast bc;
    if (!compare_broadcast(e->ctx, e->g, n, &bc)) return VCC_ERR_SHAPE;
    vcc_emit_bcast_desc(e, &bc);
    fprintf(e->f, "        compare_forward(rt, %s, %s, &d, %s, %s, %s);\n    }\n", compare_code(n->op),
            vcc_emit_et(e->g->tensors[n->in[0]].dtype), vcc_emit_ptr(e, n->in[0]), vcc_emit_ptr(e, n->in[1]),
            vcc_emit_ptr(e, n->out[0]));
    return VCC_OK;
}

/* No gradient rule: a bool output carries no gradient, so none reaches these nodes. */
#define COMPARE_OP(e, attrs, check)                                                                               \
    const VccOpDef vcc_def_##e = {0, 0, attrs, check, NULL, compare_shape, NULL, compare_emit}

COMPARE_OP(EQUAL, legacy_broadcast_attrs, vcc_legacy_bcast_check_attrs);
COMPARE_OP(LESS, legacy_broadcast_attrs, vcc_legacy_bcast_check_attrs);
COMPARE_OP(LESS_OR_EQUAL, no_attrs, NULL);
COMPARE_OP(GREATER, legacy_broadcast_attrs, vcc_legacy_bcast_check_attrs);
COMPARE_OP(GREATER_OR_EQUAL, no_attrs, NULL);
COMPARE_OP(AND, legacy_broadcast_attrs, vcc_legacy_bcast_check_attrs);
COMPARE_OP(OR, legacy_broadcast_attrs, vcc_legacy_bcast_check_attrs);
COMPARE_OP(XOR, legacy_broadcast_attrs, vcc_legacy_bcast_check_attrs);

/* ------------------------------------------------------------------ Not */

/* bool X -> bool Y of X's shape */
static VccStatus not_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    const VccTensor *x = vcc_need_input(ctx, g, n, 0, VCC_BOOL);
    if (!x) return VCC_ERR_SHAPE;
    return vcc_put_output(ctx, g, n, check, n->out[0], VCC_BOOL, &x->shape) ? VCC_OK : VCC_ERR_SHAPE;
}

static VccStatus not_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    fprintf(e->f, "    not_forward(rt, %" PRId64 ", %s, %s);\n", vcc_emit_numel(e, n->out[0]), vcc_emit_ptr(e, n->in[0]),
            vcc_emit_ptr(e, n->out[0]));
    return VCC_OK;
}

const VccOpDef vcc_def_NOT = {VCC_OPF_INPLACE, 0, no_attrs, NULL, NULL, not_shape, NULL, not_emit};

/* ------------------------------------------------------------------ Where */

/* Where's operands (cond, X, Y) aligned to its output: in[i] of the output's rank with 1 along the dims
 * operand i is broadcast in (numpy broadcasting of three shapes, right-aligned). */
typedef struct {
    VccShape in[3], y;
} WhereBroadcast;

/* The broadcast of shapes s[0..2] (cond, X, Y) of node n; false with an error naming the node. */
static bool where_broadcast(VccCtx *ctx, const VccNode *n, const VccShape *const s[3], WhereBroadcast *wb) {
    int r = 0;
    for (int i = 0; i < 3; i++) r = s[i]->rank > r ? s[i]->rank : r;
    wb->y.rank = r;
    for (int i = 0; i < 3; i++) wb->in[i].rank = r;
    for (int d = 0; d < r; d++) {
        int64_t y = 1;
        for (int i = 0; i < 3; i++) {
            int off = r - s[i]->rank;
            int64_t v = d < off ? 1 : s[i]->dims[d - off];
            wb->in[i].dims[d] = v;
            if (v != 1 && y != 1 && v != y) {
                char a[128], b[128], c[128];
                vcc_shape_str(a, sizeof a, s[0]);
                vcc_shape_str(b, sizeof b, s[1]);
                vcc_shape_str(c, sizeof c, s[2]);
                vcc_error(ctx, "node '%s' (%s): cannot broadcast condition %s, X %s and Y %s", n->name, vcc_node_op(n),
                          a, b, c);
                return false;
            }
            if (v != 1) y = v;
        }
        wb->y.dims[d] = y;
    }
    return true;
}

/* The broadcast of Where node n's inputs: bool cond, X and Y of one type; false with an error. */
static bool node_where_broadcast(VccCtx *ctx, const VccGraph *g, const VccNode *n, WhereBroadcast *wb) {
    const VccTensor *c = vcc_need_input(ctx, g, n, 0, VCC_BOOL);
    if (!c || n->nin != 3 || n->in[1] < 0 || n->in[2] < 0) {
        if (c) vcc_operands_missing(ctx, n);
        return false;
    }
    const VccTensor *x = &g->tensors[n->in[1]], *y = &g->tensors[n->in[2]];
    if (x->dtype == VCC_DT_UNDEF || x->dtype != y->dtype) {
        vcc_error(ctx, "node '%s' (%s): input 2 '%s' has dtype %s, expected input 1's %s", n->name, vcc_node_op(n),
                  y->name, vcc_dtype_name(y->dtype), vcc_dtype_name(x->dtype));
        return false;
    }
    const VccShape *s[3] = {&c->shape, &x->shape, &y->shape};
    return where_broadcast(ctx, n, s, wb);
}

/* (bool cond, X, Y) -> X's type, the broadcast shape of the three */
static VccStatus where_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    WhereBroadcast wb;
    if (!node_where_broadcast(ctx, g, n, &wb)) return VCC_ERR_SHAPE;
    return vcc_put_output(ctx, g, n, check, n->out[0], g->tensors[n->in[1]].dtype, &wb.y) ? VCC_OK : VCC_ERR_SHAPE;
}

/* "{ static const VccWhereDesc d = {...};": the output's dims of size 1 dropped and neighbouring dims that
 * all three operands read alike (whole, or broadcast) merged (as vcc_bcast_collapse for two). */
static void emit_where_desc(VccEmit *e, const WhereBroadcast *wb) {
    int64_t dims[VCC_MAX_RANK], s[3][VCC_MAX_RANK], total = 1, step[3] = {1, 1, 1};
    bool f[3][VCC_MAX_RANK];
    int r = 0;
    for (int d = 0; d < wb->y.rank; d++) {
        int64_t n = wb->y.dims[d];
        if (n == 1) continue;
        bool w[3];
        for (int i = 0; i < 3; i++) w[i] = wb->in[i].dims[d] == n;
        if (r > 0 && f[0][r - 1] == w[0] && f[1][r - 1] == w[1] && f[2][r - 1] == w[2]) {
            dims[r - 1] *= n;
            continue;
        }
        dims[r] = n;
        for (int i = 0; i < 3; i++) f[i][r] = w[i];
        r++;
    }
    for (int d = r - 1; d >= 0; d--) {
        for (int i = 0; i < 3; i++) {
            s[i][d] = f[i][d] ? step[i] : 0;
            if (f[i][d]) step[i] *= dims[d];
        }
        total *= dims[d];
    }
    if (r == 0) { /* one element */
        dims[0] = s[0][0] = s[1][0] = s[2][0] = 1;
        r = 1;
    }
    const int64_t *lists[4] = {dims, s[0], s[1], s[2]};
    int lens[4] = {r, r, r, r};
    fprintf(e->f, "    {\n        static const VccWhereDesc d = {%d, %" PRId64 ", ", r, total);
    vcc_emit_i64s(e, 4, lists, lens);
    fputs("};\n", e->f);
}

static VccStatus where_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    WhereBroadcast wb;
    if (!node_where_broadcast(e->ctx, e->g, n, &wb)) return VCC_ERR_SHAPE;
    emit_where_desc(e, &wb);
    fprintf(e->f, "        where_forward(rt, %s, &d, %s, %s, %s, %s);\n    }\n",
            vcc_emit_et(e->g->tensors[n->in[1]].dtype), vcc_emit_ptr(e, n->in[0]), vcc_emit_ptr(e, n->in[1]),
            vcc_emit_ptr(e, n->in[2]), vcc_emit_ptr(e, n->out[0]));
    return VCC_OK;
}

/* The gradient of Where node k's input i (1: X, 2: Y) at the output's shape: input i's own gradient
 * tensor where it has that shape, else a GRAD_TEMP "<output>.grad_<suffix>" to be summed to it. */
static int where_partial(VccDiff *d, int k, int i, const char *suffix) {
    int y = d->g->nodes[k].out[0], x = d->g->nodes[k].in[i];
    VccShape s = d->g->tensors[y].shape;
    if (vcc_same_shape(&s, &d->g->tensors[x].shape)) return vcc_diff_new_grad(d, x);
    int t = vcc_tensor_add_unique(d->g, VCC_F32, &s, VCC_T_GRAD_TEMP, "%s.grad_%s", d->g->tensors[y].name, suffix);
    vcc_diff_grow(d);
    return t;
}

/* Where(cond, X, Y) = Out: WhereGrad(cond, dOut) -> (dX, dY) at Out's shape (dOut where cond, dOut where
 * not), each then summed to its operand's shape; an operand no parameter reaches gets none. */
static VccStatus where_grad(VccDiff *d, int k) {
    VccNode n = d->g->nodes[k];
    bool want[2] = {d->req[n.in[1]], d->req[n.in[2]]};
    if (!want[0] && !want[1]) return VCC_OK;
    int out[2] = {want[0] ? where_partial(d, k, 1, "x") : -1, want[1] ? where_partial(d, k, 2, "y") : -1};
    int in[2] = {n.in[0], vcc_diff_dy(d, k, 0)};
    vcc_diff_add_node(d, VCC_OP_WHERE_GRAD, k, "grad", in, 2, out, 2);
    for (int i = 0; i < 2; i++) {
        if (out[i] < 0) continue;
        int x = n.in[1 + i];
        vcc_diff_accum(d, x, vcc_diff_sum_to(d, k, i ? "sum_y" : "sum_x", out[i], x, -1, 1.0f));
    }
    return VCC_OK;
}

const VccOpDef vcc_def_WHERE = {VCC_OPF_INPLACE, 0, no_attrs, NULL, NULL, where_shape, where_grad, where_emit};

/* ------------------------------------------------------------------ WhereGrad */

/* The broadcast of WhereGrad node n's cond to its dOut (A: cond, B and Y: dOut's shape); false when cond
 * does not broadcast to dOut's shape. */
static bool where_grad_broadcast(const VccGraph *g, const VccNode *n, VccBroadcast *bc) {
    const VccShape *c = &g->tensors[n->in[0]].shape, *y = &g->tensors[n->in[1]].shape;
    if (c->rank > y->rank) return false;
    bc->axis = -1;
    bc->y = bc->b = *y;
    bc->a.rank = y->rank;
    for (int d = 0; d < y->rank; d++) {
        int off = y->rank - c->rank;
        bc->a.dims[d] = d < off ? 1 : c->dims[d - off];
        if (bc->a.dims[d] != 1 && bc->a.dims[d] != y->dims[d]) return false;
    }
    return true;
}

/* (bool cond, dOut) -> (dX or absent, dY or absent), float32 of dOut's shape; cond broadcasts to it */
static VccStatus where_grad_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    VccBroadcast bc;
    (void)check;
    if (n->nin != 2 || n->nout != 2) return vcc_operands_missing(ctx, n);
    const VccTensor *dy = NULL;
    if (!vcc_need_input(ctx, g, n, 0, VCC_BOOL) || !(dy = vcc_need_input(ctx, g, n, 1, VCC_F32)))
        return VCC_ERR_SHAPE;
    if (!where_grad_broadcast(g, n, &bc) || (n->out[0] < 0 && n->out[1] < 0)) return vcc_shape_mismatch(ctx, n);
    for (int i = 0; i < 2; i++)
        if (!vcc_put_output(ctx, g, n, true, n->out[i], VCC_F32, &dy->shape)) return VCC_ERR_SHAPE;
    return VCC_OK;
}

static VccStatus where_grad_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    VccBroadcast bc;
    if (!where_grad_broadcast(e->g, n, &bc)) return vcc_shape_mismatch(e->ctx, n);
    vcc_emit_bcast_desc(e, &bc);
    fprintf(e->f, "        where_backward(rt, &d, %s, %s, %s, %s);\n    }\n", vcc_emit_ptr(e, n->in[0]),
            vcc_emit_f32(e, n->in[1]), vcc_emit_f32(e, n->out[0]), vcc_emit_f32(e, n->out[1]));
    return VCC_OK;
}

const VccOpDef vcc_def_WHERE_GRAD = {0, 0, NULL, NULL, NULL, where_grad_shape, NULL, where_grad_emit};
