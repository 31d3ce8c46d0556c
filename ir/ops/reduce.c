/*
 * reduce.c — the reduce family: reductions over axes. ReduceSum, ReduceMean, ReduceMax, ReduceMin, their
 * gradients (ReduceSumGrad, ReduceMeanGrad, ReduceMaxGrad for both Max and Min), and ReduceToShape, the
 * sum of a broadcast operand's gradient back to its shape that every family's gradient rules reach
 * through vcc_diff_sum_to.
 *
 * Kernels: runtime/{elem,proto,cpu,cuda}/reduce.* (reduce_forward, reduce_backward; double accumulation).
 * Source: ONNX Operators "ReduceSum" (1: axes attribute; 11: negative axes; 13: axes an optional input,
 * noop_with_empty_axes), "ReduceMean", "ReduceMax", "ReduceMin" (1; 11: negative axes; 12, 13, 20: more
 * types; 18: axes an optional input, noop_with_empty_axes); keepdims (default 1) in every opset;
 * negative axes in every opset (as the layout family, ir/ops/layout.c). No axes
 * (or an empty list) reduces every axis, unless noop_with_empty_axes=1, which makes the op an identity.
 * Canonical form: the axes input (which must be a constant) becomes the axes attribute of the earlier
 * opsets, so every form reads its axes one way.
 * Gradients as PyTorch autograd: sum -> dY broadcast back; mean -> dY / count; max and min -> dY split
 * evenly among the elements equal to the result (torch.amax / amin and the full max() / min(): the ONNX
 * exports of x.amax(dim) and of x.max(dim)'s values are both ReduceMax, which carries no indices, so vcc
 * follows amax; torch.max(dim) would give all of it to one element, which differs only on exact ties).
 *
 * Letter legend: N batch, C channels, T time, H height, W width, S product of spatial dims.
 */
#include "ops.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ axes */

/* The dims node n (a reduction or its gradient: its attributes in canonical form) reduces of an input
 * of rank r: mask[i]. *noop: the node reduces nothing (no axes and noop_with_empty_axes=1). False with
 * an error for an axis out of range or given twice. */
static bool reduce_dims(VccCtx *ctx, const VccNode *n, int r, bool *mask, bool *noop) {
    int64_t axes[VCC_MAX_RANK];
    int na = vcc_attr_ints(n, "axes", axes, VCC_MAX_RANK);
    for (int i = 0; i < r; i++) mask[i] = na <= 0;
    *noop = na <= 0 && vcc_attr_int(n, "noop_with_empty_axes", 0) != 0;
    if (*noop) {
        for (int i = 0; i < r; i++) mask[i] = false;
        return true;
    }
    if (na > r) {
        vcc_error(ctx, "node '%s' (%s): %d axes for an input of rank %d", n->name, vcc_node_op(n), na, r);
        return false;
    }
    for (int i = 0; i < na; i++) {
        int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
        if (a < 0 || a >= r || mask[a]) {
            vcc_error(ctx, "node '%s' (%s): axis %lld is %s for an input of rank %d", n->name, vcc_node_op(n),
                      (long long)axes[i], a < 0 || a >= r ? "out of range" : "given twice", r);
            return false;
        }
        mask[a] = true;
    }
    return true;
}

/* The output shape of node n for an input of shape x: reduced dims kept as 1 (keepdims=1, the default)
 * or removed. mask and noop as reduce_dims gives them. False with an error. */
static bool reduced_shape(VccCtx *ctx, const VccNode *n, const VccShape *x, VccShape *y, bool *mask, bool *noop) {
    if (!reduce_dims(ctx, n, x->rank, mask, noop)) return false;
    bool keep = vcc_attr_int(n, "keepdims", 1) != 0;
    y->rank = 0;
    for (int i = 0; i < x->rank; i++) {
        if (!mask[i]) y->dims[y->rank++] = x->dims[i];
        else if (keep) y->dims[y->rank++] = 1;
    }
    return true;
}

/* ------------------------------------------------------------------ attributes and canonical form */

static const VccAttrSpec sum_attrs[] = {
    {"axes", 1, 12, VCC_A_INTS}, {"keepdims", 1, VCC_OPSET_NOW, VCC_A_INT},
    {"noop_with_empty_axes", 13, VCC_OPSET_NOW, VCC_A_INT}, {NULL, 0, 0, 0},
};
/* ReduceMean, ReduceMax, ReduceMin */
static const VccAttrSpec reduce_attrs[] = {
    {"axes", 1, 17, VCC_A_INTS}, {"keepdims", 1, VCC_OPSET_NOW, VCC_A_INT},
    {"noop_with_empty_axes", 18, VCC_OPSET_NOW, VCC_A_INT}, {NULL, 0, 0, 0},
};

static void reduce_check_attrs(VccCtx *ctx, const VccGraph *g, const VccNode *n) {
    static const char *const flags[] = {"keepdims", "noop_with_empty_axes"};
    for (int i = 0; i < 2; i++) {
        int64_t v = vcc_attr_int(n, flags[i], 0);
        if (v != 0 && v != 1) vcc_op_attr_problem(ctx, n, "%s attribute '%s'", flags[i], "must be 0 or 1");
    }
    int since = n->op == VCC_OP_REDUCESUM ? 13 : 18; /* the opset that made axes an input */
    if (n->nin > 2)
        vcc_op_attr_problem(ctx, n, "%s %s", "with more than 2 inputs", "the op has data and axes inputs only");
    if (n->nin > 1 && n->in[1] >= 0 && g->opset < since) {
        char why[96];
        snprintf(why, sizeof why, "exists from opset %d; the model imports opset %lld", since, (long long)g->opset);
        vcc_op_attr_problem(ctx, n, "%s input '%s'", "axes", why);
    } else if (n->nin > 1 && n->in[1] >= 0) {
        const VccTensor *t = &g->tensors[n->in[1]];
        if (!vcc_is_initializer(g, n->in[1]) || (!t->data && vcc_shape_numel(&t->shape) != 0) || t->dtype != VCC_I64 ||
            t->shape.rank != 1)
            vcc_op_attr_problem(ctx, n, "%s input '%s'", "axes",
                                "must be a constant 1-D int64 tensor (an initializer or a Constant)");
    }
}

/* The axes input (ReduceSum 13+, the others 18+), a constant, becomes the axes attribute; an empty one
 * is no attribute (every axis, or none with noop_with_empty_axes=1). */
static VccStatus reduce_canon(VccCtx *ctx, VccGraph *g, int k) {
    (void)ctx;
    VccNode *n = &g->nodes[k];
    if (n->nin < 2) return VCC_OK;
    if (n->in[1] >= 0) {
        const VccTensor *t = &g->tensors[n->in[1]];
        int cnt = (int)(t->data_bytes / sizeof(int64_t));
        if (cnt > 0) vcc_attr_set_ints(n, "axes", t->data, cnt);
    }
    n->nin = 1;
    return VCC_OK;
}

/* X -> Y reduced over the node's axes */
static VccStatus reduce_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    const VccTensor *x = vcc_need_input(ctx, g, n, 0, VCC_F32);
    bool mask[VCC_MAX_RANK], noop;
    VccShape y;
    if (!x || !reduced_shape(ctx, n, &x->shape, &y, mask, &noop)) return VCC_ERR_SHAPE;
    if (n->nin != 1) return vcc_operands_missing(ctx, n); /* the axes input is an attribute by now */
    return vcc_put_output(ctx, g, n, check, n->out[0], VCC_F32, &y) ? VCC_OK : VCC_ERR_SHAPE;
}

/* ------------------------------------------------------------------ emission */

/* "{ static const VccReduce d = {...};" for X of shape x reduced over the dims of mask: size-1 dims
 * dropped, neighbouring dims of one kind (both kept or both reduced) merged. */
static void emit_reduce_desc(VccEmit *e, const VccShape *x, const bool *mask) {
    int64_t dims[VCC_MAX_RANK], stride[VCC_MAX_RANK];
    int64_t kd[VCC_MAX_RANK], ks[VCC_MAX_RANK], rd[VCC_MAX_RANK], rs[VCC_MAX_RANK];
    bool red[VCC_MAX_RANK];
    int r = 0, nk = 0, nr = 0;
    for (int i = 0; i < x->rank; i++) {
        if (x->dims[i] == 1) continue;
        if (r > 0 && red[r - 1] == mask[i]) {
            dims[r - 1] *= x->dims[i];
            continue;
        }
        dims[r] = x->dims[i];
        red[r++] = mask[i];
    }
    int64_t m = 1, nout = 1, nred = 1;
    for (int i = r - 1; i >= 0; i--) {
        stride[i] = m;
        m *= dims[i];
    }
    for (int i = 0; i < r; i++) {
        if (red[i]) {
            rd[nr] = dims[i];
            rs[nr++] = stride[i];
            nred *= dims[i];
        } else {
            kd[nk] = dims[i];
            ks[nk++] = stride[i];
            nout *= dims[i];
        }
    }
    if (!nk) kd[0] = 1, ks[0] = 0, nk = 1;
    if (!nr) rd[0] = 1, rs[0] = 0, nr = 1;
    const int64_t *lists[4] = {kd, ks, rd, rs};
    int lens[4] = {nk, nk, nr, nr};
    fprintf(e->f, "    {\n        static const VccReduce d = {%d, %d, %" PRId64 ", %" PRId64 ", ", nk, nr, nout, nred);
    vcc_emit_i64s(e, 4, lists, lens);
    fputs("};\n", e->f);
}

static const char *reduce_kind(VccOp op) {
    switch (op) {
    case VCC_OP_REDUCESUM: case VCC_OP_REDUCESUM_GRAD: case VCC_OP_REDUCE_TO_SHAPE: return "VCC_RED_SUM";
    case VCC_OP_REDUCEMEAN: case VCC_OP_REDUCEMEAN_GRAD: return "VCC_RED_MEAN";
    case VCC_OP_REDUCEMIN: return "VCC_RED_MIN";
    default: return "VCC_RED_MAX"; /* ReduceMax; ReduceMaxGrad for Max and Min alike */
    }
}

/* reduce_forward (a noop_with_empty_axes identity is a reduction over no dims: a copy) */
static VccStatus reduce_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    bool mask[VCC_MAX_RANK], noop;
    VccShape y;
    if (!reduced_shape(e->ctx, n, &e->g->tensors[n->in[0]].shape, &y, mask, &noop)) return VCC_ERR_SHAPE;
    if (vcc_emit_numel(e, n->in[0]) == 0) {
        /* reductions of empty sets: ReduceSum gives 0; ReduceMax and ReduceMin -inf and +inf from opset 18
         * (ONNX's operator text); ReduceMean's, and the others' before 18, are undefined */
        bool sum = n->op == VCC_OP_REDUCESUM, ext = n->op != VCC_OP_REDUCEMEAN && e->g->opset >= 18;
        if (!sum && !ext) {
            vcc_error(e->ctx, "node '%s' (%s): a reduction of an empty set, which ONNX leaves undefined here",
                      n->name, vcc_node_op(n));
            return VCC_ERR_UNSUPPORTED;
        }
        fprintf(e->f, "    fill_forward(rt, %" PRId64 ", %s, %s);\n", vcc_emit_numel(e, n->out[0]),
                sum ? "0.0f" : n->op == VCC_OP_REDUCEMAX ? "-INFINITY" : "INFINITY", vcc_emit_f32(e, n->out[0]));
        return VCC_OK;
    }
    emit_reduce_desc(e, &e->g->tensors[n->in[0]].shape, mask);
    fprintf(e->f, "        reduce_forward(rt, %s, &d, 1.0f, %s, %s);\n    }\n", reduce_kind(n->op),
            vcc_emit_f32(e, n->in[0]), vcc_emit_f32(e, n->out[0]));
    return VCC_OK;
}

/* ------------------------------------------------------------------ gradients of the reductions */

/* ReduceSum(X) -> ReduceSumGrad(dY) -> dX; ReduceMean -> ReduceMeanGrad(dY); ReduceMax, ReduceMin ->
 * ReduceMaxGrad(X, Y, dY). An identity (noop_with_empty_axes) passes dY on. */
static VccStatus reduce_grad(VccDiff *d, int k) {
    VccNode n = d->g->nodes[k];
    int x = n.in[0], dy = vcc_diff_dy(d, k, 0);
    bool mask[VCC_MAX_RANK], noop;
    VCC_ASSERT(reduce_dims(d->ctx, &n, d->g->tensors[x].shape.rank, mask, &noop));
    if (noop) {
        vcc_diff_accum(d, x, dy);
        return VCC_OK;
    }
    int dx = vcc_diff_new_grad(d, x);
    if (n.op == VCC_OP_REDUCEMAX || n.op == VCC_OP_REDUCEMIN) {
        int in[3] = {x, n.out[0], dy};
        vcc_diff_add_node(d, VCC_OP_REDUCEMAX_GRAD, k, "grad", in, 3, &dx, 1);
    } else {
        vcc_diff_add_node(d, n.op == VCC_OP_REDUCESUM ? VCC_OP_REDUCESUM_GRAD : VCC_OP_REDUCEMEAN_GRAD, k, "grad", &dy,
                          1, &dx, 1);
    }
    vcc_diff_accum(d, x, dx);
    return VCC_OK;
}

const VccOpDef vcc_def_REDUCESUM = {VCC_OPF_EMPTY_IN, 0, sum_attrs, reduce_check_attrs, reduce_canon, reduce_shape, reduce_grad,
                                    reduce_emit};
const VccOpDef vcc_def_REDUCEMEAN = {VCC_OPF_EMPTY_IN, 0, reduce_attrs, reduce_check_attrs, reduce_canon, reduce_shape, reduce_grad,
                                     reduce_emit};
const VccOpDef vcc_def_REDUCEMAX = {VCC_OPF_EMPTY_IN, 0, reduce_attrs, reduce_check_attrs, reduce_canon, reduce_shape, reduce_grad,
                                    reduce_emit};
const VccOpDef vcc_def_REDUCEMIN = {VCC_OPF_EMPTY_IN, 0, reduce_attrs, reduce_check_attrs, reduce_canon, reduce_shape, reduce_grad,
                                    reduce_emit};

/* ReduceSumGrad, ReduceMeanGrad: (dY) -> dX; ReduceMaxGrad: (X, Y, dY) -> dX. The forward's attributes;
 * X and dX of the forward input's shape, Y and dY of its output's. */
static VccStatus reduce_grad_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    bool mask[VCC_MAX_RANK], noop, ext = n->op == VCC_OP_REDUCEMAX_GRAD;
    VccShape y;
    (void)check;
    if (n->nout != 1 || n->out[0] < 0 || n->nin != (ext ? 3 : 1)) return vcc_operands_missing(ctx, n);
    const VccTensor *dx = &g->tensors[n->out[0]];
    if (!reduced_shape(ctx, n, &dx->shape, &y, mask, &noop)) return VCC_ERR_SHAPE;
    for (int i = 0; i < n->nin; i++) {
        const VccTensor *t = vcc_need_input(ctx, g, n, i, VCC_F32);
        if (!t) return VCC_ERR_SHAPE;
        if (!vcc_same_shape(&t->shape, ext && i == 0 ? &dx->shape : &y)) return vcc_shape_mismatch(ctx, n);
    }
    return dx->dtype == VCC_F32 ? VCC_OK : vcc_shape_mismatch(ctx, n);
}

static VccStatus reduce_grad_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    const VccShape *xs = &e->g->tensors[n->out[0]].shape;
    bool mask[VCC_MAX_RANK], noop, ext = n->op == VCC_OP_REDUCEMAX_GRAD;
    VccShape y;
    if (!reduced_shape(e->ctx, n, xs, &y, mask, &noop)) return VCC_ERR_SHAPE;
    emit_reduce_desc(e, xs, mask);
    fprintf(e->f, "        reduce_backward(rt, %s, &d, 1.0f, %s, %s, %s, %s);\n    }\n", reduce_kind(n->op),
            vcc_emit_f32(e, ext ? n->in[0] : -1), vcc_emit_f32(e, ext ? n->in[1] : -1),
            vcc_emit_f32(e, n->in[ext ? 2 : 0]), vcc_emit_f32(e, n->out[0]));
    return VCC_OK;
}

const VccOpDef vcc_def_REDUCESUM_GRAD = {0, 0, NULL, NULL, NULL, reduce_grad_shape, NULL, reduce_grad_emit};
const VccOpDef vcc_def_REDUCEMEAN_GRAD = {0, 0, NULL, NULL, NULL, reduce_grad_shape, NULL, reduce_grad_emit};
const VccOpDef vcc_def_REDUCEMAX_GRAD = {0, 0, NULL, NULL, NULL, reduce_grad_shape, NULL, reduce_grad_emit};

/* ------------------------------------------------------------------ ReduceToShape */

/* Where ReduceToShape node n's output (rank ry) sits among its input's dims (rank rx): its attribute
 * axis, else right-aligned. */
static int64_t to_shape_align(const VccNode *n, int rx, int ry) { return vcc_attr_int(n, "axis", rx - ry); }

/* X -> Y: Y's dims are X's dims align.. (each equal or 1); Y = scale * the sum over the others */
static VccStatus to_shape_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    (void)check;
    const VccTensor *x = vcc_need_input(ctx, g, n, 0, VCC_F32);
    if (!x || n->nin != 1 || n->nout != 1 || n->out[0] < 0) return vcc_operands_missing(ctx, n);
    const VccTensor *y = &g->tensors[n->out[0]];
    int64_t al = to_shape_align(n, x->shape.rank, y->shape.rank);
    if (y->dtype != VCC_F32 || al < 0 || al + y->shape.rank > x->shape.rank) return vcc_shape_mismatch(ctx, n);
    for (int i = 0; i < y->shape.rank; i++)
        if (y->shape.dims[i] != 1 && y->shape.dims[i] != x->shape.dims[al + i]) return vcc_shape_mismatch(ctx, n);
    return VCC_OK;
}

static VccStatus to_shape_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    const VccShape *xs = &e->g->tensors[n->in[0]].shape, *ys = &e->g->tensors[n->out[0]].shape;
    int64_t al = to_shape_align(n, xs->rank, ys->rank);
    bool mask[VCC_MAX_RANK];
    for (int i = 0; i < xs->rank; i++) mask[i] = i < al || i >= al + ys->rank || ys->dims[i - al] == 1;
    emit_reduce_desc(e, xs, mask);
    fprintf(e->f, "        reduce_forward(rt, VCC_RED_SUM, &d, (float)%.9g, %s, %s);\n    }\n",
            (double)vcc_attr_float(n, "scale", 1.0f), vcc_emit_f32(e, n->in[0]), vcc_emit_f32(e, n->out[0]));
    return VCC_OK;
}

const VccOpDef vcc_def_REDUCE_TO_SHAPE = {0, 0, NULL, NULL, NULL, to_shape_shape, NULL, to_shape_emit};

/* A backward node of op without the forward node's attributes. Returns its index. */
static int plain_node(VccDiff *d, VccOp op, int fwd, const char *suffix, int in, int out) {
    int j = vcc_diff_add_node(d, op, fwd, suffix, &in, 1, &out, 1);
    VccNode *m = &d->g->nodes[j];
    while (m->nattrs) vcc_attr_drop(m, m->attrs[0].name);
    return j;
}

int vcc_diff_sum_to(VccDiff *d, int fwd, const char *suffix, int gt, int t, int axis, float scale) {
    const VccShape gs = d->g->tensors[gt].shape, ts = d->g->tensors[t].shape;
    if (scale == 1.0f && vcc_same_shape(&gs, &ts)) return gt;
    int out = vcc_diff_new_grad(d, t);
    if (scale == 1.0f && vcc_shape_numel(&gs) == vcc_shape_numel(&ts)) {
        d->g->tensors[out].alias_of = gt; /* only size-1 dims differ: the same elements */
        plain_node(d, VCC_OP_RESHAPE, fwd, suffix, gt, out);
        return out;
    }
    int j = plain_node(d, VCC_OP_REDUCE_TO_SHAPE, fwd, suffix, gt, out);
    if (scale != 1.0f) vcc_attr_set_float(&d->g->nodes[j], "scale", scale);
    if (axis >= 0) vcc_attr_set_int(&d->g->nodes[j], "axis", axis);
    return out;
}
