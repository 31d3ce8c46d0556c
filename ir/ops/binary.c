/*
 * binary.c — the binary family: elementwise ops of two inputs with broadcasting. Add, Sub, Mul, Div,
 * Pow, and the internal GradAccumulate (Add of equal shapes) and PowGrad.
 *
 * Kernels: runtime/{elem,proto,cpu,cuda}/binary.* (the per-element bodies in runtime/elem/binary.h).
 * Source: ONNX Operators "Add", "Sub", "Mul", "Div" (opsets 1 (consumed_inputs, dropped by canonical)
 * and 6: unidirectional broadcast with the broadcast and axis attributes; 7, 13, 14: multidirectional
 * numpy broadcasting) and "Pow" (1: broadcast and axis; 7, 12, 13, 15: multidirectional); float32
 * tensors train, the other number types run forward on the typed kernels (runtime/elem/typed.h);
 * vcc_broadcast says how each form aligns its operands. Gradients as PyTorch autograd
 * (derivatives.yaml: add, sub, mul, div, pow), each operand's reduced to its shape (vcc_diff_sum_to);
 * an operand no parameter reaches (a constant, an input) gets none.
 *
 * Letter legend: N batch, C channels, T time, H height, W width, S product of spatial dims.
 */
#include "ops.h"

#include <inttypes.h>
#include <stdlib.h>

/* ------------------------------------------------------------------ broadcasting */

/* Error "node 'x' (Op): cannot broadcast (a) with (b)<why>"; false. */
static bool no_broadcast(VccCtx *ctx, const VccNode *n, const VccShape *a, const VccShape *b, const char *why) {
    char s1[128], s2[128];
    vcc_shape_str(s1, sizeof s1, a);
    vcc_shape_str(s2, sizeof s2, b);
    vcc_error(ctx, "node '%s' (%s): cannot broadcast %s with %s%s", n->name, vcc_node_op(n), s1, s2, why);
    return false;
}

bool vcc_broadcast(VccCtx *ctx, const VccGraph *g, const VccNode *n, const VccShape *a, const VccShape *b,
                   VccBroadcast *out) {
    int ra = a->rank, rb = b->rank;
    out->axis = -1;
    if (g->opset < 7) { /* unidirectional: B to A's shape */
        out->y = out->a = *a;
        if (vcc_attr_int(n, "broadcast", 0) == 0) {
            out->b = *b;
            return vcc_same_shape(a, b) ||
                   no_broadcast(ctx, n, a, b, " (before opset 7, unequal shapes need broadcast=1)");
        }
        int64_t axis = vcc_attr_int(n, "axis", ra - rb);
        if (rb > ra || axis < 0 || axis > ra - rb)
            return no_broadcast(ctx, n, a, b, " (broadcast=1: B's dims must fit in A's from dim axis)");
        out->b.rank = ra;
        for (int i = 0; i < ra; i++) out->b.dims[i] = 1;
        for (int i = 0; i < rb; i++) {
            if (b->dims[i] != a->dims[axis + i] && b->dims[i] != 1)
                return no_broadcast(ctx, n, a, b, " (broadcast=1: each of B's dims must equal A's or be 1)");
            out->b.dims[axis + i] = b->dims[i];
        }
        out->axis = axis == ra - rb ? -1 : (int)axis;
        return true;
    }
    int r = ra > rb ? ra : rb;
    out->a.rank = out->b.rank = out->y.rank = r;
    for (int i = 0; i < r; i++) {
        int64_t da = i < r - ra ? 1 : a->dims[i - (r - ra)], db = i < r - rb ? 1 : b->dims[i - (r - rb)];
        if (da != db && da != 1 && db != 1) return no_broadcast(ctx, n, a, b, "");
        out->a.dims[i] = da;
        out->b.dims[i] = db;
        out->y.dims[i] = da == 1 ? db : da;
    }
    return true;
}

/* The broadcast of node n's inputs 0 and 1 (numbers of any type), or false with an error. */
static bool node_broadcast(VccCtx *ctx, const VccGraph *g, const VccNode *n, VccBroadcast *bc) {
    const VccTensor *a = vcc_need_numeric(ctx, g, n, 0), *b;
    return a && (b = vcc_need_numeric(ctx, g, n, 1)) && vcc_broadcast(ctx, g, n, &a->shape, &b->shape, bc);
}

/* (A, B) -> Y of the broadcast shape and A's type (forward nodes, and backward ones that compute with
 * these ops). Add, Sub, Mul and Div take two operands of one type (ONNX: T, T); Pow's exponent may have
 * another (Pow-12+: T, T1). Data that are not float32 run on the typed kernels (runtime/elem/typed.h). */
static VccStatus binary_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    VccBroadcast bc;
    if (!node_broadcast(ctx, g, n, &bc)) return VCC_ERR_SHAPE;
    const VccTensor *a = &g->tensors[n->in[0]], *b = &g->tensors[n->in[1]];
    if (n->op != VCC_OP_POW && a->dtype != b->dtype) {
        vcc_error(ctx, "node '%s' (%s): input 1 '%s' has dtype %s, expected input 0's %s", n->name, vcc_node_op(n),
                  b->name, vcc_dtype_name(b->dtype), vcc_dtype_name(a->dtype));
        return VCC_ERR_SHAPE;
    }
    return vcc_put_output(ctx, g, n, check, n->out[0], a->dtype, &bc.y) ? VCC_OK : VCC_ERR_SHAPE;
}

/* Attributes of opsets 1-6 (consumed_inputs: Add, Sub, Mul, Div 1-5; Pow never had it). */
static const VccAttrSpec arith_attrs[] = {
    {"consumed_inputs", 1, 5, VCC_A_INTS}, {"broadcast", 1, 6, VCC_A_INT}, {"axis", 1, 6, VCC_A_INT}, {NULL, 0, 0, 0},
};
static const VccAttrSpec pow_attrs[] = {
    {"broadcast", 1, 6, VCC_A_INT}, {"axis", 1, 6, VCC_A_INT}, {NULL, 0, 0, 0},
};

void vcc_legacy_bcast_check_attrs(VccCtx *ctx, const VccGraph *g, const VccNode *n) {
    (void)g;
    int64_t bc = vcc_attr_int(n, "broadcast", 0);
    if (bc != 0 && bc != 1) vcc_op_attr_problem(ctx, n, "%s attribute '%s'", "broadcast", "must be 0 or 1");
    if (vcc_attr_int(n, "axis", 0) < 0)
        vcc_op_attr_problem(ctx, n, "%s attribute '%s'", "axis", "a negative axis is not defined before opset 7");
}

/* ------------------------------------------------------------------ emission */

int vcc_bcast_collapse(const VccBroadcast *bc, int64_t ea, int64_t eb, int64_t *dims, int64_t *sa, int64_t *sb,
                       int64_t *total) {
    bool fa[VCC_MAX_RANK], fb[VCC_MAX_RANK];
    int r = 0;
    for (int i = 0; i < bc->y.rank; i++) {
        int64_t n = bc->y.dims[i];
        if (n == 1) continue;
        bool wa = bc->a.dims[i] == n, wb = bc->b.dims[i] == n;
        if (r > 0 && fa[r - 1] == wa && fb[r - 1] == wb) {
            dims[r - 1] *= n;
            continue;
        }
        dims[r] = n;
        fa[r] = wa;
        fb[r] = wb;
        r++;
    }
    *total = 1;
    for (int i = r - 1; i >= 0; i--) {
        sa[i] = fa[i] ? ea : 0;
        sb[i] = fb[i] ? eb : 0;
        if (fa[i]) ea *= dims[i];
        if (fb[i]) eb *= dims[i];
        *total *= dims[i];
    }
    return r;
}

static const char *binary_code(VccOp op) {
    switch (op) {
    case VCC_OP_ADD: return "VCC_BIN_ADD";
    case VCC_OP_SUB: return "VCC_BIN_SUB";
    case VCC_OP_MUL: return "VCC_BIN_MUL";
    case VCC_OP_DIV: return "VCC_BIN_DIV";
    default: return "VCC_BIN_POW";
    }
}

/* add_forward: the sum of two tensors of one shape (Add of equal shapes, GradAccumulate). */
static VccStatus emit_add(VccEmit *e, const VccNode *n) {
    fprintf(e->f, "    add_forward(rt, %" PRId64 ", %s, %s, %s);\n", vcc_emit_numel(e, n->out[0]),
            vcc_emit_f32(e, n->in[0]), vcc_emit_f32(e, n->in[1]), vcc_emit_f32(e, n->out[0]));
    return VCC_OK;
}

/* Add of equal shapes keeps its plain kernel (add_forward); every other float32 form is binary_forward,
 * other types typed_binary_forward. */
static VccStatus binary_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    VccBroadcast bc;
    if (!node_broadcast(e->ctx, e->g, n, &bc)) return VCC_ERR_SHAPE;
    if (vcc_node_typed(e->g, n)) {
        vcc_emit_bcast_desc(e, &bc);
        fprintf(e->f, "        typed_binary_forward(rt, %s, %s, %s, &d, %s, %s, %s);\n    }\n", binary_code(n->op),
                vcc_emit_et(e->g->tensors[n->in[0]].dtype), vcc_emit_et(e->g->tensors[n->in[1]].dtype),
                vcc_emit_ptr(e, n->in[0]), vcc_emit_ptr(e, n->in[1]), vcc_emit_ptr(e, n->out[0]));
        return VCC_OK;
    }
    if (n->op == VCC_OP_ADD && vcc_same_shape(&e->g->tensors[n->in[0]].shape, &e->g->tensors[n->in[1]].shape))
        return emit_add(e, n);
    vcc_emit_bcast_desc(e, &bc);
    fprintf(e->f, "        binary_forward(rt, %s, &d, %s, %s, %s);\n    }\n", binary_code(n->op),
            vcc_emit_f32(e, n->in[0]), vcc_emit_f32(e, n->in[1]), vcc_emit_f32(e, n->out[0]));
    return VCC_OK;
}

/* ------------------------------------------------------------------ gradients */

/* The broadcast of forward node k, which its shape rule already accepted. */
static VccBroadcast fwd_broadcast(VccDiff *d, int k) {
    VccBroadcast bc;
    const VccNode *n = &d->g->nodes[k];
    VCC_ASSERT(vcc_broadcast(d->ctx, d->g, n, &d->g->tensors[n->in[0]].shape, &d->g->tensors[n->in[1]].shape, &bc));
    return bc;
}

/* A new tensor of forward node k's output shape for a partial gradient toward its input i (i < 0: an
 * intermediate value), named "<output>.grad_<suffix>"; where input i has that shape, a gradient of input
 * i (vcc_diff_new_grad), which a parameter can own without a copy. */
static int partial(VccDiff *d, int k, int i, const char *suffix) {
    int y = d->g->nodes[k].out[0], x = i >= 0 ? d->g->nodes[k].in[i] : -1;
    VccShape s = d->g->tensors[y].shape;
    if (x >= 0 && vcc_same_shape(&s, &d->g->tensors[x].shape)) return vcc_diff_new_grad(d, x);
    int t = vcc_tensor_add_unique(d->g, VCC_F32, &s, VCC_T_GRAD_TEMP, "%s.grad_%s", d->g->tensors[y].name, suffix);
    vcc_diff_grow(d);
    return t;
}

/* A backward node "<forward>.grad_<suffix>": op(x, v) -> out, all of forward node k's output shape but v.
 * v_is_b: v is the forward's B, broadcast as the forward node broadcasts it (the node keeps the
 * forward's attributes); else v has Y's shape (A always has it before opset 7) and the legacy
 * attributes are dropped. Returns out. */
static int bwd_binary(VccDiff *d, VccOp op, int k, const char *suffix, int x, int v, bool v_is_b, int out) {
    int in[2] = {x, v};
    char *name = vcc_strfmt("grad_%s", suffix);
    int j = vcc_diff_add_node(d, op, k, name, in, 2, &out, 1);
    free(name);
    if (!v_is_b) {
        vcc_attr_drop(&d->g->nodes[j], "broadcast");
        vcc_attr_drop(&d->g->nodes[j], "axis");
    }
    return out;
}

/* Operand i (0: A, 1: B) of forward node k gets partial gradient gy (Y's shape) times scale, summed to
 * its shape. */
static void give(VccDiff *d, int k, int i, int gy, float scale) {
    VccBroadcast bc = fwd_broadcast(d, k);
    int x = d->g->nodes[k].in[i];
    int gx = vcc_diff_sum_to(d, k, i ? "sum_b" : "sum_a", gy, x, i ? bc.axis : -1, scale);
    vcc_diff_accum(d, x, gx);
}

/* Add(A, B): dA = dY, dB = dY (each summed to its operand's shape) */
static VccStatus add_grad(VccDiff *d, int k) {
    VccNode n = d->g->nodes[k];
    int dy = vcc_diff_dy(d, k, 0);
    for (int i = 0; i < 2; i++)
        if (d->req[n.in[i]]) give(d, k, i, dy, 1.0f);
    return VCC_OK;
}

/* Sub(A, B): dA = dY, dB = -dY */
static VccStatus sub_grad(VccDiff *d, int k) {
    VccNode n = d->g->nodes[k];
    int dy = vcc_diff_dy(d, k, 0);
    for (int i = 0; i < 2; i++)
        if (d->req[n.in[i]]) give(d, k, i, dy, i ? -1.0f : 1.0f);
    return VCC_OK;
}

/* Mul(A, B): dA = dY * B, dB = dY * A */
static VccStatus mul_grad(VccDiff *d, int k) {
    VccNode n = d->g->nodes[k];
    int dy = vcc_diff_dy(d, k, 0);
    if (d->req[n.in[0]]) {
        int ga = bwd_binary(d, VCC_OP_MUL, k, "a", dy, n.in[1], true, partial(d, k, 0, "a"));
        give(d, k, 0, ga, 1.0f);
    }
    if (d->req[n.in[1]]) {
        int gb = bwd_binary(d, VCC_OP_MUL, k, "b", dy, n.in[0], false, partial(d, k, 1, "b"));
        give(d, k, 1, gb, 1.0f);
    }
    return VCC_OK;
}

/* Div(A, B) = Y: dA = dY / B, dB = -dY * (Y / B) (PyTorch: -grad * ((self / other) / other)) */
static VccStatus div_grad(VccDiff *d, int k) {
    VccNode n = d->g->nodes[k];
    int dy = vcc_diff_dy(d, k, 0);
    if (d->req[n.in[0]]) {
        int ga = bwd_binary(d, VCC_OP_DIV, k, "a", dy, n.in[1], true, partial(d, k, 0, "a"));
        give(d, k, 0, ga, 1.0f);
    }
    if (d->req[n.in[1]]) {
        int q = bwd_binary(d, VCC_OP_DIV, k, "y_over_b", n.out[0], n.in[1], true, partial(d, k, -1, "y_over_b"));
        int gb = bwd_binary(d, VCC_OP_MUL, k, "b", dy, q, false, partial(d, k, 1, "b"));
        give(d, k, 1, gb, -1.0f);
    }
    return VCC_OK;
}

/* Pow(A, B) = Y: PowGrad(A, B, Y, dY) -> (dA, dB) at Y's shape, each then summed to its operand's shape.
 * Y is read only for dB (absent when B needs no gradient: x ** 2 with a constant exponent). */
static VccStatus pow_grad(VccDiff *d, int k) {
    VccNode n = d->g->nodes[k];
    bool wb = d->req[n.in[1]];
    int out[2] = {d->req[n.in[0]] ? partial(d, k, 0, "a") : -1, wb ? partial(d, k, 1, "b") : -1};
    int in[4] = {n.in[0], n.in[1], wb ? n.out[0] : -1, vcc_diff_dy(d, k, 0)};
    vcc_diff_add_node(d, VCC_OP_POW_GRAD, k, "grad", in, 4, out, 2);
    for (int i = 0; i < 2; i++)
        if (out[i] >= 0) give(d, k, i, out[i], 1.0f);
    return VCC_OK;
}

const VccOpDef vcc_def_ADD = {VCC_OPF_INPLACE | VCC_OPF_TYPED, 0, arith_attrs, vcc_legacy_bcast_check_attrs, NULL, binary_shape, add_grad,
                              binary_emit};
const VccOpDef vcc_def_SUB = {VCC_OPF_INPLACE | VCC_OPF_TYPED, 0, arith_attrs, vcc_legacy_bcast_check_attrs, NULL, binary_shape, sub_grad,
                              binary_emit};
const VccOpDef vcc_def_MUL = {VCC_OPF_INPLACE | VCC_OPF_TYPED, 0, arith_attrs, vcc_legacy_bcast_check_attrs, NULL, binary_shape, mul_grad,
                              binary_emit};
const VccOpDef vcc_def_DIV = {VCC_OPF_INPLACE | VCC_OPF_TYPED, 0, arith_attrs, vcc_legacy_bcast_check_attrs, NULL, binary_shape, div_grad,
                              binary_emit};
const VccOpDef vcc_def_POW = {VCC_OPF_INPLACE | VCC_OPF_TYPED, 0, pow_attrs, vcc_legacy_bcast_check_attrs, NULL, binary_shape, pow_grad,
                              binary_emit};

/* ------------------------------------------------------------------ PowGrad */

/* (A, B, Y or absent, dY) -> (dA or absent, dB or absent), dY and the outputs of the forward's Y shape */
static VccStatus pow_grad_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    VccBroadcast bc;
    (void)check;
    if (n->nin != 4 || n->nout != 2) return vcc_operands_missing(ctx, n);
    if (!vcc_need_input(ctx, g, n, 0, VCC_F32) || !vcc_need_input(ctx, g, n, 1, VCC_F32) ||
        !node_broadcast(ctx, g, n, &bc))
        return VCC_ERR_SHAPE;
    const VccTensor *dy = vcc_need_input(ctx, g, n, 3, VCC_F32);
    if (!dy || !vcc_same_shape(&dy->shape, &bc.y)) return vcc_shape_mismatch(ctx, n);
    const VccTensor *y = n->in[2] >= 0 ? &g->tensors[n->in[2]] : NULL;
    if (y && (y->dtype != VCC_F32 || !vcc_same_shape(&y->shape, &bc.y))) return vcc_shape_mismatch(ctx, n);
    if ((n->out[1] >= 0) != (y != NULL)) return vcc_shape_mismatch(ctx, n); /* dB needs Y */
    for (int i = 0; i < 2; i++)
        if (!vcc_put_output(ctx, g, n, true, n->out[i], VCC_F32, &bc.y)) return VCC_ERR_SHAPE;
    return VCC_OK;
}

static VccStatus pow_grad_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    VccBroadcast bc;
    if (!node_broadcast(e->ctx, e->g, n, &bc)) return VCC_ERR_SHAPE;
    vcc_emit_bcast_desc(e, &bc);
    fprintf(e->f, "        pow_backward(rt, &d, %s, %s, %s, %s, %s, %s);\n    }\n", vcc_emit_f32(e, n->in[0]),
            vcc_emit_f32(e, n->in[1]), vcc_emit_f32(e, n->in[2]), vcc_emit_f32(e, n->in[3]),
            vcc_emit_f32(e, n->out[0]), vcc_emit_f32(e, n->out[1]));
    return VCC_OK;
}

const VccOpDef vcc_def_POW_GRAD = {0, 0, NULL, NULL, NULL, pow_grad_shape, NULL, pow_grad_emit};

/* ------------------------------------------------------------------ GradAccumulate */

/* (a, b) -> a + b, all of one shape */
static VccStatus accum_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    const VccTensor *a = vcc_need_input(ctx, g, n, 0, VCC_F32), *b;
    if (!a || !(b = vcc_need_input(ctx, g, n, 1, VCC_F32)) || n->nout != 1 || !vcc_same_shape(&a->shape, &b->shape))
        return vcc_shape_mismatch(ctx, n);
    return vcc_put_output(ctx, g, n, true, n->out[0], VCC_F32, &a->shape) ? VCC_OK : VCC_ERR_SHAPE;
}

static VccStatus accum_emit(VccEmit *e, int k) { return emit_add(e, &e->g->nodes[k]); }

const VccOpDef vcc_def_GRAD_ACCUM = {VCC_OPF_INPLACE, 0, NULL, NULL, NULL, accum_shape, NULL, accum_emit};
