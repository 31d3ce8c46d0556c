/*
 * unary.c — the unary family: elementwise ops of one input. Relu, Sigmoid, HardSigmoid, HardSwish, Tanh,
 * LeakyRelu, Clip, Softplus, Elu, Neg, Exp, Log, Sqrt, Sin, Cos, Abs, Floor, Reciprocal, Erf, Gelu, Swish, and the
 * backward op of each (<Op>Grad(v, dY) -> dX; Neg's gradient is a Neg of dY; Floor has none, its
 * gradient being zero).
 *
 * Kernels: runtime/{elem,proto,cpu,cuda}/unary.* (the per-element bodies in runtime/elem/unary.h). Every
 * tensor of the family is elementwise: X, Y, dY, dX of one shape, any rank (N, C, T, H, W for a clip).
 *
 * Source: ONNX Operators, each op in every opset version that has float tensors: the opset 1 forms carry
 * consumed_inputs (an in-place hint without meaning: canonical drops it); Relu 1, 6, 13, 14; Sigmoid,
 * Tanh, Neg, Exp, Log, Sqrt, Abs, Floor, Reciprocal 1, 6, 13; HardSigmoid (alpha 0.2, beta 0.5) 1, 6, 22;
 * HardSwish 14, 22 (alpha 1/6, beta 1/2 fixed); LeakyRelu (alpha 0.01) 1, 6, 16; Elu (alpha 1) 1, 6, 22;
 * Softplus 1, 22; Sin, Cos 7, 22; Erf 9, 13; Gelu 20 (approximate "none" or "tanh"); Swish 24 (alpha,
 * default 1); Clip 1 and 6 (min, max attributes, defaults the lowest and highest float), 11, 12, 13
 * (optional min and max inputs, no bound when absent).
 * Canonical form of Clip: attributes min and max, always both (from the opset 11+ inputs, which must be
 * constants: vcc reads them at compile time). Gradients follow PyTorch autograd (derivatives.yaml and
 * the ATen backward kernels), each written with the value it reads: the forward OUTPUT where the formula
 * allows (Relu, Sigmoid, HardSigmoid, Tanh, Softplus, Exp, Sqrt, Reciprocal, LeakyRelu with alpha >= 0),
 * so that those ops may overwrite their input (VCC_OPF_INPLACE) and keep nothing else alive for backward;
 * the INPUT otherwise (HardSwish, Clip, Elu, Log, Sin, Cos, Abs, Erf, Gelu, Swish, LeakyRelu with alpha < 0).
 */
#include "ops.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

/* Output 0 has input 0's shape and dtype float. */
static VccStatus same_as_input(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    const VccTensor *x = vcc_need_input(ctx, g, n, 0, VCC_F32);
    if (!x) return VCC_ERR_SHAPE;
    return vcc_put_output(ctx, g, n, check, n->out[0], VCC_F32, &x->shape) ? VCC_OK : VCC_ERR_SHAPE;
}

/* A backward op: (V, dY) -> dX, all of one shape */
static VccStatus grad_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    const VccTensor *a = vcc_need_input(ctx, g, n, 0, VCC_F32), *b;
    if (!a || !(b = vcc_need_input(ctx, g, n, 1, VCC_F32)) || n->nout != 1 || !vcc_same_shape(&a->shape, &b->shape))
        return vcc_shape_mismatch(ctx, n);
    return vcc_put_output(ctx, g, n, true, n->out[0], VCC_F32, &a->shape) ? VCC_OK : VCC_ERR_SHAPE;
}

/* ------------------------------------------------------------------ Relu */

static const VccAttrSpec relu_attrs[] = {{"consumed_inputs", 1, 5, VCC_A_INTS}, {NULL, 0, 0, 0}};

/* Relu(X) -> Y: ReluGrad(Y, dY) -> dX */
static VccStatus relu_grad(VccDiff *d, int k) {
    VccNode n = d->g->nodes[k];
    int dx = vcc_diff_new_grad(d, n.in[0]);
    int in[2] = {n.out[0], vcc_diff_dy(d, k, 0)};
    vcc_diff_add_node(d, VCC_OP_RELU_GRAD, k, "grad", in, 2, &dx, 1);
    vcc_diff_accum(d, n.in[0], dx);
    return VCC_OK;
}

static VccStatus relu_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    fprintf(e->f, "    relu_forward(rt, %" PRId64 ", %s, %s);\n", vcc_emit_numel(e, n->out[0]), vcc_emit_f32(e, n->in[0]),
            vcc_emit_f32(e, n->out[0]));
    return VCC_OK;
}

const VccOpDef vcc_def_RELU = {VCC_OPF_INPLACE, 0, relu_attrs, NULL, NULL, same_as_input, relu_grad, relu_emit};

/* ------------------------------------------------------------------ ReluGrad */

static VccStatus relu_grad_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    fprintf(e->f, "    relu_backward(rt, %" PRId64 ", %s, %s, %s);\n", vcc_emit_numel(e, n->out[0]),
            vcc_emit_f32(e, n->in[0]), vcc_emit_f32(e, n->in[1]), vcc_emit_f32(e, n->out[0]));
    return VCC_OK;
}

const VccOpDef vcc_def_RELU_GRAD = {VCC_OPF_INPLACE, 0, NULL, NULL, NULL, grad_shape, NULL, relu_grad_emit};

/* ------------------------------------------------------------------ the table of the other ops */

/* What an op's gradient reads besides dY. */
typedef enum {
    READS_X,            /* the forward input */
    READS_Y,            /* the forward output */
    READS_Y_IF_A_NONNEG /* the output when attribute a >= 0, else the input (LeakyRelu) */
} Reads;

/* One op: its kernels <kernel>_forward / <kernel>_backward (runtime/proto/unary.h), the attributes that
 * become their arguments a and b (NULL: none; then the default is passed), and what the gradient reads. */
typedef struct {
    VccOp op, grad;      /* the forward op and its backward op (VCC_OP_NEG: the gradient is Neg(dY)) */
    const char *kernel;
    const char *a, *b;
    float a_dflt, b_dflt;
    Reads reads;
} UnaryOp;

static const UnaryOp unary_ops[] = {
    {VCC_OP_SIGMOID, VCC_OP_SIGMOID_GRAD, "sigmoid", NULL, NULL, 0.0f, 0.0f, READS_Y},
    {VCC_OP_HARDSIGMOID, VCC_OP_HARDSIGMOID_GRAD, "hardsigmoid", "alpha", "beta", 0.2f, 0.5f, READS_Y},
    {VCC_OP_HARDSWISH, VCC_OP_HARDSWISH_GRAD, "hardswish", NULL, NULL, 0.0f, 0.0f, READS_X},
    {VCC_OP_TANH, VCC_OP_TANH_GRAD, "tanh", NULL, NULL, 0.0f, 0.0f, READS_Y},
    {VCC_OP_LEAKYRELU, VCC_OP_LEAKYRELU_GRAD, "leakyrelu", "alpha", NULL, 0.01f, 0.0f, READS_Y_IF_A_NONNEG},
    {VCC_OP_CLIP, VCC_OP_CLIP_GRAD, "clip", "min", "max", -INFINITY, INFINITY, READS_X},
    {VCC_OP_SOFTPLUS, VCC_OP_SOFTPLUS_GRAD, "softplus", NULL, NULL, 0.0f, 0.0f, READS_Y},
    {VCC_OP_ELU, VCC_OP_ELU_GRAD, "elu", "alpha", NULL, 1.0f, 0.0f, READS_X},
    {VCC_OP_NEG, VCC_OP_NEG, "neg", NULL, NULL, 0.0f, 0.0f, READS_Y},
    {VCC_OP_EXP, VCC_OP_EXP_GRAD, "exp", NULL, NULL, 0.0f, 0.0f, READS_Y},
    {VCC_OP_LOG, VCC_OP_LOG_GRAD, "log", NULL, NULL, 0.0f, 0.0f, READS_X},
    {VCC_OP_SQRT, VCC_OP_SQRT_GRAD, "sqrt", NULL, NULL, 0.0f, 0.0f, READS_Y},
    {VCC_OP_SIN, VCC_OP_SIN_GRAD, "sin", NULL, NULL, 0.0f, 0.0f, READS_X},
    {VCC_OP_COS, VCC_OP_COS_GRAD, "cos", NULL, NULL, 0.0f, 0.0f, READS_X},
    {VCC_OP_ABS, VCC_OP_ABS_GRAD, "abs", NULL, NULL, 0.0f, 0.0f, READS_X},
    {VCC_OP_FLOOR, VCC_OP_FLOOR, "floor", NULL, NULL, 0.0f, 0.0f, READS_X}, /* no gradient: floor_grad */
    {VCC_OP_RECIPROCAL, VCC_OP_RECIPROCAL_GRAD, "reciprocal", NULL, NULL, 0.0f, 0.0f, READS_Y},
    {VCC_OP_ERF, VCC_OP_ERF_GRAD, "erf", NULL, NULL, 0.0f, 0.0f, READS_X},
    /* a: approximate (a string attribute, read by unary_args) */
    {VCC_OP_GELU, VCC_OP_GELU_GRAD, "gelu", NULL, NULL, 0.0f, 0.0f, READS_X},
    {VCC_OP_SWISH, VCC_OP_SWISH_GRAD, "swish", "alpha", NULL, 1.0f, 0.0f, READS_X},
};

/* The entry of a forward op or of its backward op. */
static const UnaryOp *unary_op(VccOp op) {
    for (size_t i = 0; i < sizeof unary_ops / sizeof unary_ops[0]; i++)
        if (unary_ops[i].op == op || unary_ops[i].grad == op) return &unary_ops[i];
    VCC_ASSERT(!"an op of the unary family without its table entry");
    return NULL;
}

/* The kernels' arguments a and b of node n (a forward node, or a backward node with its attributes);
 * Gelu's a is 1 for approximate "tanh", 0 for "none" (the default). */
static void unary_args(const UnaryOp *u, const VccNode *n, float *a, float *b) {
    *a = u->a ? vcc_attr_float(n, u->a, u->a_dflt) : u->a_dflt;
    *b = u->b ? vcc_attr_float(n, u->b, u->b_dflt) : u->b_dflt;
    if (u->op == VCC_OP_GELU) *a = strcmp(vcc_attr_string(n, "approximate", "none"), "tanh") == 0 ? 1.0f : 0.0f;
}

/* Op(X) -> Y: <Op>Grad(V, dY) -> dX with V = X or Y as the entry says; Neg(X) -> Y: Neg(dY) -> dX */
static VccStatus unary_grad(VccDiff *d, int k) {
    VccNode n = d->g->nodes[k]; /* a copy: the node array grows */
    const UnaryOp *u = unary_op(n.op);
    int dx = vcc_diff_new_grad(d, n.in[0]), dy = vcc_diff_dy(d, k, 0);
    if (u->grad == VCC_OP_NEG) {
        vcc_diff_add_node(d, VCC_OP_NEG, k, "grad", &dy, 1, &dx, 1);
    } else {
        float a, b;
        unary_args(u, &n, &a, &b);
        bool y = u->reads == READS_Y || (u->reads == READS_Y_IF_A_NONNEG && a >= 0.0f);
        int in[2] = {y ? n.out[0] : n.in[0], dy};
        vcc_diff_add_node(d, u->grad, k, "grad", in, 2, &dx, 1);
    }
    vcc_diff_accum(d, n.in[0], dx);
    return VCC_OK;
}

/* <kernel>_forward(rt, n, a, b, x, y) for a forward op (and a Neg in the backward graph),
 * <kernel>_backward(rt, n, a, b, v, dy, dx) for a backward op */
static VccStatus unary_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    const UnaryOp *u = unary_op(n->op);
    float a, b;
    unary_args(u, n, &a, &b);
    bool fwd = n->op == u->op;
    fprintf(e->f, "    %s_%s(rt, %" PRId64 ", %s, %s, %s, ", u->kernel, fwd ? "forward" : "backward",
            vcc_emit_numel(e, n->out[0]), vcc_emit_float(e, a), vcc_emit_float(e, b), vcc_emit_f32(e, n->in[0]));
    if (!fwd) fprintf(e->f, "%s, ", vcc_emit_f32(e, n->in[1]));
    fprintf(e->f, "%s);\n", vcc_emit_f32(e, n->out[0]));
    return VCC_OK;
}

/* The attributes of u's op that must be finite numbers (alpha, beta). */
static void finite_attrs(VccCtx *ctx, const VccGraph *g, const VccNode *n) {
    (void)g;
    const UnaryOp *u = unary_op(n->op);
    const char *names[2] = {u->a, u->b};
    for (int i = 0; i < 2; i++) {
        const VccAttr *at = names[i] ? vcc_attr_get(n, names[i]) : NULL;
        if (at && at->type == VCC_A_FLOAT && !isfinite(at->f))
            vcc_op_attr_problem(ctx, n, "%s attribute '%s'", names[i], "must be a finite number");
    }
}

/* Definitions: forward ops whose gradient reads Y may overwrite X; every backward op may overwrite dY. */
#define UNARY_DEF(e, flags, attrs, check, canon)                                                                \
    const VccOpDef vcc_def_##e = {flags, 0, attrs, check, canon, same_as_input, unary_grad, unary_emit};      \
    const VccOpDef vcc_def_##e##_GRAD = {VCC_OPF_INPLACE, 0, NULL, NULL, NULL, grad_shape, NULL, unary_emit};

static const VccAttrSpec consumed_attrs[] = {{"consumed_inputs", 1, 5, VCC_A_INTS}, {NULL, 0, 0, 0}};
static const VccAttrSpec alpha_attrs[] = {
    {"consumed_inputs", 1, 5, VCC_A_INTS}, {"alpha", 1, VCC_OPSET_NOW, VCC_A_FLOAT}, {NULL, 0, 0, 0},
};
static const VccAttrSpec hardsigmoid_attrs[] = {
    {"consumed_inputs", 1, 5, VCC_A_INTS}, {"alpha", 1, VCC_OPSET_NOW, VCC_A_FLOAT},
    {"beta", 1, VCC_OPSET_NOW, VCC_A_FLOAT}, {NULL, 0, 0, 0},
};

UNARY_DEF(SIGMOID, VCC_OPF_INPLACE, consumed_attrs, NULL, NULL)
UNARY_DEF(HARDSIGMOID, VCC_OPF_INPLACE, hardsigmoid_attrs, finite_attrs, NULL)
UNARY_DEF(HARDSWISH, 0, NULL, NULL, NULL)
UNARY_DEF(TANH, VCC_OPF_INPLACE, consumed_attrs, NULL, NULL)
/* with alpha < 0 the gradient reads X, which then outlives the node: passes/inplace never reuses it */
UNARY_DEF(LEAKYRELU, VCC_OPF_INPLACE, alpha_attrs, finite_attrs, NULL)
UNARY_DEF(SOFTPLUS, VCC_OPF_INPLACE, NULL, NULL, NULL)
UNARY_DEF(ELU, 0, alpha_attrs, finite_attrs, NULL)
UNARY_DEF(EXP, VCC_OPF_INPLACE, consumed_attrs, NULL, NULL)
UNARY_DEF(LOG, 0, consumed_attrs, NULL, NULL)
UNARY_DEF(SQRT, VCC_OPF_INPLACE, consumed_attrs, NULL, NULL)
UNARY_DEF(SIN, 0, NULL, NULL, NULL)
UNARY_DEF(COS, 0, NULL, NULL, NULL)
UNARY_DEF(ABS, 0, consumed_attrs, NULL, NULL)
UNARY_DEF(RECIPROCAL, VCC_OPF_INPLACE, consumed_attrs, NULL, NULL)
UNARY_DEF(ERF, 0, NULL, NULL, NULL)

/* Gelu: approximate "none" (exact) or "tanh"; any other value is refused. */
static const VccAttrSpec gelu_attrs[] = {{"approximate", 20, VCC_OPSET_NOW, VCC_A_STRING}, {NULL, 0, 0, 0}};

static void gelu_check_attrs(VccCtx *ctx, const VccGraph *g, const VccNode *n) {
    (void)g;
    const char *ap = vcc_attr_string(n, "approximate", "none");
    if (strcmp(ap, "none") != 0 && strcmp(ap, "tanh") != 0)
        vcc_op_attr_problem(ctx, n, "%s attribute '%s'", "approximate", "must be \"none\" or \"tanh\"");
}

UNARY_DEF(GELU, 0, gelu_attrs, gelu_check_attrs, NULL)

/* Swish (opset 24): x * sigmoid(alpha x); passes/fuse.c also makes one of x * Sigmoid(x) (alpha 1). */
static const VccAttrSpec swish_attrs[] = {{"alpha", 24, VCC_OPSET_NOW, VCC_A_FLOAT}, {NULL, 0, 0, 0}};
UNARY_DEF(SWISH, 0, swish_attrs, finite_attrs, NULL)

const VccOpDef vcc_def_NEG = {VCC_OPF_INPLACE, 0, consumed_attrs, NULL, NULL, same_as_input, unary_grad, unary_emit};

/* Floor(X) -> Y: no gradient flows to X (PyTorch: floor's derivative is zero; in stochastic depth,
 * Floor(keep_prob + RandomUniformLike(x)) is the drop mask) */
static VccStatus floor_grad(VccDiff *d, int k) {
    (void)d;
    (void)k;
    return VCC_OK;
}

const VccOpDef vcc_def_FLOOR = {VCC_OPF_INPLACE, 0, consumed_attrs, NULL, NULL, same_as_input, floor_grad, unary_emit};

/* ------------------------------------------------------------------ Clip */

static const VccAttrSpec clip_attrs[] = {
    {"consumed_inputs", 1, 5, VCC_A_INTS}, {"min", 1, 10, VCC_A_FLOAT}, {"max", 1, 10, VCC_A_FLOAT}, {NULL, 0, 0, 0},
};

static const char *const clip_bound[2] = {"min", "max"};

/* Opset 11+: bound input i (1 min, 2 max) of n, or NULL when absent; *why says what is wrong with it. */
static const VccTensor *clip_input(const VccGraph *g, const VccNode *n, int i, const char **why) {
    *why = NULL;
    int t = i < n->nin ? n->in[i] : -1;
    if (t < 0) return NULL;
    const VccTensor *x = &g->tensors[t];
    if (!vcc_is_initializer(g, t) || !x->data)
        *why = "must be a constant (an initializer or a Constant): vcc reads the bounds at compile time";
    else if (x->dtype == VCC_BOOL || vcc_shape_numel(&x->shape) != 1)
        *why = "must be a scalar number";
    else if ((x->dtype == VCC_F32 && isnan(*(const float *)x->data)) ||
             (x->dtype == VCC_F64 && isnan(*(const double *)x->data)))
        *why = "is NaN";
    return x;
}

static void clip_check_attrs(VccCtx *ctx, const VccGraph *g, const VccNode *n) {
    for (int i = 0; i < 2; i++) {
        const char *why;
        if (g->opset >= 11) {
            clip_input(g, n, i + 1, &why);
            if (why) vcc_op_attr_problem(ctx, n, "%s input '%s'", clip_bound[i], why);
        } else if (isnan(vcc_attr_float(n, clip_bound[i], 0.0f))) {
            vcc_op_attr_problem(ctx, n, "%s attribute '%s'", clip_bound[i], "is NaN");
        }
    }
}

/* One form for every opset: attributes min and max (opsets 1-10: the attributes, absent ones the lowest and
 * highest float, as ONNX defines them; 11+: the constant inputs, absent ones -inf and +inf), input X alone.
 * Bounds of another type than float32 (Clip-11+ on integers or doubles) stay the constant inputs they
 * are, read by the typed kernel (clip_emit). */
static VccStatus clip_canon(VccCtx *ctx, VccGraph *g, int k) {
    VccNode *n = &g->nodes[k];
    float v[2] = {-FLT_MAX, FLT_MAX};
    for (int i = 1; i < 3 && g->opset >= 11; i++)
        if (i < n->nin && n->in[i] >= 0 && g->tensors[n->in[i]].dtype != VCC_F32) {
            const char *why;
            clip_input(g, n, i, &why);
            if (why) {
                vcc_error(ctx, "node '%s' (Clip): input '%s' %s", n->name, clip_bound[i - 1], why);
                return VCC_ERR_UNSUPPORTED;
            }
            return VCC_OK;
        }
    if (g->opset >= 11) {
        v[0] = -INFINITY;
        v[1] = INFINITY;
        for (int i = 0; i < 2; i++) {
            const char *why;
            const VccTensor *t = clip_input(g, n, i + 1, &why);
            if (why) {
                vcc_error(ctx, "node '%s' (Clip): input '%s' %s", n->name, clip_bound[i], why);
                return VCC_ERR_UNSUPPORTED;
            }
            if (t) v[i] = *(const float *)t->data;
        }
    }
    for (int i = 0; i < 2; i++) vcc_attr_set_float(n, clip_bound[i], vcc_attr_float(n, clip_bound[i], v[i]));
    vcc_drop_inputs(g, k, 1);
    return VCC_OK;
}

/* Clip(X[, min, max]) -> Y of X's type and shape: float32 X with the bounds as attributes (clip_canon);
 * other types (typed kernels) with the bounds, when given, as constant scalar inputs of X's type. */
static VccStatus clip_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    const VccTensor *x = vcc_need_numeric(ctx, g, n, 0);
    if (!x) return VCC_ERR_SHAPE;
    if (x->dtype != VCC_F32 && (vcc_attr_float(n, "min", -INFINITY) != -INFINITY ||
                                vcc_attr_float(n, "max", INFINITY) != INFINITY)) {
        vcc_error(ctx, "node '%s' (%s): float bounds for X of type %s (the bounds must have X's type)", n->name,
                  vcc_node_op(n), vcc_dtype_name(x->dtype));
        return VCC_ERR_SHAPE;
    }
    for (int i = 1; i < n->nin; i++) {
        const char *why;
        const VccTensor *b = clip_input(g, n, i, &why);
        if (b && (why || b->dtype != x->dtype)) {
            vcc_error(ctx, "node '%s' (%s): input '%s' %s (%s)", n->name, vcc_node_op(n), clip_bound[i - 1],
                      why ? why : "must have the type of X", vcc_dtype_name(x->dtype));
            return VCC_ERR_SHAPE;
        }
    }
    if (x->dtype == VCC_F32 && n->nin > 1) {
        vcc_error(ctx, "node '%s' (%s): float32 X takes its bounds as attributes (the canonical form)", n->name,
                  vcc_node_op(n));
        return VCC_ERR_SHAPE;
    }
    return vcc_put_output(ctx, g, n, check, n->out[0], x->dtype, &x->shape) ? VCC_OK : VCC_ERR_SHAPE;
}

static VccStatus clip_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    if (!vcc_node_typed(e->g, n)) return unary_emit(e, k);
    fprintf(e->f, "    typed_clip_forward(rt, %s, %" PRId64 ", %s, %s, %s, %s);\n", vcc_emit_et(e->g->tensors[n->in[0]].dtype),
            vcc_emit_numel(e, n->out[0]), vcc_emit_ptr(e, n->in[0]), vcc_emit_ptr(e, n->nin > 1 ? n->in[1] : -1),
            vcc_emit_ptr(e, n->nin > 2 ? n->in[2] : -1), vcc_emit_ptr(e, n->out[0]));
    return VCC_OK;
}

const VccOpDef vcc_def_CLIP = {VCC_OPF_TYPED, 0, clip_attrs, clip_check_attrs, clip_canon, clip_shape, unary_grad,
                               clip_emit};
const VccOpDef vcc_def_CLIP_GRAD = {VCC_OPF_INPLACE, 0, NULL, NULL, NULL, grad_shape, NULL, unary_emit};
