/*
 * layout.c — the layout family: ops that move or reinterpret elements. Flatten, Reshape and Identity,
 * whose outputs are views (alias_of) of their data input: no code, no bytes of their own.
 *
 * Source: ONNX Operators: Flatten 1 (axis >= 0), 11 (negative axis); Reshape 1 (shape attribute), 5
 * (shape input), 14 (allowzero); Identity 1. Canonical form: Reshape before opset 5 reads the shape as
 * a CONST input, as from opset 5; Reshape's shape input is a CONST. The gradient of a view is a view of
 * the output gradient (a Reshape node in the backward graph).
 */
#include "ops.h"

#include <stdlib.h>
#include <string.h>

/* Output 0 of node k is a view of its data input 0 (canonical form of every view op). */
static VccStatus view_canon(VccCtx *ctx, VccGraph *g, int k) {
    VccNode *n = &g->nodes[k];
    if (n->nin < 1 || n->in[0] < 0 || n->nout != 1 || n->out[0] < 0) {
        vcc_error(ctx, "node '%s' (%s): expected one data input and one output", n->name, vcc_op_name(n->op));
        return VCC_ERR_SHAPE;
    }
    g->tensors[n->out[0]].alias_of = n->in[0];
    return VCC_OK;
}

/* Flatten/Reshape/Identity -> Reshape(dY) -> dX, a view of dY */
static VccStatus view_grad(VccDiff *d, int k) {
    int x = d->g->nodes[k].in[0], dy = vcc_diff_dy(d, k, 0);
    int dx = vcc_diff_new_grad(d, x);
    d->g->tensors[dx].alias_of = dy;
    vcc_diff_add_node(d, VCC_OP_RESHAPE, k, "grad", &dy, 1, &dx, 1);
    vcc_diff_accum(d, x, dx);
    return VCC_OK;
}

static VccStatus view_emit(VccEmit *e, int k) {
    (void)k;
    fputs("    /* view: shares its input's bytes */\n", e->f);
    return VCC_OK;
}

/* ------------------------------------------------------------------ Flatten */

static const VccAttrSpec flatten_attrs[] = {{"axis", 1, VCC_OPSET_NOW, VCC_A_INT}, {NULL, 0, 0, 0}};

static void flatten_check_attrs(VccCtx *ctx, const VccGraph *g, const VccNode *n) {
    if (g->opset < 11 && vcc_attr_int(n, "axis", 1) < 0)
        vcc_op_attr_problem(ctx, n, "%s attribute '%s'", "axis<0", "negative axes need opset 11 or later");
}

/* X (d0, ..., dr-1) -> (d0*...*d(axis-1), d(axis)*...*d(r-1)) */
static VccStatus flatten_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    const VccTensor *x = vcc_need_input(ctx, g, n, 0, VCC_F32);
    if (!x) return VCC_ERR_SHAPE;
    int64_t axis = vcc_attr_int(n, "axis", 1);
    if (axis < 0) axis += x->shape.rank;
    if (axis < 0 || axis > x->shape.rank) {
        vcc_error(ctx, "node '%s' (Flatten): axis out of range for rank %d", n->name, x->shape.rank);
        return VCC_ERR_SHAPE;
    }
    VccShape out = {2, {1, 1}};
    for (int i = 0; i < x->shape.rank; i++) out.dims[i < axis ? 0 : 1] *= x->shape.dims[i];
    return vcc_put_output(ctx, g, n, check, n->out[0], VCC_F32, &out) ? VCC_OK : VCC_ERR_SHAPE;
}

const VccOpDef vcc_def_FLATTEN = {VCC_OPF_VIEW, 0, flatten_attrs, flatten_check_attrs, view_canon, flatten_shape,
                                  view_grad, view_emit};

/* ------------------------------------------------------------------ Identity */

static VccStatus identity_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    const VccTensor *x = vcc_need_input(ctx, g, n, 0, VCC_F32);
    if (!x) return VCC_ERR_SHAPE;
    return vcc_put_output(ctx, g, n, check, n->out[0], VCC_F32, &x->shape) ? VCC_OK : VCC_ERR_SHAPE;
}

const VccOpDef vcc_def_IDENTITY = {VCC_OPF_VIEW, 0, NULL, NULL, view_canon, identity_shape, view_grad, view_emit};

/* ------------------------------------------------------------------ Reshape */

static const VccAttrSpec reshape_attrs[] = {
    {"consumed_inputs", 1, 4, VCC_A_INTS}, {"shape", 1, 4, VCC_A_INTS}, {"allowzero", 14, VCC_OPSET_NOW, VCC_A_INT},
    {NULL, 0, 0, 0},
};

/* Reshape of opsets 1-4 takes the shape as an attribute: make it the CONST input opset 5 reads; the
 * shape input must be a constant int64 tensor. */
static VccStatus reshape_canon(VccCtx *ctx, VccGraph *g, int k) {
    VccNode *n = &g->nodes[k];
    const VccAttr *a = vcc_attr_get(n, "shape");
    if (a && a->type == VCC_A_INTS && !(n->nin > 1 && n->in[1] >= 0)) {
        VccShape s = {1, {a->n}};
        int t = vcc_tensor_add_unique(g, VCC_I64, &s, VCC_T_CONST, "%s.shape", n->name);
        g->tensors[t].data = vcc_malloc(sizeof(int64_t) * (size_t)(a->n ? a->n : 1));
        g->tensors[t].data_bytes = sizeof(int64_t) * (size_t)a->n;
        if (a->n) memcpy(g->tensors[t].data, a->ints, sizeof(int64_t) * (size_t)a->n);
        n = &g->nodes[k];
        if (n->nin < 2) {
            n->in = vcc_realloc(n->in, 2 * sizeof(int));
            n->nin = 2;
        }
        n->in[1] = t;
        vcc_attr_drop(n, "shape");
    }
    /* a shape that nodes compute (Shape, Gather, Concat...) is folded into a CONST by passes/shape before
     * this node's rule reads it; the rule refuses one that is not */
    if (n->nin == 2 && n->in[1] >= 0 && g->tensors[n->in[1]].producer < 0) {
        if (!vcc_is_initializer(g, n->in[1]) || g->tensors[n->in[1]].dtype != VCC_I64) {
            vcc_error(ctx, "node '%s' (Reshape): the shape input must be a constant int64 tensor", n->name);
            return VCC_ERR_UNSUPPORTED;
        }
        g->tensors[n->in[1]].kind = VCC_T_CONST;
    }
    return view_canon(ctx, g, k);
}

/* (X, shape int64 (r)) -> X's elements in shape (0 copies X's dim unless allowzero, -1 is inferred).
 * In the backward graph: dY -> dX, the same elements in the forward input's shape. */
static VccStatus reshape_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    char s1[128];
    const VccTensor *x = vcc_need_input(ctx, g, n, 0, VCC_F32);
    if (n->phase == VCC_PHASE_BACKWARD) {
        if (!x || n->nout != 1 || n->out[0] < 0) return vcc_operands_missing(ctx, n);
        if (g->tensors[n->out[0]].dtype != VCC_F32 ||
            vcc_shape_numel(&x->shape) != vcc_shape_numel(&g->tensors[n->out[0]].shape))
            return vcc_shape_mismatch(ctx, n);
        return VCC_OK;
    }
    if (!x) return VCC_ERR_SHAPE;
    const VccTensor *sh = vcc_need_input(ctx, g, n, 1, VCC_I64);
    if (!sh) return VCC_ERR_SHAPE;
    int64_t cnt = vcc_shape_numel(&sh->shape);
    if (check && !sh->data) { /* a .vir dump holds no values: the element count must be kept */
        const VccTensor *y = n->out[0] >= 0 ? &g->tensors[n->out[0]] : NULL;
        if (y && y->dtype == VCC_F32 && y->shape.rank == cnt && vcc_shape_numel(&y->shape) == vcc_shape_numel(&x->shape))
            return VCC_OK;
        vcc_error(ctx, "node '%s' (Reshape): its output does not hold its input's %lld elements in %lld dims", n->name,
                  (long long)vcc_shape_numel(&x->shape), (long long)cnt);
        return VCC_ERR_SHAPE;
    }
    if (sh->shape.rank != 1 || cnt > VCC_MAX_RANK || !sh->data) {
        vcc_error(ctx, "node '%s' (Reshape): shape must be a constant 1-D int64 tensor of at most %d values", n->name,
                  VCC_MAX_RANK);
        return VCC_ERR_SHAPE;
    }
    const int64_t *v = sh->data;
    int64_t known = 1, total = vcc_shape_numel(&x->shape);
    int infer = -1;
    VccShape out = {(int)cnt, {0}};
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
        vcc_shape_str(s1, sizeof s1, &x->shape);
        vcc_error(ctx, "node '%s' (Reshape): cannot reshape %s to the requested shape", n->name, s1);
        return VCC_ERR_SHAPE;
    }
    return vcc_put_output(ctx, g, n, check, n->out[0], VCC_F32, &out) ? VCC_OK : VCC_ERR_SHAPE;
}

const VccOpDef vcc_def_RESHAPE = {VCC_OPF_VIEW, 0, reshape_attrs, NULL, reshape_canon, reshape_shape, view_grad,
                                  view_emit};
