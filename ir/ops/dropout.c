/*
 * dropout.c — the dropout family: Dropout in training mode and its gradient, with a counter-based RNG, and
 * the random ops RandomUniformLike and RandomNormalLike on the same draws (at the end of the file).
 *
 * Kernels: runtime/{elem,proto,cpu,cuda}/dropout.* (the draw, Philox4x32-10, in runtime/elem/dropout.h).
 * X, Y, mask, dY, dX are elementwise: one shape, any rank (N, C, T, H, W for a clip).
 *
 * Source: ONNX Operators "Dropout" and PyTorch's dropout (Y = X * mask / (1 - ratio), the gradient
 * dY * mask / (1 - ratio)). The forms by opset:
 *   1, 6    attributes is_test (default 0: training) and ratio (0.5); outputs Y and an optional mask of
 *           X's type (float 0/1)
 *   7, 10   attribute ratio; no mode in the node: the program decides (a trainer trains, a forward-only
 *           or evaluation program copies, as onnxruntime evaluates it); the mask is float before 10, bool
 *           from 10
 *   12, 13, 22  inputs ratio (float scalar, default 0.5) and training_mode (bool scalar, default false),
 *           both constants (an initializer or a Constant: vcc decides at compile time whether and how a
 *           node draws); attribute seed; bool mask
 * Every Dropout is off in an evaluation program (--eval). The canonical form of a Dropout that draws:
 * Dropout(X) -> (Y [, mask]) with attributes ratio (float, 0 < ratio < 1), stream (int: the node's index
 * in the model's graph, the j of its draws) and seed when the model gives one (an ONNX seed attribute
 * keys that node's draws instead of the run's --seed). A Dropout that does not draw (training off, or
 * ratio 0) becomes an Identity, a view of X with no code and no bytes, unless its mask output is read;
 * then it stays a Dropout with ratio 0 (Y = X, mask all true). A mask nobody reads is dropped.
 *
 * Backward regenerates the mask rather than reading a saved one. The draw of element i is a pure
 * function of (seed, node, step, i) (runtime/elem/dropout.h), so DropoutGrad(dY) computes the very
 * mask the forward used from the same counter: it costs ten Philox rounds per four elements, about
 * what the elementwise multiply costs in memory traffic, and it keeps nothing alive between forward and
 * backward. A saved 1-byte mask would hold N*C*T*H*W bytes of every dropout layer from its forward to
 * its backward, a quarter of the activation it masks, which is what the arena plan exists to avoid; the
 * forward may also overwrite X (VCC_OPF_INPLACE), since backward reads neither X nor Y.
 */
#include "ops.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

/* ------------------------------------------------------------------ mode and ratio */

int vcc_dropout_mode(const VccGraph *g, const VccNode *n) {
    if (g->opset >= 12) {
        int t = n->nin > 2 ? n->in[2] : -1;
        if (t < 0) return 0; /* training_mode absent: false */
        const VccTensor *m = &g->tensors[t];
        if (!vcc_is_initializer(g, t) || !m->data || m->dtype != VCC_BOOL || vcc_shape_numel(&m->shape) != 1)
            return -1;
        return ((const unsigned char *)m->data)[0] ? 1 : 0;
    }
    if (g->opset >= 7) return 2;
    return vcc_attr_int(n, "is_test", 0) ? 0 : 1;
}

/* Whether node n draws masks in the program ctx compiles (its ratio may still be 0). */
static bool dropout_trains(const VccCtx *ctx, const VccGraph *g, const VccNode *n) {
    int mode = vcc_dropout_mode(g, n);
    return !ctx->eval && (mode == 1 || (mode == 2 && !ctx->forward_only));
}

/* The ratio of n into *ratio: the attribute before opset 12, the constant input from 12 (0.5 when absent).
 * NULL, or what is wrong with it. */
static const char *dropout_ratio(const VccGraph *g, const VccNode *n, float *ratio) {
    *ratio = 0.5f;
    if (g->opset < 12) {
        *ratio = vcc_attr_float(n, "ratio", 0.5f);
    } else if (n->nin > 1 && n->in[1] >= 0) {
        const VccTensor *r = &g->tensors[n->in[1]];
        if (!vcc_is_initializer(g, n->in[1]) || !r->data)
            return "must be a constant (an initializer or a Constant): vcc fixes the ratio at compile time";
        if (r->dtype != VCC_F32 || vcc_shape_numel(&r->shape) != 1) return "must be a float scalar";
        *ratio = *(const float *)r->data;
    }
    return *ratio >= 0.0f && *ratio < 1.0f ? NULL : "must be in [0, 1)";
}

/* ------------------------------------------------------------------ Dropout */

static const VccAttrSpec dropout_attrs[] = {
    {"consumed_inputs", 1, 5, VCC_A_INTS}, {"is_test", 1, 6, VCC_A_INT}, {"ratio", 1, 11, VCC_A_FLOAT},
    {"seed", 12, VCC_OPSET_NOW, VCC_A_INT}, {NULL, 0, 0, 0},
};

static void dropout_check_attrs(VccCtx *ctx, const VccGraph *g, const VccNode *n) {
    float ratio;
    const char *why;
    if (vcc_dropout_mode(g, n) < 0)
        vcc_op_attr_problem(ctx, n, "%s input '%s'", "training_mode",
                            "must be a constant bool scalar (an initializer or a Constant): vcc decides at compile "
                            "time whether a Dropout draws");
    else if (dropout_trains(ctx, g, n) && (why = dropout_ratio(g, n, &ratio)))
        vcc_op_attr_problem(ctx, n, g->opset < 12 ? "%s attribute '%s'" : "%s input '%s'", "ratio", why);
}

/* The canonical form (see the top of the file): a drawing Dropout(X) -> (Y [, mask]) {ratio, stream
 * [, seed]}, or an Identity view of X. */
static VccStatus dropout_canon(VccCtx *ctx, VccGraph *g, int k) {
    VccNode *n = &g->nodes[k];
    if (n->nin < 1 || n->in[0] < 0 || n->nout < 1 || n->nout > 2 || n->out[0] < 0) {
        vcc_error(ctx, "node '%s' (Dropout): expected a data input and an output Y (and an optional mask)", n->name);
        return VCC_ERR_SHAPE;
    }
    float ratio = 0.0f;
    const char *why = NULL;
    if (vcc_dropout_mode(g, n) < 0) {
        vcc_error(ctx, "node '%s' (Dropout): training_mode must be a constant bool scalar", n->name);
        return VCC_ERR_UNSUPPORTED;
    }
    if (dropout_trains(ctx, g, n) && (why = dropout_ratio(g, n, &ratio))) {
        vcc_error(ctx, "node '%s' (Dropout): ratio %s", n->name, why);
        return VCC_ERR_UNSUPPORTED;
    }
    if (n->nout == 2 && (n->out[1] < 0 || !vcc_tensor_is_used(g, n->out[1]))) {
        if (n->out[1] >= 0) g->tensors[n->out[1]].producer = -1;
        n->nout = 1;
    }
    vcc_drop_inputs(g, k, 1);
    vcc_attr_drop(n, "is_test");
    if (ratio == 0.0f && n->nout == 1) { /* a view of X: no code, no bytes */
        while (n->nattrs) vcc_attr_drop(n, n->attrs[0].name);
        n->op = VCC_OP_IDENTITY;
        g->tensors[n->out[0]].alias_of = n->in[0];
        return VCC_OK;
    }
    vcc_attr_set_float(n, "ratio", ratio);
    vcc_attr_set_int(n, "stream", k);
    return VCC_OK;
}

/* X (any shape) -> Y of its shape [, mask of its shape: float before opset 10, bool from 10] */
static VccStatus dropout_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    const VccTensor *x = vcc_need_input(ctx, g, n, 0, VCC_F32);
    if (!x) return VCC_ERR_SHAPE;
    if (n->nin != 1 || n->nout < 1 || n->nout > 2) return vcc_operands_missing(ctx, n);
    bool ok = vcc_put_output(ctx, g, n, check, n->out[0], VCC_F32, &x->shape);
    if (n->nout > 1) ok = ok && vcc_put_output(ctx, g, n, check, n->out[1], g->opset < 10 ? VCC_F32 : VCC_BOOL, &x->shape);
    return ok ? VCC_OK : VCC_ERR_SHAPE;
}

/* Dropout(X) -> Y: DropoutGrad(dY) -> dX, the mask drawn again */
static VccStatus dropout_grad(VccDiff *d, int k) {
    VccNode n = d->g->nodes[k];
    int dx = vcc_diff_new_grad(d, n.in[0]), dy = vcc_diff_dy(d, k, 0);
    vcc_diff_add_node(d, VCC_OP_DROPOUT_GRAD, k, "grad", &dy, 1, &dx, 1);
    vcc_diff_accum(d, n.in[0], dx);
    return VCC_OK;
}

/* The block of a dropout kernel call: its descriptor (runtime/elem/dropout.h), from the node's ratio,
 * stream and seed, then the call. */
static void emit_desc(VccEmit *e, const VccNode *n) {
    double ratio = vcc_attr_float(n, "ratio", 0.0f), t = ratio * 4294967296.0;
    uint32_t threshold = t >= 4294967295.0 ? UINT32_MAX : (uint32_t)(t + 0.5); /* t >= 0 */
    float scale = 1.0f / (float)(1.0 - ratio);
    const VccAttr *seed = vcc_attr_get(n, "seed");
    fprintf(e->f, "    {\n        static const VccDropoutDesc d = {%" PRIu32 "u, %" PRIu32 "u, %s, %d, %" PRIu64 "ull};\n",
            (uint32_t)vcc_attr_int(n, "stream", 0), threshold, vcc_emit_float(e, scale), seed != NULL,
            seed ? (uint64_t)seed->i : 0);
}

static VccStatus dropout_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    int mask = n->nout > 1 ? n->out[1] : -1;
    bool f32 = mask >= 0 && e->g->tensors[mask].dtype == VCC_F32;
    emit_desc(e, n);
    fprintf(e->f, "        dropout_forward(rt, %" PRId64 ", &d, %s, %s, ", vcc_emit_numel(e, n->out[0]),
            vcc_emit_f32(e, n->in[0]), vcc_emit_f32(e, n->out[0]));
    if (mask >= 0 && !f32) fprintf(e->f, "(unsigned char *)(A + %" PRId64 "), NULL);\n    }\n", e->g->tensors[mask].offset);
    else fprintf(e->f, "NULL, %s);\n    }\n", vcc_emit_f32(e, f32 ? mask : -1));
    return VCC_OK;
}

const VccOpDef vcc_def_DROPOUT = {VCC_OPF_INPLACE, 0, dropout_attrs, dropout_check_attrs, dropout_canon,
                                  dropout_shape, dropout_grad, dropout_emit};

/* ------------------------------------------------------------------ DropoutGrad */

/* dY -> dX, of one shape */
static VccStatus dropout_grad_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    const VccTensor *a = vcc_need_input(ctx, g, n, 0, VCC_F32);
    if (!a || n->nin != 1 || n->nout != 1) return vcc_shape_mismatch(ctx, n);
    return vcc_put_output(ctx, g, n, check, n->out[0], VCC_F32, &a->shape) ? VCC_OK : VCC_ERR_SHAPE;
}

static VccStatus dropout_grad_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    emit_desc(e, n);
    fprintf(e->f, "        dropout_backward(rt, %" PRId64 ", &d, %s, %s);\n    }\n", vcc_emit_numel(e, n->out[0]),
            vcc_emit_f32(e, n->in[0]), vcc_emit_f32(e, n->out[0]));
    return VCC_OK;
}

const VccOpDef vcc_def_DROPOUT_GRAD = {VCC_OPF_INPLACE, 0, NULL, NULL, NULL, dropout_grad_shape, NULL,
                                       dropout_grad_emit};

/* ------------------------------------------------------------------ RandomUniformLike, RandomNormalLike */

/* ONNX RandomUniformLike 1, 22 (dtype, high 1, low 0, seed) and RandomNormalLike 1, 22 (dtype, mean 0,
 * scale 1, seed): a tensor of the input's shape drawn afresh at every training step (stochastic depth in
 * transformer exports: Floor(keep_prob + RandomUniformLike(x))). The canonical form adds stream (the
 * node's index in the model's graph, the j of its draws, as a Dropout's); the draws are Dropout's
 * Philox4x32-10 counter (runtime/elem/dropout.h vcc_random_value), keyed by the node's seed when it has
 * one (its integer part) and by the run's --seed otherwise. The output is float; no gradient flows to
 * the input, whose values it does not read (PyTorch: rand_like/randn_like are not differentiable). */
static const VccAttrSpec random_uniform_attrs[] = {
    {"dtype", 1, VCC_OPSET_NOW, VCC_A_INT}, {"high", 1, VCC_OPSET_NOW, VCC_A_FLOAT},
    {"low", 1, VCC_OPSET_NOW, VCC_A_FLOAT}, {"seed", 1, VCC_OPSET_NOW, VCC_A_FLOAT}, {NULL, 0, 0, 0},
};
static const VccAttrSpec random_normal_attrs[] = {
    {"dtype", 1, VCC_OPSET_NOW, VCC_A_INT}, {"mean", 1, VCC_OPSET_NOW, VCC_A_FLOAT},
    {"scale", 1, VCC_OPSET_NOW, VCC_A_FLOAT}, {"seed", 1, VCC_OPSET_NOW, VCC_A_FLOAT}, {NULL, 0, 0, 0},
};

static void random_check_attrs(VccCtx *ctx, const VccGraph *g, const VccNode *n) {
    (void)g;
    const VccAttr *dt = vcc_attr_get(n, "dtype");
    if (dt && dt->type == VCC_A_INT && dt->i != 1)
        vcc_op_attr_problem(ctx, n, "%s attribute '%s'", "dtype", "vcc draws FLOAT (1) values only");
}

static VccStatus random_canon(VccCtx *ctx, VccGraph *g, int k) {
    VccNode *n = &g->nodes[k];
    if (n->nin != 1 || n->in[0] < 0 || n->nout != 1 || n->out[0] < 0) return vcc_operands_missing(ctx, n);
    vcc_attr_set_int(n, "stream", k);
    return VCC_OK;
}

/* X (any shape; float unless dtype says FLOAT) -> Y, float, of X's shape */
static VccStatus random_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    if (n->nin != 1 || n->in[0] < 0 || n->nout != 1 || n->out[0] < 0) return vcc_operands_missing(ctx, n);
    const VccTensor *x = vcc_attr_get(n, "dtype") ? &g->tensors[n->in[0]] : vcc_need_input(ctx, g, n, 0, VCC_F32);
    if (!x || x->dtype == VCC_DT_UNDEF) return vcc_operands_missing(ctx, n);
    return vcc_put_output(ctx, g, n, check, n->out[0], VCC_F32, &x->shape) ? VCC_OK : VCC_ERR_SHAPE;
}

static VccStatus random_grad(VccDiff *d, int k) {
    (void)d;
    (void)k;
    return VCC_OK;
}

static VccStatus random_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    const bool normal = n->op == VCC_OP_RANDOM_NORMAL_LIKE;
    const float a = normal ? vcc_attr_float(n, "mean", 0.0f) : vcc_attr_float(n, "low", 0.0f);
    const float b = normal ? vcc_attr_float(n, "scale", 1.0f) : vcc_attr_float(n, "high", 1.0f) - a;
    const VccAttr *seed = vcc_attr_get(n, "seed");
    const double sv = seed ? (double)seed->f : 0.0;
    const uint64_t key = sv >= 9.2e18 || sv <= -9.2e18 || sv != sv ? 0 : (uint64_t)(int64_t)sv;
    fprintf(e->f, "    {\n        static const VccRandomDesc d = {%" PRIu32 "u, %d, %s, ", (uint32_t)vcc_attr_int(n, "stream", 0),
            normal, vcc_emit_float(e, a));
    fprintf(e->f, "%s, %d, %" PRIu64 "ull};\n        random_like_forward(rt, %" PRId64 ", &d, %s);\n    }\n",
            vcc_emit_float(e, b), seed != NULL, key, vcc_emit_numel(e, n->out[0]), vcc_emit_f32(e, n->out[0]));
    return VCC_OK;
}

const VccOpDef vcc_def_RANDOM_UNIFORM_LIKE = {0, 0, random_uniform_attrs, random_check_attrs, random_canon,
                                              random_shape, random_grad, random_emit};
const VccOpDef vcc_def_RANDOM_NORMAL_LIKE = {0, 0, random_normal_attrs, random_check_attrs, random_canon,
                                             random_shape, random_grad, random_emit};
