/*
 * pad.c — the pad family: Pad and its backward op PadGrad.
 *
 * Kernels: runtime/{elem,proto,cpu,cuda}/pad.* (hand kernels on both targets, one per-element body).
 * Source: ONNX Operators "Pad": opset 1 (attributes paddings, mode, value), 2 (pads), 11 (pads and
 * constant_value as inputs; negative pads), 13 (more types), 18 (axes input), 19 (mode wrap), 21-25 (more
 * types); torch.nn.functional.pad for the gradient and for what ONNX leaves open.
 * Canonical form (every opset): Pad(data) with attributes pads (2 * naxes values: every begin, then every
 * end), axes (present when the model gives them; negative ones count from the end), value (float) and
 * mode: the inputs pads, constant_value and axes of opsets 11+ must be constants (initializers or
 * Constant outputs) and become those attributes (their values are needed to plan the output anyway).
 * Negative pads crop first, then the positive ones pad the kept part (onnxruntime's order); reflect pads
 * may be at most the kept length - 1, wrap pads at most the kept length (PyTorch's limits: numpy's pad,
 * the ONNX reference, differs past them), edge pads any length; a mode other than constant needs at least
 * one kept element where it pads. Every output dim must be at least 1.
 * Gradients (PyTorch autograd: the sum of the contributions back into the input): constant mode ->
 * Pad(dY) in constant mode with the pads negated (the crop of dY, zeros where the forward cropped);
 * reflect, edge, wrap -> PadGrad(dY) -> dX, a gather per element of X.
 */
#include "ops.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

enum { MODE_CONSTANT, MODE_REFLECT, MODE_EDGE, MODE_WRAP };
static const char *const pad_modes[] = {"constant", "reflect", "edge", "wrap", NULL};
/* the modes as runtime/elem/pad.h names them */
static const char *const pad_mode_enum[] = {"VCC_PAD_CONSTANT", "VCC_PAD_REFLECT", "VCC_PAD_EDGE", "VCC_PAD_WRAP"};

/* The mode's index in pad_modes, -1 when unknown. */
static int pad_mode(const VccNode *n) {
    const char *m = vcc_attr_string(n, "mode", "constant");
    for (int i = 0; pad_modes[i]; i++)
        if (strcmp(m, pad_modes[i]) == 0) return i;
    return -1;
}

/* Per dim of a rank-r input: the begin and end pads (positive: added, negative: cropped). */
typedef struct {
    int rank, mode;
    int64_t pb[VCC_MAX_RANK], pe[VCC_MAX_RANK];
} PadSpec;

/* The pads of canonical Pad node n per dim of input shape x; errors name the node. */
static VccStatus pad_spec(VccCtx *ctx, const VccNode *n, const VccShape *x, PadSpec *p) {
    const char *op = vcc_node_op(n);
    int r = x->rank;
    int64_t pads[2 * VCC_MAX_RANK], axes[VCC_MAX_RANK];
    memset(p, 0, sizeof *p);
    p->rank = r;
    p->mode = pad_mode(n);
    int np = vcc_attr_ints(n, "pads", pads, 2 * VCC_MAX_RANK), na = vcc_attr_ints(n, "axes", axes, VCC_MAX_RANK);
    if (na < 0) {
        na = r;
        for (int i = 0; i < r; i++) axes[i] = i;
    }
    if (np < 0 || na > r || np != 2 * na) {
        vcc_error(ctx, "node '%s' (%s): pads has %d values, the input of rank %d and %d axes need %d", n->name, op,
                  np < 0 ? 0 : np, r, na, 2 * na);
        return VCC_ERR_SHAPE;
    }
    bool seen[VCC_MAX_RANK] = {false};
    for (int i = 0; i < na; i++) {
        int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
        if (a < 0 || a >= r || seen[a]) {
            vcc_error(ctx, "node '%s' (%s): axes value %lld is out of range for rank %d or repeated", n->name, op,
                      (long long)axes[i], r);
            return VCC_ERR_SHAPE;
        }
        seen[a] = true;
        p->pb[a] = pads[i];
        p->pe[a] = pads[na + i];
    }
    for (int i = 0; i < r; i++) {
        int64_t in = x->dims[i], pb = p->pb[i], pe = p->pe[i], out;
        if (pb < -in || pe < -in || pb > VCC_MAX_TENSOR_BYTES || pe > VCC_MAX_TENSOR_BYTES ||
            !vcc_add_i64(in, pb, &out) || !vcc_add_i64(out, pe, &out) || out < 1) {
            vcc_error(ctx, "node '%s' (%s): pads %lld and %lld make dim %d of size %lld empty or too large", n->name,
                      op, (long long)pb, (long long)pe, i, (long long)in);
            return VCC_ERR_SHAPE;
        }
        int64_t keep = in - (pb < 0 ? -pb : 0) - (pe < 0 ? -pe : 0), lo = pb > 0 ? pb : 0, hi = pe > 0 ? pe : 0;
        int64_t most = p->mode == MODE_REFLECT ? keep - 1 : p->mode == MODE_WRAP ? keep : -1;
        if (p->mode != MODE_CONSTANT && (lo || hi) && (keep < 1 || (most >= 0 && (lo > most || hi > most)))) {
            vcc_error(ctx, "node '%s' (%s): %s pads of %lld and %lld on dim %d, which keeps %lld elements: %s", n->name,
                      op, pad_modes[p->mode], (long long)lo, (long long)hi, i, (long long)keep,
                      keep < 1 ? "nothing to pad from" : p->mode == MODE_WRAP ? "wrap pads may be at most that"
                                                                                 : "reflect pads must be fewer");
            return VCC_ERR_UNSUPPORTED;
        }
    }
    return VCC_OK;
}

/* ------------------------------------------------------------------ Pad */

static const VccAttrSpec pad_attrs[] = {
    {"paddings", 1, 1, VCC_A_INTS},
    {"pads", 2, 10, VCC_A_INTS},
    {"value", 1, 10, VCC_A_FLOAT},
    {"mode", 1, VCC_OPSET_NOW, VCC_A_STRING},
    {NULL, 0, 0, 0},
};

/* Input i of n (opsets 11+): absent, or a constant of dtype dt with data and at most max elements (max <
 * 0: a 1-D tensor). NULL when fine, else why not. */
static const char *const_input_problem(const VccGraph *g, const VccNode *n, int i, VccDType dt, int max) {
    if (i >= n->nin || n->in[i] < 0) return NULL;
    const VccTensor *t = &g->tensors[n->in[i]];
    if (!vcc_is_initializer(g, n->in[i]) || !t->data) return "must be a constant (an initializer or a Constant)";
    if (dt == VCC_F32 && t->dtype != VCC_BOOL) { /* the constant: a number of any type, held as a float32 */
        float v;
        if (vcc_shape_numel(&t->shape) == 1 && !vcc_value_as_float(t, &v))
            return "must be exact in float32 (vcc holds Pad's constant as one)";
    } else if (t->dtype != dt) {
        return dt == VCC_I64 ? "must hold int64 or int32 values" : "must hold a number";
    }
    if (max < 0 ? t->shape.rank != 1 : vcc_shape_numel(&t->shape) > max) return max < 0 ? "must be 1-D" : "must be a scalar";
    return NULL;
}

static void pad_check_attrs(VccCtx *ctx, const VccGraph *g, const VccNode *n) {
    int mode = pad_mode(n);
    if (mode < 0)
        vcc_op_attr_problem(ctx, n, "%s attribute '%s'", "mode", "not one of constant, reflect, edge, wrap");
    else if (mode == MODE_WRAP && g->opset < 19)
        vcc_op_attr_problem(ctx, n, "%s attribute '%s'", "mode=wrap", "exists from opset 19");
    if (g->opset < 11) {
        const char *a = g->opset < 2 ? "paddings" : "pads";
        int64_t v[2 * VCC_MAX_RANK];
        int c = vcc_attr_ints(n, a, v, 2 * VCC_MAX_RANK);
        if (c < 0) vcc_op_attr_problem(ctx, n, "%s attribute '%s'", a, "required, absent");
        else if (c % 2 || c > 2 * VCC_MAX_RANK)
            vcc_op_attr_problem(ctx, n, "%s attribute '%s'", a, "needs a begin and an end value for each of up to 8 dims");
        if (n->nin > 1) vcc_op_attr_problem(ctx, n, "%s %s", "inputs after data", "exist from opset 11");
        return;
    }
    static const char *const names[] = {"pads", "constant_value", "axes"};
    const char *why;
    if (n->nin < 2 || n->in[1] < 0) vcc_op_attr_problem(ctx, n, "%s input '%s'", "pads", "required, absent");
    for (int i = 1; i < 4 && i < n->nin; i++)
        if (i == 3 && g->opset < 18 && n->in[3] >= 0)
            vcc_op_attr_problem(ctx, n, "%s input '%s'", "axes", "exists from opset 18");
        else if ((why = const_input_problem(g, n, i, i == 2 ? VCC_F32 : VCC_I64, i == 2 ? 1 : -1)))
            vcc_op_attr_problem(ctx, n, "%s input '%s'", names[i - 1], why);
}

/* Make t's values, n of them, the INTS attribute a of node n. */
static void ints_from_const(VccNode *n, const char *a, const VccTensor *t) {
    int64_t c = vcc_shape_numel(&t->shape);
    vcc_attr_set_ints(n, a, (const int64_t *)t->data, (int)c);
}

/* Every opset's Pad -> Pad(data) with the attributes pads, [axes,] value, mode (pad_check_attrs refused
 * inputs that are not constants). */
static VccStatus pad_canon(VccCtx *ctx, VccGraph *g, int k) {
    VccNode *n = &g->nodes[k];
    if (n->nin < 1 || n->in[0] < 0 || n->nout != 1 || n->out[0] < 0) {
        vcc_error(ctx, "node '%s' (Pad): expected a data input and one output", n->name);
        return VCC_ERR_SHAPE;
    }
    const VccAttr *a = vcc_attr_get(n, "paddings");
    if (a) { /* opset 1 */
        vcc_attr_set_ints(n, "pads", a->ints, a->n);
        vcc_attr_drop(n, "paddings");
    }
    if (n->nin > 1 && n->in[1] >= 0) ints_from_const(n, "pads", &g->tensors[n->in[1]]);
    float value;
    if (n->nin > 2 && n->in[2] >= 0 && vcc_shape_numel(&g->tensors[n->in[2]].shape) == 1 &&
        vcc_value_as_float(&g->tensors[n->in[2]], &value))
        vcc_attr_set_float(n, "value", value);
    if (n->nin > 3 && n->in[3] >= 0) ints_from_const(n, "axes", &g->tensors[n->in[3]]);
    for (int i = 1; i < n->nin; i++) /* a constant_value initializer is a constant, not a parameter */
        if (n->in[i] >= 0 && g->tensors[n->in[i]].kind == VCC_T_PARAM) g->tensors[n->in[i]].kind = VCC_T_CONST;
    n->nin = 1;
    if (!vcc_attr_get(n, "mode")) vcc_attr_set_string(n, "mode", "constant");
    if (!vcc_attr_get(n, "value")) vcc_attr_set_float(n, "value", 0.0f);
    return VCC_OK;
}

/* The output shape of pads p over input shape x. */
static VccShape padded_shape(const PadSpec *p, const VccShape *x) {
    VccShape s = *x;
    for (int i = 0; i < p->rank; i++) s.dims[i] += p->pb[i] + p->pe[i];
    return s;
}

/* X (d...) -> Y (d + begin + end ...). In the backward graph (the gradient of a constant-mode Pad, pads
 * negated), the same rule over dY. */
static VccStatus pad_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    /* data of other types than float32 run on the typed kernel (ONNX Pad-13+: any type) */
    const VccTensor *x = n->nin >= 1 && n->in[0] >= 0 && g->tensors[n->in[0]].dtype != VCC_BOOL
                             ? vcc_need_numeric(ctx, g, n, 0)
                             : vcc_need_input(ctx, g, n, 0, VCC_F32);
    if (!x) return VCC_ERR_SHAPE;
    if (n->nin != 1 || n->nout != 1 || n->out[0] < 0) return vcc_operands_missing(ctx, n);
    PadSpec p;
    VccStatus st = pad_spec(ctx, n, &x->shape, &p);
    if (st) return st;
    float value = vcc_attr_float(n, "value", 0.0f);
    if (x->dtype != VCC_F32 && x->dtype != VCC_F64 && !(fabsf(value) < 9.2e18f && value == truncf(value))) {
        vcc_error(ctx, "node '%s' (%s): the constant %g is not a value of the data's type %s", n->name,
                  vcc_node_op(n), (double)value, vcc_dtype_name(x->dtype));
        return VCC_ERR_SHAPE;
    }
    VccShape y = padded_shape(&p, &x->shape);
    return vcc_put_output(ctx, g, n, check, n->out[0], x->dtype, &y) ? VCC_OK : VCC_ERR_SHAPE;
}

/* constant: Pad -> Pad(dY, pads negated, value 0) -> dX; reflect, edge, wrap: Pad -> PadGrad(dY) -> dX */
static VccStatus pad_grad(VccDiff *d, int k) {
    int x = d->g->nodes[k].in[0], dy = vcc_diff_dy(d, k, 0);
    int dx = vcc_diff_new_grad(d, x);
    PadSpec p;
    VccStatus st = pad_spec(d->ctx, &d->g->nodes[k], &d->g->tensors[x].shape, &p);
    if (st) return st;
    int kk = vcc_diff_add_node(d, p.mode == MODE_CONSTANT ? VCC_OP_PAD : VCC_OP_PAD_GRAD, k, "grad", &dy, 1, &dx, 1);
    if (p.mode == MODE_CONSTANT) {
        int64_t neg[2 * VCC_MAX_RANK];
        for (int i = 0; i < p.rank; i++) {
            neg[i] = -p.pb[i];
            neg[p.rank + i] = -p.pe[i];
        }
        VccNode *b = &d->g->nodes[kk];
        vcc_attr_drop(b, "axes");
        vcc_attr_set_ints(b, "pads", neg, 2 * p.rank);
        vcc_attr_set_float(b, "value", 0.0f);
    }
    vcc_diff_accum(d, x, dx);
    return VCC_OK;
}

static void emit_dims(FILE *f, const int64_t *v, int n) {
    fputc('{', f);
    for (int i = 0; i < n; i++) fprintf(f, i ? ", %" PRId64 : "%" PRId64, v[i]);
    fputs(n ? "}" : "0}", f);
}

/* The kernel call `fn(rt, &d, in, out)` of pads p over x (the forward input's shape), with its
 * VccPadDesc d (runtime/elem/pad.h); in of another type than float32: typed_pad_forward. */
static void emit_pad_call(VccEmit *e, const char *fn, const PadSpec *p, const VccShape *x, float value, int in,
                          int out) {
    VccDType dt = e->g->tensors[in].dtype;
    int64_t outd[VCC_MAX_RANK], lo[VCC_MAX_RANK], crop[VCC_MAX_RANK], keep[VCC_MAX_RANK];
    for (int i = 0; i < p->rank; i++) {
        outd[i] = x->dims[i] + p->pb[i] + p->pe[i];
        lo[i] = p->pb[i] > 0 ? p->pb[i] : 0;
        crop[i] = p->pb[i] < 0 ? -p->pb[i] : 0;
        keep[i] = x->dims[i] - crop[i] - (p->pe[i] < 0 ? -p->pe[i] : 0);
    }
    fprintf(e->f, "    { static const VccPadDesc d = {%d, %s, ", p->rank, pad_mode_enum[p->mode]);
    if (isnan(value)) fputs("NAN", e->f);
    else if (isinf(value)) fputs(value < 0 ? "-INFINITY" : "INFINITY", e->f);
    else fprintf(e->f, "(float)%.9g", (double)value);
    fputs(", ", e->f);
    const int64_t *arrays[5] = {x->dims, outd, lo, crop, keep};
    for (int a = 0; a < 5; a++) {
        emit_dims(e->f, arrays[a], p->rank);
        fputs(a < 4 ? ", " : "};\n", e->f);
    }
    if (dt == VCC_F32) {
        fprintf(e->f, "      %s(rt, &d, %s, %s); }\n", fn, vcc_emit_f32(e, in), vcc_emit_f32(e, out));
        return;
    }
    int64_t bits = (int64_t)value; /* the constant in the data's type (exact: pad_check_attrs) */
    if (dt == VCC_F64) {
        double v = value;
        memcpy(&bits, &v, sizeof bits);
    }
    fprintf(e->f, "      typed_pad_forward(rt, %s, &d, %s, INT64_C(%" PRId64 "), %s); }\n", vcc_emit_et(dt),
            vcc_emit_ptr(e, in), bits, vcc_emit_ptr(e, out));
}

static VccStatus pad_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    const VccShape *x = &e->g->tensors[n->in[0]].shape;
    PadSpec p;
    VccStatus st = pad_spec(e->ctx, n, x, &p);
    if (st) return st;
    emit_pad_call(e, "pad_forward", &p, x, vcc_attr_float(n, "value", 0.0f), n->in[0], n->out[0]);
    return VCC_OK;
}

const VccOpDef vcc_def_PAD = {VCC_OPF_TYPED, 0, pad_attrs, pad_check_attrs, pad_canon, pad_shape, pad_grad, pad_emit};

/* ------------------------------------------------------------------ PadGrad */

/* dY -> dX, with the forward Pad's attributes over dX's shape (reflect, edge, wrap) */
static VccStatus pad_grad_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    (void)check;
    const VccNode *n = &g->nodes[k];
    const VccTensor *dy = vcc_need_input(ctx, g, n, 0, VCC_F32);
    if (!dy || n->nin != 1 || n->nout != 1 || n->out[0] < 0) return vcc_operands_missing(ctx, n);
    const VccTensor *dx = &g->tensors[n->out[0]];
    PadSpec p;
    if (dx->dtype != VCC_F32 || pad_spec(ctx, n, &dx->shape, &p) || p.mode == MODE_CONSTANT) return vcc_shape_mismatch(ctx, n);
    VccShape y = padded_shape(&p, &dx->shape);
    return vcc_same_shape(&y, &dy->shape) ? VCC_OK : vcc_shape_mismatch(ctx, n);
}

static VccStatus pad_grad_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    const VccShape *x = &e->g->tensors[n->out[0]].shape;
    PadSpec p;
    VccStatus st = pad_spec(e->ctx, n, x, &p);
    if (st) return st;
    emit_pad_call(e, "pad_backward", &p, x, 0.0f, n->in[0], n->out[0]);
    return VCC_OK;
}

const VccOpDef vcc_def_PAD_GRAD = {0, 0, NULL, NULL, NULL, pad_grad_shape, NULL, pad_grad_emit};
