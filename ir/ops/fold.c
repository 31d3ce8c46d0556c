/*
 * fold.c — the compile-time evaluator: nodes whose inputs are all known while compiling are evaluated on
 * the host, in ONNX semantics of the model's opset, and their outputs become CONST tensors with data.
 *
 * What is known while compiling: a CONST tensor with data (int/bool initializers, Constant outputs,
 * earlier folds) and, for Shape and Size, the static shape of any tensor (passes/shape infers shapes
 * node by node, so a Shape node sees its input's shape). A float initializer is a parameter (trained,
 * loaded from the weights file): it is not a compile-time value. Ops are found by their ONNX name
 * (n->onnx_op), so the evaluator serves every ops.def row, whatever family defines it, and nodes of ops
 * that have no row (kept as VCC_OP_UNSUPPORTED by the loader) when they fold (vcc_fold_plan tells
 * passes/support.c which ones will). A folded node never reaches its op's shape rule or emitter:
 * vcc_fold_sweep removes it, then removes dead nodes and the constants only they read.
 *
 * Element types: F32, F64, I32, I64, BOOL (ir/ir.h). Float arithmetic is done in double and rounded
 * once to the output type (for +, -, *, / of floats that is the float result itself); integer
 * arithmetic wraps like two's complement (int32 results at 32 bits); reductions accumulate in double
 * (floats) or int64 (integers). Results larger than VCC_FOLD_MAX_ELEMS elements are not folded (they
 * would be program text).
 *
 * Source: ONNX Operators (https://onnx.ai/onnx/operators/), per op below with the opsets whose forms it
 * reads; inputs that an op took as attributes in early opsets (Unsqueeze/Squeeze axes before 13, Slice's
 * starts/ends/axes before 10, Reshape's shape before 5, Reduce* axes before 13/18) are read from the input
 * when the node has it (a family's canonical form may have moved them) and from the attribute otherwise.
 *
 * Letter legend: shapes here are ONNX shapes of constants, no N/C/T/H/W meaning.
 */
#include "ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FOLD_SCRATCH 16 /* results of one node, at most (Split's); Fold.out[FOLD_SCRATCH] is scratch */

/* ======================================================================== values */

/* A tensor value: dtype, shape, n elements at data (a constant's bytes, or a result being built). */
typedef struct {
    VccDType dt;
    VccShape shape;
    int64_t n;
    void *data;
} Val;

static bool is_float(VccDType dt) { return dt == VCC_F32 || dt == VCC_F64; }
/* The integer types whose values int64 holds (uint64 does not: folding refuses it, see fold_node). */
static bool is_int(VccDType dt) {
    return dt == VCC_I64 || dt == VCC_I32 || dt == VCC_I16 || dt == VCC_I8 || dt == VCC_U32 || dt == VCC_U16 ||
           dt == VCC_U8;
}

/* The element as int64: integers and bools exactly; floats are never read this way (callers check). */
static int64_t get_i(const Val *v, int64_t i);

static double get_f(const Val *v, int64_t i) {
    switch (v->dt) {
    case VCC_F32: return ((const float *)v->data)[i];
    case VCC_F64: return ((const double *)v->data)[i];
    case VCC_I64: return (double)((const int64_t *)v->data)[i];
    case VCC_BOOL: return ((const unsigned char *)v->data)[i] != 0;
    default: return (double)get_i(v, i);
    }
}

static int64_t get_i(const Val *v, int64_t i) {
    switch (v->dt) {
    case VCC_I64: return ((const int64_t *)v->data)[i];
    case VCC_I32: return ((const int32_t *)v->data)[i];
    case VCC_I16: return ((const int16_t *)v->data)[i];
    case VCC_I8: return ((const int8_t *)v->data)[i];
    case VCC_U32: return ((const uint32_t *)v->data)[i];
    case VCC_U16: return ((const uint16_t *)v->data)[i];
    case VCC_U8: return ((const uint8_t *)v->data)[i];
    case VCC_BOOL: return ((const unsigned char *)v->data)[i] != 0;
    default: return (int64_t)get_f(v, i);
    }
}

/* x rounded to float type dt (F32: to the nearest float). */
static double round_to(VccDType dt, double x) { return dt == VCC_F32 ? (double)(float)x : x; }

/* Store x rounded once to v's float type (floats), or its truth (bool). */
static void put_f(Val *v, int64_t i, double x) {
    switch (v->dt) {
    case VCC_F32: ((float *)v->data)[i] = (float)x; break;
    case VCC_F64: ((double *)v->data)[i] = x; break;
    case VCC_BOOL: ((unsigned char *)v->data)[i] = x != 0; break;
    default: VCC_ASSERT(!"put_f on an integer value");
    }
}

/* Store integer x in v's type: narrower integers keep the low bits (two's complement), bool its truth,
 * floats the nearest value. */
static void put_i(Val *v, int64_t i, int64_t x) {
    switch (v->dt) {
    case VCC_I64: ((int64_t *)v->data)[i] = x; break;
    case VCC_I32: ((int32_t *)v->data)[i] = (int32_t)(uint32_t)(uint64_t)x; break;
    case VCC_I16: ((int16_t *)v->data)[i] = (int16_t)(uint16_t)(uint64_t)x; break;
    case VCC_I8: ((int8_t *)v->data)[i] = (int8_t)(uint8_t)(uint64_t)x; break;
    case VCC_U32: ((uint32_t *)v->data)[i] = (uint32_t)(uint64_t)x; break;
    case VCC_U16: ((uint16_t *)v->data)[i] = (uint16_t)(uint64_t)x; break;
    case VCC_U8: ((uint8_t *)v->data)[i] = (uint8_t)(uint64_t)x; break;
    case VCC_BOOL: ((unsigned char *)v->data)[i] = x != 0; break;
    case VCC_F32: ((float *)v->data)[i] = (float)x; break;
    case VCC_F64: ((double *)v->data)[i] = (double)x; break;
    default: VCC_ASSERT(!"put_i on an untyped value");
    }
}

/* Copy element j of src into element i of dst (same dtype). */
static void copy_elem(Val *dst, int64_t i, const Val *src, int64_t j) {
    size_t es = vcc_dtype_size(dst->dt);
    memcpy((char *)dst->data + (size_t)i * es, (const char *)src->data + (size_t)j * es, es);
}

/* Coordinates of flat index i in shape s (C order), and back. */
static void unravel(const VccShape *s, int64_t i, int64_t *c) {
    for (int d = s->rank - 1; d >= 0; d--) {
        c[d] = s->dims[d] ? i % s->dims[d] : 0;
        i = s->dims[d] ? i / s->dims[d] : 0;
    }
}

static int64_t ravel(const VccShape *s, const int64_t *c) {
    int64_t i = 0;
    for (int d = 0; d < s->rank; d++) i = i * s->dims[d] + c[d];
    return i;
}

/* ======================================================================== one evaluation */

enum { F_OK, F_CANT, F_ERR }; /* folded; cannot fold (f->why says why); an error in the model (reported) */

typedef struct {
    VccCtx *ctx;
    const VccGraph *g;
    const VccNode *n;
    const char *op;  /* ONNX op name */
    int64_t opset;
    Val *in;         /* n->nin values; in[i].data NULL for an absent input */
    int nin;
    Val out[FOLD_SCRATCH + 1]; /* results (data non-NULL once made, owned until moved into the graph); then scratch */
    char why[192];
} Fold;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static int cant(Fold *f, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->why, sizeof f->why, fmt, ap);
    va_end(ap);
    return F_CANT;
}

/* An error in the model: "node 'x' (Op): <message>". */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static int bad(Fold *f, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *msg = vcc_vstrfmt(fmt, ap);
    va_end(ap);
    vcc_error(f->ctx, "node '%s' (%s): %s", f->n->name, f->op, msg);
    free(msg);
    return F_ERR;
}

static bool has(const Fold *f, int i) { return i < f->nin && f->in[i].data; }

/* Input i, which the op requires. */
static const Val *need(Fold *f, int i) {
    if (has(f, i)) return &f->in[i];
    bad(f, "input %d is missing", i);
    return NULL;
}

/* Make result o of dtype dt and shape s (zeroed); F_CANT when it has more than VCC_FOLD_MAX_ELEMS
 * elements. */
static int new_out(Fold *f, int o, VccDType dt, const VccShape *s) {
    int64_t n = vcc_shape_numel(s);
    if (n < 0 || n > VCC_FOLD_MAX_ELEMS)
        return cant(f, "its result would have more than %lld elements", (long long)VCC_FOLD_MAX_ELEMS);
    if (dt == VCC_U64) return cant(f, "vcc does not evaluate uint64 values while compiling");
    Val *v = &f->out[o];
    v->dt = dt;
    v->shape = *s;
    v->n = n;
    v->data = vcc_calloc((size_t)(n ? n : 1), vcc_dtype_size(dt));
    return F_OK;
}

/* The integers of a 1-D (or scalar) int32/int64 input or INTS attribute: input i when the node has it,
 * else attribute name (the form of earlier opsets). *cnt = -1 when neither is there. */
static int int_list(Fold *f, int i, const char *name, int64_t *out, int max, int *cnt) {
    *cnt = -1;
    if (has(f, i)) {
        const Val *v = &f->in[i];
        if (!is_int(v->dt) || v->shape.rank > 1) return bad(f, "input %d must be a 1-D integer tensor", i);
        if (v->n > max) return cant(f, "input %d has more than %d values", i, max);
        for (int64_t k = 0; k < v->n; k++) out[k] = get_i(v, k);
        *cnt = (int)v->n;
        return F_OK;
    }
    const VccAttr *a = name ? vcc_attr_get(f->n, name) : NULL;
    if (!a) return F_OK;
    if (a->type != VCC_A_INTS) return bad(f, "attribute '%s' must be a list of integers", name);
    if (a->n > max) return cant(f, "attribute '%s' has more than %d values", name, max);
    memcpy(out, a->ints, sizeof(int64_t) * (size_t)a->n);
    *cnt = a->n;
    return F_OK;
}

/* Axis a of a rank-r tensor, negative counting from the end: into [0, r); F_ERR when out of range. */
static int norm_axis(Fold *f, int64_t *a, int r, const char *what) {
    if (*a < -r || *a >= r) return bad(f, "%s %lld is out of range for rank %d", what, (long long)*a, r);
    if (*a < 0) *a += r;
    return F_OK;
}

/* ------------------------------------------------------------------ broadcasting */

/* Multidirectional (numpy) broadcasting of a and b into out; false when they do not broadcast. */
static bool bcast_shape(const VccShape *a, const VccShape *b, VccShape *out) {
    int r = a->rank > b->rank ? a->rank : b->rank;
    out->rank = r;
    for (int d = 0; d < r; d++) {
        int ia = d - (r - a->rank), ib = d - (r - b->rank);
        int64_t x = ia >= 0 ? a->dims[ia] : 1, y = ib >= 0 ? b->dims[ib] : 1;
        if (x != y && x != 1 && y != 1) return false;
        out->dims[d] = x == 1 ? y : x;
    }
    return true;
}

/* The flat index in a tensor of shape in of element i of its broadcast to shape out. */
static int64_t bcast_src(const VccShape *out, const VccShape *in, int64_t i) {
    int64_t idx = 0, stride = 1;
    for (int d = out->rank - 1; d >= 0; d--) {
        int64_t c = out->dims[d] ? i % out->dims[d] : 0;
        i = out->dims[d] ? i / out->dims[d] : 0;
        int id = d - (out->rank - in->rank);
        if (id < 0) continue;
        if (in->dims[id] != 1) idx += c * stride;
        stride *= in->dims[id];
    }
    return idx;
}

/* Opsets before 7 broadcast only with broadcast=1: B's shape then lines up with A's from axis (default:
 * A's last dims). *b gets B's shape at A's rank (1 elsewhere); F_ERR when the shapes do not fit. */
static int legacy_bcast(Fold *f, const Val *a, VccShape *b) {
    if (vcc_attr_int(f->n, "broadcast", 0) == 0) {
        if (!vcc_same_shape(&a->shape, b)) return bad(f, "the shapes of A and B differ and broadcast is 0");
        return F_OK;
    }
    int ra = a->shape.rank, rb = b->rank;
    int64_t axis = vcc_attr_int(f->n, "axis", ra - rb);
    if (axis < 0 || axis + rb > ra) return bad(f, "B does not fit A from axis %lld", (long long)axis);
    VccShape s = {ra, {0}};
    for (int d = 0; d < ra; d++) s.dims[d] = d >= axis && d < axis + rb ? b->dims[d - axis] : 1;
    for (int d = 0; d < ra; d++)
        if (s.dims[d] != 1 && s.dims[d] != a->shape.dims[d]) return bad(f, "B does not fit A from axis %lld", (long long)axis);
    *b = s;
    return F_OK;
}

/* ======================================================================== elementwise ops */

typedef enum {
    B_ADD, B_SUB, B_MUL, B_DIV, B_POW, B_MOD, B_MAX, B_MIN,               /* arithmetic: the inputs' type */
    B_EQ, B_LT, B_LE, B_GT, B_GE,                                         /* comparison: bool */
    B_AND, B_OR, B_XOR,                                                   /* logic: bool on bool */
} BinOp;

/* Integer a op b, wrapping; F_ERR on a division by zero. */
static int int_binary(Fold *f, BinOp op, int64_t a, int64_t b, int64_t *r) {
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    switch (op) {
    case B_ADD: *r = (int64_t)(ua + ub); break;
    case B_SUB: *r = (int64_t)(ua - ub); break;
    case B_MUL: *r = (int64_t)(ua * ub); break;
    case B_DIV:
    case B_MOD:
        if (b == 0) return bad(f, "integer division by zero");
        if (b == -1) { /* INT64_MIN / -1 overflows in C: wrap as two's complement does */
            *r = op == B_DIV ? (int64_t)(0 - ua) : 0;
            break;
        }
        if (op == B_DIV) {
            *r = a / b; /* truncation, as ONNX's integer Div */
        } else {
            *r = a % b; /* fmod=1: the sign of the dividend; fmod=0: of the divisor, like Python */
            if (!vcc_attr_int(f->n, "fmod", 0) && *r && ((*r < 0) != (b < 0))) *r += b;
        }
        break;
    case B_POW:
        if (b < 0) {
            *r = (int64_t)pow((double)a, (double)b); /* 1, -1 or 0 after truncation */
        } else {
            uint64_t acc = 1, base = ua;
            for (uint64_t e = (uint64_t)b; e; e >>= 1, base *= base)
                if (e & 1) acc *= base;
            *r = (int64_t)acc;
        }
        break;
    case B_MAX: *r = a > b ? a : b; break;
    case B_MIN: *r = a < b ? a : b; break;
    default: VCC_ASSERT(!"not an arithmetic op");
    }
    return F_OK;
}

static double float_binary(BinOp op, double a, double b) {
    switch (op) {
    case B_ADD: return a + b;
    case B_SUB: return a - b;
    case B_MUL: return a * b;
    case B_DIV: return a / b;
    case B_POW: return pow(a, b);
    case B_MOD: return fmod(a, b);
    case B_MAX: return isnan(a) || isnan(b) ? NAN : a > b ? a : b;
    case B_MIN: return isnan(a) || isnan(b) ? NAN : a < b ? a : b;
    default: VCC_ASSERT(!"not an arithmetic op"); return 0;
    }
}

static bool compare(BinOp op, const Val *a, int64_t i, const Val *b, int64_t j) {
    int c;
    if (is_float(a->dt)) {
        double x = get_f(a, i), y = get_f(b, j);
        if (isnan(x) || isnan(y)) return false;
        c = x < y ? -1 : x > y;
    } else {
        int64_t x = get_i(a, i), y = get_i(b, j);
        c = x < y ? -1 : x > y;
    }
    switch (op) {
    case B_EQ: return c == 0;
    case B_LT: return c < 0;
    case B_LE: return c <= 0;
    case B_GT: return c > 0;
    default: return c >= 0;
    }
}

/* r = a op b with broadcasting into result o (a and b may be earlier results). */
static int binary_vals(Fold *f, BinOp op, const Val *a, const Val *b, int o) {
    bool cmp = op >= B_EQ && op <= B_GE, logic = op >= B_AND;
    if (a->dt != b->dt && op != B_POW)
        return cant(f, "its inputs have different element types (%s, %s)", vcc_dtype_name(a->dt),
                    vcc_dtype_name(b->dt));
    if (logic && a->dt != VCC_BOOL) return cant(f, "it takes bool inputs");
    if (!cmp && !logic && a->dt == VCC_BOOL) return cant(f, "it takes numeric inputs");
    if (op == B_MOD && is_float(a->dt) && !vcc_attr_int(f->n, "fmod", 0))
        return bad(f, "floating-point Mod needs fmod=1");
    VccShape bs = b->shape, os;
    if (f->opset < 7 && vcc_attr_get(f->n, "broadcast") != NULL) {
        int st = legacy_bcast(f, a, &bs);
        if (st) return st;
    } else if (f->opset < 7 && !vcc_same_shape(&a->shape, &bs)) {
        return bad(f, "the shapes of A and B differ and broadcast is 0");
    }
    if (!bcast_shape(&a->shape, &bs, &os)) return bad(f, "the shapes of its inputs do not broadcast");
    VccDType odt = cmp || logic ? VCC_BOOL : a->dt;
    Val r;
    int st = new_out(f, FOLD_SCRATCH, odt, &os); /* built in the scratch slot, then moved: a or b may be out[o] */
    if (st) return st;
    r = f->out[FOLD_SCRATCH];
    for (int64_t i = 0; i < r.n && !st; i++) {
        int64_t ia = bcast_src(&os, &a->shape, i), ib = bcast_src(&os, &bs, i);
        if (cmp) {
            put_i(&r, i, compare(op, a, ia, b, ib));
        } else if (logic) {
            bool x = get_i(a, ia), y = get_i(b, ib);
            put_i(&r, i, op == B_AND ? x && y : op == B_OR ? x || y : x != y);
        } else if (is_float(a->dt)) {
            put_f(&r, i, float_binary(op, get_f(a, ia), get_f(b, ib)));
        } else if (op == B_POW && is_float(b->dt)) {
            put_i(&r, i, (int64_t)pow((double)get_i(a, ia), get_f(b, ib)));
        } else {
            int64_t v = 0;
            st = int_binary(f, op, get_i(a, ia), get_i(b, ib), &v);
            put_i(&r, i, v);
        }
    }
    if (st) {
        free(r.data);
        f->out[FOLD_SCRATCH].data = NULL;
        return st;
    }
    free(f->out[o].data);
    f->out[o] = r;
    f->out[FOLD_SCRATCH].data = NULL;
    return F_OK;
}

static const struct {
    const char *name;
    BinOp op;
    bool variadic; /* Max, Min, Sum: one or more inputs */
} binary_ops[] = {
    {"Add", B_ADD, false}, {"Sub", B_SUB, false}, {"Mul", B_MUL, false},     {"Div", B_DIV, false},
    {"Pow", B_POW, false}, {"Mod", B_MOD, false}, {"Max", B_MAX, true},      {"Min", B_MIN, true},
    {"Sum", B_ADD, true},  {"Equal", B_EQ, false}, {"Less", B_LT, false},    {"LessOrEqual", B_LE, false},
    {"Greater", B_GT, false}, {"GreaterOrEqual", B_GE, false}, {"And", B_AND, false}, {"Or", B_OR, false},
    {"Xor", B_XOR, false},
};

/* ONNX Add/Sub/Mul/Div 1, 6 (legacy broadcast), 7, 13, 14; Pow 1, 7, 12 (exponent of another type), 13,
 * 15; Mod 10, 13; Max/Min/Sum 1, 6, 8 (broadcast), 12, 13; Equal 1, 7, 11, 13, 19; Less/Greater 1, 7, 9,
 * 13; LessOrEqual/GreaterOrEqual 12, 16; And/Or/Xor 1, 7. */
static int fold_binary(Fold *f, int which) {
    BinOp op = binary_ops[which].op;
    if (!binary_ops[which].variadic) {
        const Val *a = need(f, 0), *b = a ? need(f, 1) : NULL;
        return b ? binary_vals(f, op, a, b, 0) : F_ERR;
    }
    if (!need(f, 0)) return F_ERR;
    const Val *acc = &f->in[0];
    if (f->nin == 1) { /* one input: itself */
        int st = new_out(f, 0, acc->dt, &acc->shape);
        if (!st) memcpy(f->out[0].data, acc->data, (size_t)acc->n * vcc_dtype_size(acc->dt));
        return st;
    }
    for (int i = 1; i < f->nin; i++) {
        const Val *b = need(f, i);
        if (!b) return F_ERR;
        int st = binary_vals(f, op, acc, b, 0);
        if (st) return st;
        acc = &f->out[0];
    }
    return F_OK;
}

/* ------------------------------------------------------------------ unary */

static double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static double reciprocal(double x) { return 1.0 / x; }
static double neg(double x) { return -x; }
static double relu(double x) { return x < 0 ? 0 : x; }
static double sign(double x) { return x > 0 ? 1 : x < 0 ? -1 : x; }

static const struct {
    const char *name;
    double (*fn)(double);
    int int_op; /* 0: floats only; 1 Neg, 2 Abs, 3 Sign, 4 Relu on integers too */
} unary_ops[] = {
    {"Sin", sin, 0},   {"Cos", cos, 0},   {"Tan", tan, 0},     {"Asin", asin, 0},   {"Acos", acos, 0},
    {"Atan", atan, 0}, {"Sinh", sinh, 0}, {"Cosh", cosh, 0},   {"Tanh", tanh, 0},   {"Exp", exp, 0},
    {"Log", log, 0},   {"Sqrt", sqrt, 0}, {"Erf", erf, 0},     {"Sigmoid", sigmoid, 0},
    {"Reciprocal", reciprocal, 0},        {"Floor", floor, 0}, {"Ceil", ceil, 0},
    {"Round", rint, 0}, /* half to even, the default rounding mode */
    {"Neg", neg, 1},   {"Abs", fabs, 2},  {"Sign", sign, 3},   {"Relu", relu, 4},
};

/* ONNX Sin/Cos/Tan/Asin/Acos/Atan 7; Sinh/Cosh 9; Tanh, Exp, Log, Sqrt, Sigmoid, Reciprocal, Floor, Ceil,
 * Neg, Abs, Relu 1, 6, 13 (14 Relu); Erf, Sign 9, 13; Round 11. Floats, and integers for Neg, Abs, Sign,
 * Relu (opsets that allow them). */
static int fold_unary(Fold *f, int which) {
    const Val *x = need(f, 0);
    if (!x) return F_ERR;
    int iop = unary_ops[which].int_op;
    if (!is_float(x->dt) && !(iop && is_int(x->dt))) return cant(f, "its input is %s", vcc_dtype_name(x->dt));
    int st = new_out(f, 0, x->dt, &x->shape);
    if (st) return st;
    for (int64_t i = 0; i < x->n; i++) {
        if (is_float(x->dt)) {
            put_f(&f->out[0], i, unary_ops[which].fn(get_f(x, i)));
            continue;
        }
        int64_t v = get_i(x, i);
        uint64_t u = (uint64_t)v;
        int64_t r = iop == 1 ? (int64_t)(0 - u) : iop == 2 ? (v < 0 ? (int64_t)(0 - u) : v) : iop == 3 ? (v > 0) - (v < 0)
                                                                                                : (v < 0 ? 0 : v);
        put_i(&f->out[0], i, r);
    }
    return F_OK;
}

/* ONNX Not 1: logical negation of a bool tensor. */
static int fold_not(Fold *f) {
    const Val *x = need(f, 0);
    if (!x) return F_ERR;
    if (x->dt != VCC_BOOL) return bad(f, "Not takes a bool input, not %s", vcc_dtype_name(x->dt));
    int st = new_out(f, 0, VCC_BOOL, &x->shape);
    for (int64_t i = 0; !st && i < x->n; i++) put_i(&f->out[0], i, !get_i(x, i));
    return st;
}

/* ONNX Where 9, 16: cond ? X : Y, all three broadcast together. */
static int fold_where(Fold *f) {
    const Val *c = need(f, 0), *x = c ? need(f, 1) : NULL, *y = x ? need(f, 2) : NULL;
    if (!y) return F_ERR;
    if (c->dt != VCC_BOOL) return bad(f, "the condition must be bool, not %s", vcc_dtype_name(c->dt));
    if (x->dt != y->dt) return bad(f, "X and Y have different element types");
    VccShape xy, os;
    if (!bcast_shape(&x->shape, &y->shape, &xy) || !bcast_shape(&c->shape, &xy, &os))
        return bad(f, "the shapes of its inputs do not broadcast");
    int st = new_out(f, 0, x->dt, &os);
    for (int64_t i = 0; !st && i < f->out[0].n; i++) {
        bool take_x = get_i(c, bcast_src(&os, &c->shape, i));
        const Val *s = take_x ? x : y;
        copy_elem(&f->out[0], i, s, bcast_src(&os, &s->shape, i));
    }
    return st;
}

/* ------------------------------------------------------------------ Cast */

/* The dtype Cast's 'to' names: TensorProto.DataType (opset 6+) or its name as a string (opsets 1-5). */
static int cast_target(Fold *f, VccDType *dt) {
    const VccAttr *a = vcc_attr_get(f->n, "to");
    if (!a) return bad(f, "attribute 'to' is missing");
    if (a->type == VCC_A_STRING) {
        static const char *const names[] = {[VCC_F32] = "FLOAT", [VCC_I64] = "INT64", [VCC_BOOL] = "BOOL",
                                            [VCC_I32] = "INT32", [VCC_F64] = "DOUBLE"};
        for (VccDType d = VCC_F32; d <= VCC_F64; d++)
            if (strcmp(a->s, names[d]) == 0) *dt = d;
        if (*dt == VCC_DT_UNDEF) return cant(f, "it casts to %s, an element type vcc does not have", a->s);
        return F_OK;
    }
    if (a->type != VCC_A_INT) return bad(f, "attribute 'to' must be an integer");
    *dt = vcc_dtype_from_onnx((int)a->i);
    if (*dt == VCC_DT_UNDEF)
        return cant(f, "it casts to element type %lld, which vcc does not have", (long long)a->i);
    return F_OK;
}

/* Element j of x converted to result element i (ONNX Cast: floats to integers truncate toward zero; to
 * bool is "not zero"); F_ERR for a float that the integer type cannot hold. */
static int convert(Fold *f, Val *r, int64_t i, const Val *x, int64_t j) {
    if (!is_float(x->dt)) {
        put_i(r, i, get_i(x, j));
        return F_OK;
    }
    double d = get_f(x, j);
    if (is_float(r->dt) || r->dt == VCC_BOOL) {
        put_f(r, i, d);
        return F_OK;
    }
    double lim = r->dt == VCC_I32 ? 2147483648.0 : 9223372036854775808.0;
    if (!(d > -lim - 1 && d < lim)) /* also NaN */
        return bad(f, "value %g does not fit %s", d, vcc_dtype_name(r->dt));
    put_i(r, i, (int64_t)d);
    return F_OK;
}

/* ONNX Cast 1 (to: a string), 6, 9, 13, 19 (saturate: float8 only), 21; CastLike 15, 19, 21. */
static int fold_cast(Fold *f, bool like) {
    const Val *x = need(f, 0);
    if (!x) return F_ERR;
    VccDType dt = VCC_DT_UNDEF;
    if (like) {
        const Val *t = need(f, 1);
        if (!t) return F_ERR;
        dt = t->dt;
    } else {
        int st = cast_target(f, &dt);
        if (st) return st;
    }
    int st = new_out(f, 0, dt, &x->shape);
    for (int64_t i = 0; !st && i < x->n; i++) st = convert(f, &f->out[0], i, x, i);
    return st;
}

/* ======================================================================== shape ops */

/* ONNX Shape 1, 13, 15 (start, end: clamped to [0, rank]), 19, 21: the dims of the input's static shape. */
static int fold_shape(Fold *f, const VccTensor *x) {
    int r = x->shape.rank;
    int64_t start = vcc_attr_int(f->n, "start", 0), end = vcc_attr_int(f->n, "end", r);
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = start < 0 ? 0 : start > r ? r : start;
    end = end < 0 ? 0 : end > r ? r : end;
    VccShape s = {1, {end > start ? end - start : 0}};
    int st = new_out(f, 0, VCC_I64, &s);
    for (int64_t i = start; !st && i < end; i++) put_i(&f->out[0], i - start, x->shape.dims[i]);
    return st;
}

/* ONNX Size 1, 13, 19, 21: the element count, an int64 scalar. */
static int fold_size(Fold *f, const VccTensor *x) {
    VccShape s = {0, {0}};
    int st = new_out(f, 0, VCC_I64, &s);
    if (!st) put_i(&f->out[0], 0, vcc_shape_numel(&x->shape));
    return st;
}

/* ONNX ConstantOfShape 9, 20, 21: a tensor of the given shape (1-D int64 input; empty: a scalar) filled
 * with value (input 1, the loader's form of the attribute: one element; absent: float 0). */
static int fold_constant_of_shape(Fold *f) {
    const Val *sh = need(f, 0);
    if (!sh) return F_ERR;
    if (sh->dt != VCC_I64 || sh->shape.rank != 1) return bad(f, "the shape input must be a 1-D int64 tensor");
    if (sh->n > VCC_MAX_RANK) return cant(f, "its result would have more than %d dims", VCC_MAX_RANK);
    VccShape s = {(int)sh->n, {0}};
    for (int i = 0; i < s.rank; i++) {
        s.dims[i] = get_i(sh, i);
        if (s.dims[i] < 0) return bad(f, "dim %d of the shape is negative (%lld)", i, (long long)s.dims[i]);
    }
    const Val *v = has(f, 1) ? &f->in[1] : NULL;
    if (v && v->n != 1) return bad(f, "attribute 'value' must hold one element, it holds %lld", (long long)v->n);
    int st = new_out(f, 0, v ? v->dt : VCC_F32, &s);
    for (int64_t i = 0; !st && v && i < f->out[0].n; i++) copy_elem(&f->out[0], i, v, 0);
    return st;
}

/* ONNX Range 11: start, start + delta, ... while short of limit (scalars of one type); the count is
 * max(ceil((limit - start) / delta), 0), in the inputs' type as ONNX's function body computes it. */
static int fold_range(Fold *f) {
    const Val *s = need(f, 0), *l = s ? need(f, 1) : NULL, *d = l ? need(f, 2) : NULL;
    if (!d) return F_ERR;
    if (s->dt != l->dt || s->dt != d->dt || s->dt == VCC_BOOL)
        return bad(f, "start, limit and delta must be numbers of one type");
    if (s->n != 1 || l->n != 1 || d->n != 1) return bad(f, "start, limit and delta must be scalars");
    double c;
    if (is_float(s->dt)) {
        if (get_f(d, 0) == 0) return bad(f, "delta is 0");
        /* each step rounded to the type, as the function body computes it */
        c = ceil(round_to(s->dt, round_to(s->dt, get_f(l, 0) - get_f(s, 0)) / get_f(d, 0)));
    } else {
        int64_t a = get_i(s, 0), b = get_i(l, 0), step = get_i(d, 0);
        if (step == 0) return bad(f, "delta is 0");
        __extension__ __int128 diff = (__int128)b - a, q = diff / step, rem = diff % step;
        if (rem != 0 && (rem > 0) == (step > 0)) q++; /* the ceiling of the quotient */
        c = q > VCC_FOLD_MAX_ELEMS ? (double)VCC_FOLD_MAX_ELEMS + 1 : (double)q;
    }
    if (!(c <= (double)VCC_FOLD_MAX_ELEMS)) /* also NaN: an infinite limit */
        return cant(f, "its result would have more than %lld elements", (long long)VCC_FOLD_MAX_ELEMS);
    int64_t count = c > 0 ? (int64_t)c : 0;
    VccShape os = {1, {count}};
    int st = new_out(f, 0, s->dt, &os);
    for (int64_t i = 0; !st && i < count; i++) {
        if (is_float(s->dt)) put_f(&f->out[0], i, get_f(s, 0) + (double)i * get_f(d, 0));
        else /* start + i * delta lies between start and limit, but i * delta alone may not fit: two's
              * complement arithmetic, exact for a result that fits */
            put_i(&f->out[0], i, (int64_t)((uint64_t)get_i(s, 0) + (uint64_t)i * (uint64_t)get_i(d, 0)));
    }
    return st;
}

/* ONNX Gather 1, 11 (negative indices), 13: out = data.shape[:axis] + indices.shape + data.shape[axis+1:]. */
static int fold_gather(Fold *f) {
    const Val *x = need(f, 0), *idx = x ? need(f, 1) : NULL;
    if (!idx) return F_ERR;
    if (!is_int(idx->dt)) return bad(f, "indices must be int32 or int64");
    int r = x->shape.rank, q = idx->shape.rank;
    if (r < 1) return bad(f, "data must have at least one dim");
    if (r + q - 1 > VCC_MAX_RANK) return cant(f, "its result would have more than %d dims", VCC_MAX_RANK);
    int64_t axis = vcc_attr_int(f->n, "axis", 0);
    if (norm_axis(f, &axis, r, "axis")) return F_ERR;
    VccShape os = {r + q - 1, {0}};
    for (int d = 0; d < os.rank; d++)
        os.dims[d] = d < axis ? x->shape.dims[d] : d < axis + q ? idx->shape.dims[d - axis] : x->shape.dims[d - q + 1];
    int64_t dim = x->shape.dims[axis];
    for (int64_t i = 0; i < idx->n; i++) {
        int64_t v = get_i(idx, i);
        if (v < -dim || v >= dim)
            return bad(f, "index %lld is out of range for axis %lld of size %lld", (long long)v, (long long)axis,
                       (long long)dim);
    }
    int st = new_out(f, 0, x->dt, &os);
    int64_t c[VCC_MAX_RANK], xc[VCC_MAX_RANK];
    for (int64_t i = 0; !st && i < f->out[0].n; i++) {
        unravel(&os, i, c);
        int64_t ii = 0;
        for (int d = 0; d < q; d++) ii = ii * idx->shape.dims[d] + c[axis + d];
        int64_t v = get_i(idx, ii);
        for (int d = 0; d < r; d++) xc[d] = d < axis ? c[d] : d == axis ? (v < 0 ? v + dim : v) : c[d + q - 1];
        copy_elem(&f->out[0], i, x, ravel(&x->shape, xc));
    }
    return st;
}

/* The result o as input 0's elements in shape s (Reshape, Flatten, Squeeze, Unsqueeze, Identity). */
static int same_elements(Fold *f, const VccShape *s) {
    const Val *x = &f->in[0];
    int st = new_out(f, 0, x->dt, s);
    if (!st) memcpy(f->out[0].data, x->data, (size_t)x->n * vcc_dtype_size(x->dt));
    return st;
}

/* The axes of input 1 (or of attribute 'axes', the form of earlier opsets) as flags over the dims of a
 * tensor of rank r, or of rank r + their count when grow (Unsqueeze: positions in the result);
 * negative axes count from the end. *na: their count, -1 when neither is there; *rank: the rank they
 * index. An axis given twice is an error. */
static int axes_flags(Fold *f, int r, bool grow, bool *flag, int *na, int *rank) {
    int64_t axes[VCC_MAX_RANK];
    int st = int_list(f, 1, "axes", axes, VCC_MAX_RANK, na);
    if (st) return st;
    *rank = r + (grow && *na > 0 ? *na : 0);
    if (*rank > VCC_MAX_RANK) return cant(f, "its result would have more than %d dims", VCC_MAX_RANK);
    for (int d = 0; d < VCC_MAX_RANK; d++) flag[d] = false;
    for (int i = 0; i < *na; i++) {
        if (norm_axis(f, &axes[i], *rank, "axis")) return F_ERR;
        if (flag[axes[i]]) return bad(f, "axis %lld is given twice", (long long)axes[i]);
        flag[axes[i]] = true;
    }
    return F_OK;
}

/* ONNX Unsqueeze 1, 11 (negative axes), 13 (axes an input): insert dims of size 1 at axes (positions in
 * the result). */
static int fold_unsqueeze(Fold *f) {
    const Val *x = need(f, 0);
    if (!x) return F_ERR;
    bool ins[VCC_MAX_RANK];
    int na, r, st = axes_flags(f, x->shape.rank, true, ins, &na, &r);
    if (st) return st;
    if (na < 0) return bad(f, "axes are missing");
    VccShape s = {r, {0}};
    for (int d = 0, k = 0; d < r; d++) s.dims[d] = ins[d] ? 1 : x->shape.dims[k++];
    return same_elements(f, &s);
}

/* ONNX Squeeze 1, 11 (negative axes), 13 (axes an input): remove the dims of size 1 at axes, or every dim
 * of size 1 when there are none. */
static int fold_squeeze(Fold *f) {
    const Val *x = need(f, 0);
    if (!x) return F_ERR;
    bool drop[VCC_MAX_RANK];
    int na, r, st = axes_flags(f, x->shape.rank, false, drop, &na, &r);
    if (st) return st;
    for (int d = 0; d < r; d++)
        if (drop[d] && x->shape.dims[d] != 1)
            return bad(f, "dim %d has size %lld, not 1", d, (long long)x->shape.dims[d]);
    VccShape s = {0, {0}};
    for (int d = 0; d < r; d++)
        if (!(na > 0 ? drop[d] : x->shape.dims[d] == 1)) s.dims[s.rank++] = x->shape.dims[d];
    return same_elements(f, &s);
}

/* ONNX Reshape 1 (shape attribute), 5, 13, 14 (allowzero), 19, 21: 0 copies the input's dim (unless
 * allowzero), one -1 is inferred. */
static int fold_reshape(Fold *f) {
    const Val *x = need(f, 0);
    if (!x) return F_ERR;
    int64_t v[VCC_MAX_RANK];
    int cnt, st = int_list(f, 1, "shape", v, VCC_MAX_RANK, &cnt);
    if (st) return st;
    if (cnt < 0) return bad(f, "the shape is missing");
    VccShape s = {cnt, {0}};
    int infer = -1;
    int64_t known = 1;
    for (int i = 0; i < cnt; i++) {
        int64_t d = v[i];
        if (d == 0 && !vcc_attr_int(f->n, "allowzero", 0)) {
            if (i >= x->shape.rank) return bad(f, "shape value 0 at %d copies a dim the input does not have", i);
            d = x->shape.dims[i];
        }
        if (d == -1 && infer < 0) infer = i;
        else if (d < 0) return bad(f, "invalid shape value %lld at %d", (long long)v[i], i);
        else if (!vcc_mul_i64(known, d, &known)) return bad(f, "the shape's element count overflows");
        s.dims[i] = d;
    }
    if (infer >= 0) {
        if (known == 0 || x->n % known) return bad(f, "the input's %lld elements do not fill the shape", (long long)x->n);
        s.dims[infer] = x->n / known;
    }
    if (vcc_shape_numel(&s) != x->n) return bad(f, "the input's %lld elements do not fill the shape", (long long)x->n);
    return same_elements(f, &s);
}

/* ONNX Flatten 1, 9, 11 (negative axis), 13, 21: (d0*..*d(axis-1), d(axis)*..). */
static int fold_flatten(Fold *f) {
    const Val *x = need(f, 0);
    if (!x) return F_ERR;
    int64_t axis = vcc_attr_int(f->n, "axis", 1);
    if (axis < 0) axis += x->shape.rank;
    if (axis < 0 || axis > x->shape.rank) return bad(f, "axis is out of range for rank %d", x->shape.rank);
    VccShape s = {2, {1, 1}};
    for (int d = 0; d < x->shape.rank; d++) s.dims[d < axis ? 0 : 1] *= x->shape.dims[d];
    return same_elements(f, &s);
}

static int fold_identity(Fold *f) {
    const Val *x = need(f, 0);
    return x ? same_elements(f, &x->shape) : F_ERR;
}

/* ONNX Concat 1 (axis default 1), 4 (axis required), 11 (negative axis), 13: inputs of one type and rank,
 * equal dims but along axis. */
static int fold_concat(Fold *f) {
    const Val *x = need(f, 0);
    if (!x) return F_ERR;
    int r = x->shape.rank;
    if (r < 1) return bad(f, "inputs must have at least one dim");
    if (!vcc_attr_get(f->n, "axis") && f->opset >= 4) return bad(f, "attribute 'axis' is missing");
    int64_t axis = vcc_attr_int(f->n, "axis", 1);
    if (norm_axis(f, &axis, r, "axis")) return F_ERR;
    VccShape s = x->shape;
    s.dims[axis] = 0;
    for (int i = 0; i < f->nin; i++) {
        const Val *v = need(f, i);
        if (!v) return F_ERR;
        if (v->dt != x->dt) return bad(f, "its inputs have different element types");
        bool ok = v->shape.rank == r;
        for (int d = 0; ok && d < r; d++) ok = d == axis || v->shape.dims[d] == s.dims[d];
        if (!ok) return bad(f, "input %d's shape does not match input 0's but along axis %lld", i, (long long)axis);
        s.dims[axis] += v->shape.dims[axis];
    }
    int st = new_out(f, 0, x->dt, &s);
    if (st) return st;
    int64_t outer = 1, inner = 1, o = 0;
    for (int d = 0; d < axis; d++) outer *= s.dims[d];
    for (int d = (int)axis + 1; d < r; d++) inner *= s.dims[d];
    for (int64_t b = 0; b < outer; b++)
        for (int i = 0; i < f->nin; i++) {
            int64_t len = f->in[i].shape.dims[axis] * inner;
            for (int64_t e = 0; e < len; e++) copy_elem(&f->out[0], o++, &f->in[i], b * len + e);
        }
    return F_OK;
}

/* ONNX Split 1, 2 (split attribute), 11 (negative axis), 13 (split input), 18 (num_outputs): x cut along
 * axis into the given lengths, or into equal parts (the last one smaller, from opset 18) when there are
 * none. The evaluator gives at most FOLD_SCRATCH outputs. */
static int fold_split(Fold *f) {
    const Val *x = need(f, 0);
    if (!x) return F_ERR;
    int r = x->shape.rank, nout = f->n->nout, ns, st;
    if (r < 1) return bad(f, "its input must have at least one dim");
    if (nout > FOLD_SCRATCH) return cant(f, "the evaluator gives at most %d outputs, it has %d", FOLD_SCRATCH, nout);
    int64_t axis = vcc_attr_int(f->n, "axis", 0), split[FOLD_SCRATCH], dim;
    if (norm_axis(f, &axis, r, "axis")) return F_ERR;
    if ((st = int_list(f, 1, "split", split, FOLD_SCRATCH, &ns))) return st;
    dim = x->shape.dims[axis];
    if (ns < 0) {
        int64_t part = (dim + nout - 1) / nout;
        for (int o = 0; o < nout; o++) split[o] = o < nout - 1 ? part : dim - part * (nout - 1);
        ns = nout;
    }
    int64_t sum = 0;
    for (int o = 0; o < ns; o++) sum += split[o] >= 0 ? split[o] : -1;
    if (ns != nout || sum != dim) return bad(f, "its split lengths do not add up to dim %lld", (long long)dim);
    int64_t outer = 1, inner = 1, at = 0;
    for (int d = 0; d < axis; d++) outer *= x->shape.dims[d];
    for (int d = (int)axis + 1; d < r; d++) inner *= x->shape.dims[d];
    for (int o = 0; o < nout; o++) {
        VccShape s = x->shape;
        s.dims[axis] = split[o];
        if ((st = new_out(f, o, x->dt, &s))) return st;
        int64_t len = split[o] * inner, e = 0;
        for (int64_t b = 0; b < outer; b++)
            for (int64_t i = 0; i < len; i++) copy_elem(&f->out[o], e++, x, b * dim * inner + at * inner + i);
        at += split[o];
    }
    return F_OK;
}

/* ONNX Slice 1 (starts, ends, axes attributes), 10 (inputs, steps), 11 (negative values), 13: per axis,
 * start and end count from the end when negative and are clamped ([0, dim] for steps > 0, [-1, dim-1] for
 * steps < 0). */
static int fold_slice(Fold *f) {
    const Val *x = need(f, 0);
    if (!x) return F_ERR;
    int r = x->shape.rank;
    int64_t starts[VCC_MAX_RANK], ends[VCC_MAX_RANK], axes[VCC_MAX_RANK], steps[VCC_MAX_RANK];
    int ns, ne, na, nt, st;
    if ((st = int_list(f, 1, "starts", starts, VCC_MAX_RANK, &ns)) || (st = int_list(f, 2, "ends", ends, VCC_MAX_RANK, &ne)) ||
        (st = int_list(f, 3, "axes", axes, VCC_MAX_RANK, &na)) || (st = int_list(f, 4, "steps", steps, VCC_MAX_RANK, &nt)))
        return st;
    if (ns < 0 || ne != ns) return bad(f, "starts and ends must have one value per sliced axis");
    if ((na >= 0 && na != ns) || (nt >= 0 && nt != ns)) return bad(f, "axes and steps must have one value per start");
    int64_t lo[VCC_MAX_RANK], step[VCC_MAX_RANK];
    VccShape s = x->shape;
    bool seen[VCC_MAX_RANK] = {false};
    for (int d = 0; d < r; d++) lo[d] = 0, step[d] = 1;
    for (int i = 0; i < ns; i++) {
        int64_t a = na >= 0 ? axes[i] : i;
        if (norm_axis(f, &a, r, "axis")) return F_ERR;
        if (seen[a]) return bad(f, "axis %lld is sliced twice", (long long)a);
        seen[a] = true;
        int64_t dim = x->shape.dims[a], t = nt >= 0 ? steps[i] : 1, b = starts[i], e = ends[i];
        if (t == 0) return bad(f, "a step is 0");
        if (b < 0) b += dim;
        if (e < 0) e += dim;
        if (t > 0) {
            b = b < 0 ? 0 : b > dim ? dim : b;
            e = e < 0 ? 0 : e > dim ? dim : e;
        } else {
            b = b < 0 ? -1 : b > dim - 1 ? dim - 1 : b;
            e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
        }
        int64_t span = t > 0 ? e - b : b - e, stride = t > 0 ? t : t == INT64_MIN ? INT64_MAX : -t;
        int64_t len = span > 0 ? (span - 1) / stride + 1 : 0;
        s.dims[a] = len;
        lo[a] = b;
        step[a] = t;
    }
    st = new_out(f, 0, x->dt, &s);
    int64_t c[VCC_MAX_RANK];
    for (int64_t i = 0; !st && i < f->out[0].n; i++) {
        unravel(&s, i, c);
        for (int d = 0; d < r; d++) c[d] = lo[d] + c[d] * step[d];
        copy_elem(&f->out[0], i, x, ravel(&x->shape, c));
    }
    return st;
}

/* ONNX Expand 8, 13: the input broadcast with the shape (1-D int64), bidirectionally. */
static int fold_expand(Fold *f) {
    const Val *x = need(f, 0);
    if (!x) return F_ERR;
    int64_t v[VCC_MAX_RANK];
    int cnt, st = int_list(f, 1, "shape", v, VCC_MAX_RANK, &cnt);
    if (st) return st;
    if (cnt < 0) return bad(f, "the shape is missing");
    VccShape want = {cnt, {0}}, s;
    for (int i = 0; i < cnt; i++) want.dims[i] = v[i];
    if (!bcast_shape(&x->shape, &want, &s)) return bad(f, "the input does not broadcast to the shape");
    st = new_out(f, 0, x->dt, &s);
    for (int64_t i = 0; !st && i < f->out[0].n; i++) copy_elem(&f->out[0], i, x, bcast_src(&s, &x->shape, i));
    return st;
}

/* ONNX Transpose 1, 13, 21: perm (default: the dims reversed). */
static int fold_transpose(Fold *f) {
    const Val *x = need(f, 0);
    if (!x) return F_ERR;
    int r = x->shape.rank;
    int64_t perm[VCC_MAX_RANK];
    int np = vcc_attr_ints(f->n, "perm", perm, VCC_MAX_RANK);
    if (np < 0)
        for (np = 0; np < r; np++) perm[np] = r - 1 - np;
    bool seen[VCC_MAX_RANK] = {false};
    if (np != r) return bad(f, "perm has %d values for rank %d", np, r);
    VccShape s = {r, {0}};
    for (int d = 0; d < r; d++) {
        if (perm[d] < 0 || perm[d] >= r || seen[perm[d]]) return bad(f, "perm is not a permutation of the dims");
        seen[perm[d]] = true;
        s.dims[d] = x->shape.dims[perm[d]];
    }
    int st = new_out(f, 0, x->dt, &s);
    int64_t c[VCC_MAX_RANK], xc[VCC_MAX_RANK];
    for (int64_t i = 0; !st && i < f->out[0].n; i++) {
        unravel(&s, i, c);
        for (int d = 0; d < r; d++) xc[perm[d]] = c[d];
        copy_elem(&f->out[0], i, x, ravel(&x->shape, xc));
    }
    return st;
}

/* ONNX Tile 6, 13: repeats (1-D int64, one per dim). */
static int fold_tile(Fold *f) {
    const Val *x = need(f, 0);
    if (!x) return F_ERR;
    if (f->opset < 6) return cant(f, "Tile before opset 6 (tiles and axis inputs) is not evaluated");
    int64_t rep[VCC_MAX_RANK];
    int cnt, r = x->shape.rank, st = int_list(f, 1, "repeats", rep, VCC_MAX_RANK, &cnt);
    if (st) return st;
    if (cnt != r) return bad(f, "repeats must have one value per dim");
    VccShape s = x->shape;
    for (int d = 0; d < r; d++) {
        if (rep[d] < 0) return bad(f, "repeats must not be negative");
        if (!vcc_mul_i64(s.dims[d], rep[d], &s.dims[d])) return cant(f, "its result is too large");
    }
    st = new_out(f, 0, x->dt, &s);
    int64_t c[VCC_MAX_RANK];
    for (int64_t i = 0; !st && i < f->out[0].n; i++) {
        unravel(&s, i, c);
        for (int d = 0; d < r; d++) c[d] %= x->shape.dims[d];
        copy_elem(&f->out[0], i, x, ravel(&x->shape, c));
    }
    return st;
}

/* ONNX ReduceSum 1, 11, 13 (axes an input, noop_with_empty_axes); ReduceProd/ReduceMax/ReduceMin/ReduceMean
 * 1, 11, 13, 18 (axes an input): keepdims default 1; no axes reduce every dim (or nothing with
 * noop_with_empty_axes). Floats accumulate in double, integers in int64. */
static int fold_reduce(Fold *f, int kind) {
    enum { R_SUM, R_PROD, R_MAX, R_MIN, R_MEAN };
    const Val *x = need(f, 0);
    if (!x) return F_ERR;
    if (x->dt == VCC_BOOL) return cant(f, "it reduces a bool tensor");
    bool red[VCC_MAX_RANK];
    int na, r, st = axes_flags(f, x->shape.rank, false, red, &na, &r);
    if (st) return st;
    if (na <= 0 && vcc_attr_int(f->n, "noop_with_empty_axes", 0)) return fold_identity(f);
    for (int d = 0; d < r && na <= 0; d++) red[d] = true;
    bool keep = vcc_attr_int(f->n, "keepdims", 1) != 0;
    VccShape s = {0, {0}}, full = x->shape; /* full: the result with kept dims */
    for (int d = 0; d < r; d++) {
        full.dims[d] = red[d] ? 1 : x->shape.dims[d];
        if (!red[d] || keep) s.dims[s.rank++] = full.dims[d];
    }
    int64_t m = vcc_shape_numel(&full), per = m ? x->n / m : 0;
    if ((kind == R_MAX || kind == R_MIN || kind == R_MEAN) && per == 0 && m > 0)
        return bad(f, "it reduces an empty set of elements");
    st = new_out(f, 0, x->dt, &s);
    if (st) return st;
    double *acc = vcc_malloc(sizeof(double) * (size_t)(m ? m : 1));
    int64_t *iacc = vcc_malloc(sizeof(int64_t) * (size_t)(m ? m : 1));
    bool *first = vcc_malloc((size_t)(m ? m : 1));
    for (int64_t j = 0; j < m; j++) acc[j] = kind == R_PROD, iacc[j] = kind == R_PROD, first[j] = true;
    int64_t c[VCC_MAX_RANK];
    for (int64_t i = 0; i < x->n; i++) {
        unravel(&x->shape, i, c);
        for (int d = 0; d < r; d++)
            if (red[d]) c[d] = 0;
        int64_t j = ravel(&full, c);
        double v = get_f(x, i);
        int64_t w = is_int(x->dt) ? get_i(x, i) : 0;
        switch (kind) {
        case R_SUM: case R_MEAN: acc[j] += v, iacc[j] = (int64_t)((uint64_t)iacc[j] + (uint64_t)w); break;
        case R_PROD: acc[j] *= v, iacc[j] = (int64_t)((uint64_t)iacc[j] * (uint64_t)w); break;
        case R_MAX: if (first[j] || v > acc[j] || isnan(v)) acc[j] = v; if (first[j] || w > iacc[j]) iacc[j] = w; break;
        default: if (first[j] || v < acc[j] || isnan(v)) acc[j] = v; if (first[j] || w < iacc[j]) iacc[j] = w; break;
        }
        first[j] = false;
    }
    for (int64_t j = 0; j < m; j++) {
        if (is_float(x->dt)) put_f(&f->out[0], j, kind == R_MEAN ? acc[j] / (double)per : acc[j]);
        else put_i(&f->out[0], j, kind == R_MEAN ? iacc[j] / per : iacc[j]);
    }
    free(acc);
    free(iacc);
    free(first);
    return F_OK;
}

/* ======================================================================== the op table */

enum { K_BINARY, K_UNARY, K_NOT, K_WHERE, K_CAST, K_CASTLIKE, K_SHAPE, K_SIZE, K_CONSTANT_OF_SHAPE, K_RANGE,
       K_GATHER, K_UNSQUEEZE, K_SQUEEZE, K_RESHAPE, K_FLATTEN, K_IDENTITY, K_CONCAT, K_SLICE, K_EXPAND,
       K_TRANSPOSE, K_TILE, K_SPLIT, K_REDUCE };

static const struct {
    const char *name;
    int kind, arg;
} shape_ops[] = {
    {"Not", K_NOT, 0},         {"Where", K_WHERE, 0},       {"Cast", K_CAST, 0},
    {"CastLike", K_CASTLIKE, 0}, {"Shape", K_SHAPE, 0},      {"Size", K_SIZE, 0},
    {"ConstantOfShape", K_CONSTANT_OF_SHAPE, 0},             {"Range", K_RANGE, 0},
    {"Gather", K_GATHER, 0},   {"Unsqueeze", K_UNSQUEEZE, 0}, {"Squeeze", K_SQUEEZE, 0},
    {"Reshape", K_RESHAPE, 0}, {"Flatten", K_FLATTEN, 0},   {"Identity", K_IDENTITY, 0},
    {"Concat", K_CONCAT, 0},   {"Slice", K_SLICE, 0},       {"Expand", K_EXPAND, 0},
    {"Transpose", K_TRANSPOSE, 0}, {"Tile", K_TILE, 0}, {"Split", K_SPLIT, 0},
    {"ReduceSum", K_REDUCE, 0}, {"ReduceProd", K_REDUCE, 1}, {"ReduceMax", K_REDUCE, 2},
    {"ReduceMin", K_REDUCE, 3}, {"ReduceMean", K_REDUCE, 4},
};

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* The evaluator's entry for op name: *kind and *arg; false when it does not have the op. */
static bool lookup(const char *name, int *kind, int *arg) {
    for (int i = 0; i < COUNT(binary_ops); i++)
        if (!strcmp(binary_ops[i].name, name)) return *kind = K_BINARY, *arg = i, true;
    for (int i = 0; i < COUNT(unary_ops); i++)
        if (!strcmp(unary_ops[i].name, name)) return *kind = K_UNARY, *arg = i, true;
    for (int i = 0; i < COUNT(shape_ops); i++)
        if (!strcmp(shape_ops[i].name, name)) return *kind = shape_ops[i].kind, *arg = shape_ops[i].arg, true;
    return false;
}

static int run(Fold *f, int kind, int arg) {
    const VccGraph *g = f->g;
    switch (kind) {
    case K_BINARY: return fold_binary(f, arg);
    case K_UNARY: return fold_unary(f, arg);
    case K_NOT: return fold_not(f);
    case K_WHERE: return fold_where(f);
    case K_CAST: return fold_cast(f, false);
    case K_CASTLIKE: return fold_cast(f, true);
    case K_SHAPE: return fold_shape(f, &g->tensors[f->n->in[0]]);
    case K_SIZE: return fold_size(f, &g->tensors[f->n->in[0]]);
    case K_CONSTANT_OF_SHAPE: return fold_constant_of_shape(f);
    case K_RANGE: return fold_range(f);
    case K_GATHER: return fold_gather(f);
    case K_UNSQUEEZE: return fold_unsqueeze(f);
    case K_SQUEEZE: return fold_squeeze(f);
    case K_RESHAPE: return fold_reshape(f);
    case K_FLATTEN: return fold_flatten(f);
    case K_IDENTITY: return fold_identity(f);
    case K_CONCAT: return fold_concat(f);
    case K_SLICE: return fold_slice(f);
    case K_EXPAND: return fold_expand(f);
    case K_TRANSPOSE: return fold_transpose(f);
    case K_TILE: return fold_tile(f);
    case K_SPLIT: return fold_split(f);
    default: return fold_reduce(f, arg);
    }
}

/* ======================================================================== the passes' interface */

/* A compile-time value: a constant with data (its bytes are known while compiling). */
static bool known(const VccGraph *g, int t) {
    return t >= 0 && g->tensors[t].kind == VCC_T_CONST && g->tensors[t].data != NULL;
}

/* The op name the evaluator looks up: the ONNX op type of a node read from a model (also of an op vcc
 * has no row for), else the ops.def name. Only default-domain ops. */
static const char *op_name(const VccNode *n) { return n->domain ? NULL : vcc_node_op(n); }

/* Ops that read only their input's static shape. */
static bool reads_shape_only(int kind) { return kind == K_SHAPE || kind == K_SIZE; }

/* An op whose only form is the compile-time one: the const family's, and ops vcc has no row for. */
static bool fold_only(const VccNode *n) {
    return n->op == VCC_OP_UNSUPPORTED || strcmp(vcc_op_family(n->op), "const") == 0;
}

/* Where a value that is not known while compiling comes from: the first input along its producers that
 * is not known, back to a graph input, a parameter or a constant without a value. */
static void runtime_origin(const VccGraph *g, int t, char *buf, size_t len) {
    for (int guard = 0; guard <= g->nnodes; guard++) {
        const VccTensor *x = &g->tensors[t];
        if (x->producer < 0) {
            const char *what = x->kind == VCC_T_INPUT    ? "graph input"
                               : x->kind == VCC_T_PARAM  ? "parameter (trained, so not a constant)"
                               : x->kind == VCC_T_BUFFER ? "buffer (updated by training)"
                               : x->kind == VCC_T_CONST  ? "constant whose value the graph does not hold"
                                                         : "value";
            snprintf(buf, len, "%s '%s'", what, x->name);
            return;
        }
        const VccNode *p = &g->nodes[x->producer];
        int next = -1;
        int kind, arg;
        bool shape_only = op_name(p) && lookup(op_name(p), &kind, &arg) && reads_shape_only(kind);
        for (int i = 0; i < p->nin && next < 0 && !shape_only; i++)
            if (p->in[i] >= 0 && !known(g, p->in[i])) next = p->in[i];
        if (next < 0) {
            snprintf(buf, len, "node '%s' (%s)", p->name, vcc_node_op(p));
            return;
        }
        t = next;
    }
    snprintf(buf, len, "a cycle");
}

/* Report why fold-only node k cannot be evaluated: an input not known while compiling, or why. */
static VccStatus refuse(VccCtx *ctx, const VccGraph *g, int k, const char *why) {
    const VccNode *n = &g->nodes[k];
    const char *op = vcc_node_op(n);
    if (why) {
        vcc_error(ctx, "node '%s' (%s): vcc evaluates %s only while compiling, and cannot here: %s", n->name, op, op,
                  why);
        return VCC_ERR_UNSUPPORTED;
    }
    for (int i = 0; i < n->nin; i++) {
        if (n->in[i] < 0 || known(g, n->in[i])) continue;
        char origin[320];
        runtime_origin(g, n->in[i], origin, sizeof origin);
        vcc_error(ctx, "node '%s' (%s): input %d '%s' is not known while compiling (it comes from %s); vcc "
                  "evaluates %s only while compiling, from constants and static shapes", n->name, op, i,
                  g->tensors[n->in[i]].name, origin, op);
        return VCC_ERR_UNSUPPORTED;
    }
    vcc_error(ctx, "node '%s' (%s): vcc evaluates %s only while compiling", n->name, op, op);
    return VCC_ERR_UNSUPPORTED;
}

VccStatus vcc_fold_refuse(VccCtx *ctx, const VccGraph *g, int k) { return refuse(ctx, g, k, NULL); }

VccStatus vcc_fold_node(VccCtx *ctx, VccGraph *g, int k, bool *folded) {
    *folded = false;
    const VccNode *n = &g->nodes[k];
    const char *name = op_name(n);
    int kind, arg;
    if (!name || !lookup(name, &kind, &arg)) return fold_only(n) ? refuse(ctx, g, k, "vcc has no evaluator for it") : VCC_OK;
    bool ready = false;
    for (int o = 0; o < n->nout; o++) ready |= n->out[o] >= 0;
    if (reads_shape_only(kind)) ready = ready && n->nin >= 1 && n->in[0] >= 0 && g->tensors[n->in[0]].dtype != VCC_DT_UNDEF;
    for (int i = 0; i < n->nin && ready && !reads_shape_only(kind); i++) ready = n->in[i] < 0 || known(g, n->in[i]);
    if (!ready) return fold_only(n) ? refuse(ctx, g, k, NULL) : VCC_OK;

    Fold f = {.ctx = ctx, .g = g, .n = n, .op = name, .opset = g->opset, .nin = n->nin};
    f.in = vcc_calloc((size_t)(n->nin ? n->nin : 1), sizeof(Val));
    for (int i = 0; i < n->nin && !reads_shape_only(kind); i++) {
        const VccTensor *t = n->in[i] >= 0 ? &g->tensors[n->in[i]] : NULL;
        if (t) f.in[i] = (Val){t->dtype, t->shape, vcc_shape_numel(&t->shape), t->data};
    }
    int st = F_OK, nout = 0;
    for (int i = 0; i < n->nin && st == F_OK; i++)
        if (f.in[i].data && f.in[i].dt == VCC_U64) st = cant(&f, "vcc does not evaluate uint64 values while compiling");
    if (st == F_OK) st = run(&f, kind, arg);
    free(f.out[FOLD_SCRATCH].data);
    while (nout < FOLD_SCRATCH && f.out[nout].data) nout++;
    if (st == F_OK && nout != n->nout) st = cant(&f, "it has %d outputs, the evaluator gives %d", n->nout, nout);
    if (st == F_OK) {
        for (int o = 0; o < n->nout; o++) {
            if (n->out[o] < 0) {
                free(f.out[o].data);
                continue;
            }
            VccTensor *t = &g->tensors[n->out[o]];
            free(t->data);
            t->dtype = f.out[o].dt;
            t->shape = f.out[o].shape;
            t->data = f.out[o].data;
            t->data_bytes = (size_t)f.out[o].n * vcc_dtype_size(f.out[o].dt);
            t->kind = VCC_T_CONST;
            t->alias_of = -1; /* a view op's canonical form made it a view: now it has its own bytes */
        }
        *folded = true;
    } else {
        for (int o = 0; o < FOLD_SCRATCH; o++) free(f.out[o].data);
    }
    free(f.in);
    if (st == F_ERR) return VCC_ERR_SHAPE;
    /* a ConstantOfShape too large to fold may still fill at run time: its shape rule decides */
    if (st == F_CANT && fold_only(n) && n->op != VCC_OP_CONSTANT_OF_SHAPE) return refuse(ctx, g, k, f.why);
    return VCC_OK;
}

bool *vcc_fold_plan(const VccGraph *g) {
    bool *folds = vcc_calloc((size_t)(g->nnodes ? g->nnodes : 1), sizeof(bool));
    bool *will = vcc_calloc((size_t)(g->ntensors ? g->ntensors : 1), sizeof(bool)); /* known after folding */
    for (int t = 0; t < g->ntensors; t++) will[t] = known(g, t);
    for (int k = 0; k < g->nnodes; k++) {
        const VccNode *n = &g->nodes[k];
        int kind, arg;
        if (!op_name(n) || !lookup(op_name(n), &kind, &arg) || n->nout < 1) continue;
        bool ok = true;
        for (int i = 0; i < n->nin && ok && !reads_shape_only(kind); i++) ok = n->in[i] < 0 || will[n->in[i]];
        folds[k] = ok;
        for (int o = 0; o < n->nout && ok; o++)
            if (n->out[o] >= 0) will[n->out[o]] = true;
    }
    free(will);
    return folds;
}

/* ------------------------------------------------------------------ removing folded and dead nodes */

/* A node the evaluator folded: every output it has is a constant with data (no run-time op makes one). */
static bool was_folded(const VccGraph *g, const VccNode *n) {
    bool any = false;
    for (int o = 0; o < n->nout; o++) {
        if (n->out[o] < 0) continue;
        if (!known(g, n->out[o])) return false;
        any = true;
    }
    return any;
}

static int remap(const int *map, int t) { return t >= 0 ? map[t] : t; }

/* Keep the nodes and tensors marked, in their order; every index in the graph follows. */
static void compact(VccGraph *g, const bool *keep_node, const bool *keep_tensor) {
    int *map = vcc_malloc(sizeof(int) * (size_t)(g->ntensors ? g->ntensors : 1));
    int nt = 0;
    for (int t = 0; t < g->ntensors; t++) {
        if (keep_tensor[t]) {
            map[t] = nt;
            g->tensors[nt++] = g->tensors[t];
        } else {
            map[t] = -1;
            vcc_tensor_release(&g->tensors[t]);
        }
    }
    g->ntensors = nt;
    for (int t = 0; t < nt; t++) {
        VccTensor *x = &g->tensors[t];
        x->producer = -1;
        x->grad = remap(map, x->grad);
        x->param_of = remap(map, x->param_of);
        x->alias_of = remap(map, x->alias_of);
        x->inplace_of = remap(map, x->inplace_of);
    }
    int nn = 0;
    for (int k = 0; k < g->nnodes; k++) {
        if (!keep_node[k]) {
            vcc_node_release(&g->nodes[k]);
            continue;
        }
        g->nodes[nn] = g->nodes[k];
        VccNode *n = &g->nodes[nn];
        for (int i = 0; i < n->nin; i++) n->in[i] = remap(map, n->in[i]);
        for (int i = 0; i < n->nout; i++) {
            n->out[i] = remap(map, n->out[i]);
            if (n->out[i] >= 0) g->tensors[n->out[i]].producer = nn;
        }
        nn++;
    }
    g->nnodes = nn;
    for (int i = 0; i < g->ninputs; i++) g->inputs[i] = remap(map, g->inputs[i]);
    for (int i = 0; i < g->noutputs; i++) g->outputs[i] = remap(map, g->outputs[i]);
    g->data_input = remap(map, g->data_input);
    g->label = remap(map, g->label);
    g->target = remap(map, g->target);
    g->loss = remap(map, g->loss);
    free(map);
    vcc_graph_rehash(g);
}

void vcc_fold_sweep(VccGraph *g) {
    int nt = g->ntensors, nn = g->nnodes;
    bool *live = vcc_malloc((size_t)(nn ? nn : 1)), *keep = vcc_malloc((size_t)(nt ? nt : 1));
    bool *read_by_removed = vcc_calloc((size_t)(nt ? nt : 1), sizeof(bool));
    int *uses = vcc_calloc((size_t)(nt ? nt : 1), sizeof(int));
    for (int i = 0; i < g->noutputs; i++) uses[g->outputs[i]]++;
    for (int k = 0; k < nn; k++) {
        live[k] = !was_folded(g, &g->nodes[k]);
        for (int i = 0; live[k] && i < g->nodes[k].nin; i++)
            if (g->nodes[k].in[i] >= 0) uses[g->nodes[k].in[i]]++;
    }
    /* dead: a forward node none of whose outputs is read, that writes no other tensor's bytes (a view op's
     * output is its input's bytes, harmless to drop; BatchNormalization's running statistics, views of the
     * BUFFERs it updates, are not) */
    for (int k = nn - 1; k >= 0; k--) {
        const VccNode *n = &g->nodes[k];
        if (!live[k] || n->phase != VCC_PHASE_FORWARD) continue;
        bool dead = true, view = vcc_op_def(n->op)->flags & VCC_OPF_VIEW;
        for (int o = 0; o < n->nout && dead; o++)
            dead = n->out[o] < 0 || (uses[n->out[o]] == 0 && (view || g->tensors[n->out[o]].alias_of < 0));
        if (!dead) continue;
        live[k] = false;
        for (int i = 0; i < n->nin; i++)
            if (n->in[i] >= 0) uses[n->in[i]]--;
    }
    for (int k = 0; k < nn; k++)
        for (int i = 0; !live[k] && i < g->nodes[k].nin; i++)
            if (g->nodes[k].in[i] >= 0) read_by_removed[g->nodes[k].in[i]] = true;
    bool changed = false;
    for (int k = 0; k < nn; k++) changed |= !live[k];
    for (int t = 0; t < nt; t++) {
        const VccTensor *x = &g->tensors[t];
        bool removed_output = x->producer >= 0 && !live[x->producer];
        /* outputs of removed nodes go unless they are folded constants still read; constants go when only
         * removed nodes read them */
        keep[t] = removed_output ? uses[t] > 0 : !(x->kind == VCC_T_CONST && uses[t] == 0 && read_by_removed[t]);
        /* values no node makes or reads and without a type: the sequences of expanded control flow
         * (passes/ctrlflow.c) */
        if (x->dtype == VCC_DT_UNDEF && x->kind == VCC_T_ACT && x->producer < 0 && x->alias_of < 0 && uses[t] == 0) {
            keep[t] = false;
            changed = true;
        }
    }
    if (changed) compact(g, live, keep);
    free(live);
    free(keep);
    free(read_by_removed);
    free(uses);
}
