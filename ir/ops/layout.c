/*
 * layout.c — the layout family: ops that move, reinterpret or resample elements.
 *
 *   views (alias_of their data input: no code, no bytes of their own): Flatten, Reshape, Identity,
 *     Squeeze, Unsqueeze, and Cast to the input's own element type;
 *   copies (one strided copy per part, runtime/elem/layout.h VccStrided): Concat, Split, Slice,
 *     Transpose, Expand, Tile; Cast between float and int64;
 *   Resize (nearest, n-linear, n-cubic, antialiasing filters, tf_crop_and_resize); Gather along an axis
 *     with constant indices (an int64 constant input the program uploads, int32 ones converted);
 *   backward ops: SliceGrad (dy scattered into zeros), ExpandGrad (the sum over the copies of each
 *     element: the gradient of Expand and Tile), ResizeGrad (Resize's adjoint), GatherGrad (each dy
 *     row added at its index into zeros).
 *
 * Source: ONNX Operators: Flatten 1 (axis >= 0), 11 (negative axis); Reshape 1 (shape attribute), 5
 * (shape input), 14 (allowzero); Identity 1; Concat 1 (axis default 1), 4 (axis required), 11 (negative
 * axis); Split 1 (split attribute or input), 2, 11 (negative axis), 13 (split input), 18 (num_outputs);
 * Slice 1 (starts/ends/axes attributes), 10 (starts/ends/axes/steps inputs), 11 (negative axes), 13;
 * Transpose 1, 13, 21 (perm, default reversed); Squeeze 1, 11 (negative axes), 13 (axes input), 21;
 * Unsqueeze 1, 11, 13, 21 (likewise); Expand 8, 13; Tile 1 (tiles and axis inputs), 6 (repeats input),
 * 13; Cast 1 (to as a string), 6, 9, 13, 19 (saturate: float8 only, nothing to do), 21; Resize 10
 * (scales input; onnxruntime's asymmetric mapping), 11 (roi, scales, sizes; coordinate modes with
 * tf_crop_and_resize and extrapolation_value, nearest modes, cubic with cubic_coeff_a and
 * exclude_outside), 13, 18 (axes, keep_aspect_ratio_policy, antialias), 19 (half_pixel_symmetric);
 * Gather 1, 11 (negative indices), 13. Negative axes are accepted in every opset, counted from the end
 * as opset 11 defines them (the ONNX test data use one at opset 6, pytorch-converted/test_GLU;
 * onnxruntime reads them so), but Flatten's, which its schema rejects before opset 11. Resize follows the ONNX reference implementation
 * (onnx/reference/ops/op_resize.py) and refuses the forms where it and the spec disagree. Gradients as
 * PyTorch autograd: cat -> narrow of the gradient, split -> cat, slice -> slice_backward (zeros, then the
 * gradient at the slice), permute -> the inverse permute, squeeze/unsqueeze -> a reshape, expand ->
 * sum_to_size, repeat -> the sum over the repeats, upsample_nearest/linear/bicubic (antialiased too) ->
 * their backward (the adjoint of the sampling).
 *
 * Canonical form: every constant an op takes as an input (Reshape's shape excepted, which stays a CONST
 * input) becomes an attribute and the input is dropped, so that shapes follow from the node alone
 * (also in a .vir dump, which holds no values): Split's "split", Slice's "starts"/"ends"/"axes"/"steps",
 * Squeeze's and Unsqueeze's "axes", Expand's "shape", Tile's "repeats" (Tile-1's "tiles" and "axis"),
 * Resize's "scales" or "sizes" and, under tf_crop_and_resize (the only mode that reads it), "roi" (roi is
 * dropped otherwise); Cast-1's string "to" becomes its type code; Cast of a constant is folded (an
 * Identity of a new constant), and Cast to the input's own type becomes an Identity (a view) once shapes
 * are known.
 *
 * Element types: the data-movement ops take float, int64 (a trailing pair of 32-bit words to the
 * kernels) and, in shape rules, bool constants; Resize and the gradients are float.
 * Letter legend: N batch, C channels, T time, H height, W width; r a tensor's rank.
 */
#include "ops.h"

#include "../../runtime/elem/layout.h" /* VccStrided, VccSumTo, VccResize and Resize's coordinate map */

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LAYOUT_MAX_LIST 65536 /* values a constant list input may hold (Split's sizes, a shape...) */

/* ------------------------------------------------------------------ shared helpers */

/* Output 0 of node k is a view of its data input 0 (canonical form of every view op). */
static VccStatus view_canon(VccCtx *ctx, VccGraph *g, int k) {
    VccNode *n = &g->nodes[k];
    if (n->nin < 1 || n->in[0] < 0 || n->nout != 1 || n->out[0] < 0) {
        vcc_error(ctx, "node '%s' (%s): expected one data input and one output", n->name, vcc_node_op(n));
        return VCC_ERR_SHAPE;
    }
    g->tensors[n->out[0]].alias_of = n->in[0];
    return VCC_OK;
}

/* Flatten/Reshape/Identity/Squeeze/Unsqueeze -> Reshape(dY) -> dX, a view of dY */
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

/* The tensor at input i of n, of any element type, or NULL with an error when absent. */
static const VccTensor *data_input(VccCtx *ctx, const VccGraph *g, const VccNode *n, int i) {
    if (i >= n->nin || n->in[i] < 0 || g->tensors[n->in[i]].dtype == VCC_DT_UNDEF) {
        vcc_error(ctx, "node '%s' (%s): missing input %d", n->name, vcc_node_op(n), i);
        return NULL;
    }
    return &g->tensors[n->in[i]];
}

/* Input i of n is present (ONNX: an optional input given the empty name is absent). */
static bool has_input(const VccNode *n, int i) { return i < n->nin && n->in[i] >= 0; }

/* axis a of a rank-r tensor, negative counting from the back, into *out; false (with an error naming
 * the node and what) when it is outside [-r, r-1]. */
static bool norm_axis(VccCtx *ctx, const VccNode *n, const char *what, int64_t a, int r, int *out) {
    if (a < -(int64_t)r || a >= r) {
        vcc_error(ctx, "node '%s' (%s): %s value %lld is out of range for rank %d", n->name, vcc_node_op(n), what,
                  (long long)a, r);
        return false;
    }
    *out = (int)(a < 0 ? a + r : a);
    return true;
}

/* The int attribute list name of n (NULL when absent or not a list of ints), its length in *count. */
static const int64_t *attr_list(const VccNode *n, const char *name, int *count) {
    const VccAttr *a = vcc_attr_get(n, name);
    if (!a || a->type != VCC_A_INTS) {
        *count = -1;
        return NULL;
    }
    *count = a->n;
    return a->ints;
}

/* Axes list `name` of n (negative ones counted from the back of rank r) into axes[]; true with *count
 * = -1 when absent. False, with an error, for an axis out of range, a repeated one, or more than r. */
static bool axes_attr(VccCtx *ctx, const VccNode *n, const char *name, int r, int *axes, int *count) {
    const int64_t *v = attr_list(n, name, count);
    if (!v) return true;
    if (*count > r) {
        vcc_error(ctx, "node '%s' (%s): %s has %d values for rank %d", n->name, vcc_node_op(n), name, *count, r);
        return false;
    }
    for (int i = 0; i < *count; i++) {
        if (!norm_axis(ctx, n, name, v[i], r, &axes[i])) return false;
        for (int j = 0; j < i; j++)
            if (axes[j] == axes[i]) {
                vcc_error(ctx, "node '%s' (%s): %s names axis %d twice", n->name, vcc_node_op(n), name, axes[i]);
                return false;
            }
    }
    return true;
}

/* Canonical form: constant input i of node k (an initializer or a Constant's output) becomes the
 * attribute `attr` (ints from an int64 tensor, floats from a float one, as dt says); the tensor stays a
 * CONST that no node reads. Absent inputs leave no attribute. A computed value is a problem for the
 * model's report (vcc compiles static shapes). */
static VccStatus const_input_to_attr(VccCtx *ctx, VccGraph *g, int k, int i, const char *attr, VccDType dt) {
    VccNode *n = &g->nodes[k];
    if (!has_input(n, i)) return VCC_OK;
    int t = n->in[i];
    VccTensor *x = &g->tensors[t];
    char why[160];
    int64_t cnt = x->dtype == dt && x->data ? (int64_t)(x->data_bytes / vcc_dtype_size(dt)) : -1;
    if (!vcc_is_initializer(g, t) || !x->data || x->dtype != dt || x->shape.rank > 1) {
        snprintf(why, sizeof why, "must be a constant %s tensor of rank 0 or 1 (an initializer or a Constant's "
                 "output): vcc compiles static shapes", dt == VCC_F32 ? "float" : "int64");
        vcc_op_attr_problem(ctx, n, "%s input '%s'", attr, why);
        return VCC_ERR_UNSUPPORTED;
    }
    if (cnt > LAYOUT_MAX_LIST) {
        vcc_error(ctx, "node '%s' (%s): input '%s' has %lld values, more than vcc's %d", n->name, vcc_node_op(n),
                  attr, (long long)cnt, LAYOUT_MAX_LIST);
        return VCC_ERR_UNSUPPORTED;
    }
    x->kind = VCC_T_CONST; /* a constant, not a trainable parameter, whatever its element type */
    if (dt == VCC_F32) vcc_attr_set_floats(n, attr, (const float *)x->data, (int)cnt);
    else vcc_attr_set_ints(n, attr, (const int64_t *)x->data, (int)cnt);
    return VCC_OK;
}

/* Error unless n has at most max inputs (the ones its opset defines). */
static VccStatus max_inputs(VccCtx *ctx, const VccGraph *g, const VccNode *n, int max) {
    if (n->nin <= max) return VCC_OK;
    vcc_error(ctx, "node '%s' (%s): %d inputs; opset %lld defines at most %d", n->name, vcc_node_op(n), n->nin,
              (long long)g->opset, max);
    return VCC_ERR_SHAPE;
}

/* Keep the first `keep` inputs of n (the ones after are constants now held as attributes). */
static void drop_inputs(VccNode *n, int keep) {
    if (n->nin > keep) n->nin = keep;
}

/* Row-major element strides of shape s. */
static void row_strides(const VccShape *s, int64_t *st) {
    int64_t acc = 1;
    for (int i = s->rank - 1; i >= 0; i--) {
        st[i] = acc;
        acc *= s->dims[i];
    }
}

/* The output shape an op gives input shape x (its attributes read from n). */
typedef VccStatus (*OutShapeFn)(VccCtx *ctx, const VccGraph *g, const VccNode *n, const VccShape *x, VccShape *y);

/* The shape rule of a one-input op: X -> Y of X's element type (float only: F32) and the shape out gives. */
static VccStatus forward_shape(VccCtx *ctx, VccGraph *g, int k, bool check, OutShapeFn out, bool float_only) {
    const VccNode *n = &g->nodes[k];
    const VccTensor *x = float_only ? vcc_need_input(ctx, g, n, 0, VCC_F32) : data_input(ctx, g, n, 0);
    VccShape y;
    if (!x || out(ctx, g, n, &x->shape, &y)) return VCC_ERR_SHAPE;
    return vcc_put_output(ctx, g, n, check, n->out[0], x->dtype, &y) ? VCC_OK : VCC_ERR_SHAPE;
}

/* The shape rule of the backward op of a one-input op (with the forward node's attributes): dY -> dX,
 * float, where dY has the shape the forward op gives dX's shape. */
static VccStatus adjoint_shape(VccCtx *ctx, VccGraph *g, int k, bool check, OutShapeFn out) {
    const VccNode *n = &g->nodes[k];
    const VccTensor *dy = vcc_need_input(ctx, g, n, 0, VCC_F32);
    if (!dy || n->nout != 1 || n->out[0] < 0) return vcc_operands_missing(ctx, n);
    const VccTensor *dx = &g->tensors[n->out[0]];
    VccShape want;
    if (out(ctx, g, n, &dx->shape, &want)) return VCC_ERR_SHAPE;
    if (dx->dtype != VCC_F32 || !vcc_same_shape(&want, &dy->shape)) return vcc_shape_mismatch(ctx, n);
    return vcc_put_output(ctx, g, n, check, n->out[0], VCC_F32, &dx->shape) ? VCC_OK : VCC_ERR_SHAPE;
}

/* The gradient of a one-input op through its backward op: op(dY) -> dX, with the forward's attributes. */
static VccStatus grad_by(VccDiff *d, int k, VccOp op) {
    int x = d->g->nodes[k].in[0], dy = vcc_diff_dy(d, k, 0);
    int dx = vcc_diff_new_grad(d, x);
    vcc_diff_add_node(d, op, k, "grad", &dy, 1, &dx, 1);
    vcc_diff_accum(d, x, dx);
    return VCC_OK;
}

/* ------------------------------------------------------------------ strided copies (emission) */

static void strided_push(VccStrided *s, int64_t dim, int64_t xs, int64_t ys) {
    VCC_ASSERT(s->rank < VCC_LAYOUT_MAXDIM);
    s->dims[s->rank] = dim;
    s->xs[s->rank] = xs;
    s->ys[s->rank] = ys;
    s->rank++;
}

/* s in 32-bit words of elements of dt (int64: strides doubled, a trailing dim of 2 words), with dims of
 * size 1 dropped and dims contiguous in x and y merged (long inner runs). False when s has no element. */
static bool strided_finish(VccStrided *s, VccDType dt) {
    if (dt == VCC_I64) {
        for (int a = 0; a < s->rank; a++) s->xs[a] *= 2, s->ys[a] *= 2;
        strided_push(s, 2, 1, 1);
    }
    VccStrided o;
    memset(&o, 0, sizeof o);
    for (int a = 0; a < s->rank; a++) {
        if (s->dims[a] == 0) return false;
        if (s->dims[a] == 1) continue;
        int l = o.rank - 1;
        if (l >= 0 && o.xs[l] == s->xs[a] * s->dims[a] && o.ys[l] == s->ys[a] * s->dims[a]) {
            o.dims[l] *= s->dims[a];
            o.xs[l] = s->xs[a];
            o.ys[l] = s->ys[a];
        } else {
            strided_push(&o, s->dims[a], s->xs[a], s->ys[a]);
        }
    }
    if (!o.rank) strided_push(&o, 1, 0, 0);
    *s = o;
    return true;
}

static void emit_i64s(FILE *f, const int64_t *v, int n) {
    fputc('{', f);
    for (int i = 0; i < n; i++) fprintf(f, i ? ", %" PRId64 : "%" PRId64, v[i]);
    fputc('}', f);
}

static void emit_strided_init(FILE *f, const VccStrided *s) {
    fprintf(f, "{%d, ", s->rank);
    emit_i64s(f, s->dims, s->rank);
    fputs(", ", f);
    emit_i64s(f, s->xs, s->rank);
    fputs(", ", f);
    emit_i64s(f, s->ys, s->rank);
    fputc('}', f);
}

/* "VCC_F(<byte offset>)": the bytes of tensor t from its element elem on, as 32-bit words; for a value a
 * CUDA bf16 trainer keeps in 2 bytes (VccTensor.bf16_bytes 2), "VCC_B(<byte offset>)", its elements as
 * __nv_bfloat16 (the strided copy's bfloat16 form, runtime/cuda/layout.cuh). */
static const char *words_at(VccEmit *e, int t, int64_t elem) {
    const VccTensor *x = &e->g->tensors[t];
    char *buf = e->ptr[e->next++ % 16];
    int64_t size = x->bf16_bytes ? x->bf16_bytes : (int64_t)vcc_dtype_size(x->dtype);
    snprintf(buf, sizeof e->ptr[0], x->bf16_bytes == 2 ? "VCC_B(%" PRId64 ")" : "VCC_F(%" PRId64 ")",
             x->offset + elem * size);
    return buf;
}

/* One strided_copy_forward call of s (in elements of dt) from x to y; nothing when s is empty. */
static VccStatus emit_strided(VccEmit *e, const VccNode *n, VccStrided s, VccDType dt, const char *x, const char *y) {
    if (dt != VCC_F32 && dt != VCC_I64) {
        vcc_error(e->ctx, "node '%s' (%s): %s values computed at run time are not supported (vcc has %s constants "
                  "only)", n->name, vcc_node_op(n), vcc_dtype_name(dt), vcc_dtype_name(dt));
        return VCC_ERR_UNSUPPORTED;
    }
    if (!strided_finish(&s, dt)) return VCC_OK;
    fputs("    { static const VccStrided d = ", e->f);
    emit_strided_init(e->f, &s);
    fprintf(e->f, "; strided_copy_forward(rt, &d, %s, %s); }\n", x, y);
    return VCC_OK;
}

/* A copy of the whole block (outer, len, inner) of x into columns [off, off + len) of y (outer, ylen,
 * inner), or (to_y false) of those columns of x (outer, ylen, inner) into y (outer, len, inner): one part
 * of Concat or Split along their axis. */
static VccStatus emit_part(VccEmit *e, const VccNode *n, int x, int y, bool to_y, int64_t outer, int64_t len,
                           int64_t ylen, int64_t inner, int64_t off) {
    VccStrided s;
    memset(&s, 0, sizeof s);
    strided_push(&s, outer, to_y ? len * inner : ylen * inner, to_y ? ylen * inner : len * inner);
    strided_push(&s, len * inner, 1, 1);
    VccDType dt = e->g->tensors[y].dtype;
    return emit_strided(e, n, s, dt, words_at(e, x, to_y ? 0 : off * inner), words_at(e, y, to_y ? off * inner : 0));
}

/* outer = product of dims before axis, inner = product after it. */
static void outer_inner(const VccShape *s, int axis, int64_t *outer, int64_t *inner) {
    *outer = *inner = 1;
    for (int i = 0; i < s->rank; i++) {
        if (i < axis) *outer *= s->dims[i];
        if (i > axis) *inner *= s->dims[i];
    }
}

/* ------------------------------------------------------------------ Flatten */

static const VccAttrSpec flatten_attrs[] = {{"axis", 1, VCC_OPSET_NOW, VCC_A_INT}, {NULL, 0, 0, 0}};

/* Flatten is the one op whose schema rejects a negative axis before opset 11 (its shape inference, as
 * onnxruntime applies it) */
static void flatten_check_attrs(VccCtx *ctx, const VccGraph *g, const VccNode *n) {
    if (g->opset < 11 && vcc_attr_int(n, "axis", 1) < 0)
        vcc_op_attr_problem(ctx, n, "%s attribute '%s'", "axis<0", "negative axes need opset 11 or later");
}

/* X (d0, ..., dr-1) -> (d0*...*d(axis-1), d(axis)*...*d(r-1)) */
static VccStatus flatten_out(VccCtx *ctx, const VccGraph *g, const VccNode *n, const VccShape *x, VccShape *y) {
    int64_t axis = vcc_attr_int(n, "axis", 1);
    (void)g;
    if (axis < 0) axis += x->rank;
    if (axis < 0 || axis > x->rank) {
        vcc_error(ctx, "node '%s' (Flatten): axis out of range for rank %d", n->name, x->rank);
        return VCC_ERR_SHAPE;
    }
    *y = (VccShape){2, {1, 1}};
    for (int i = 0; i < x->rank; i++) y->dims[i < axis ? 0 : 1] *= x->dims[i];
    return VCC_OK;
}

static VccStatus flatten_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    return forward_shape(ctx, g, k, check, flatten_out, false);
}

const VccOpDef vcc_def_FLATTEN = {VCC_OPF_VIEW, 0, flatten_attrs, flatten_check_attrs, view_canon, flatten_shape,
                                  view_grad, view_emit};

/* ------------------------------------------------------------------ Identity */

static VccStatus identity_out(VccCtx *ctx, const VccGraph *g, const VccNode *n, const VccShape *x, VccShape *y) {
    (void)ctx, (void)g, (void)n;
    *y = *x;
    return VCC_OK;
}

static VccStatus identity_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    return forward_shape(ctx, g, k, check, identity_out, false);
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
    if (n->phase == VCC_PHASE_BACKWARD) {
        const VccTensor *x = vcc_need_input(ctx, g, n, 0, VCC_F32);
        if (!x || n->nout != 1 || n->out[0] < 0) return vcc_operands_missing(ctx, n);
        if (g->tensors[n->out[0]].dtype != VCC_F32 ||
            vcc_shape_numel(&x->shape) != vcc_shape_numel(&g->tensors[n->out[0]].shape))
            return vcc_shape_mismatch(ctx, n);
        return VCC_OK;
    }
    const VccTensor *x = data_input(ctx, g, n, 0);
    if (!x) return VCC_ERR_SHAPE;
    const VccTensor *sh = vcc_need_input(ctx, g, n, 1, VCC_I64);
    if (!sh) return VCC_ERR_SHAPE;
    int64_t cnt = vcc_shape_numel(&sh->shape);
    if (check && !sh->data) { /* a .vir dump holds no values: the element count must be kept */
        const VccTensor *y = n->out[0] >= 0 ? &g->tensors[n->out[0]] : NULL;
        if (y && y->dtype == x->dtype && y->shape.rank == cnt &&
            vcc_shape_numel(&y->shape) == vcc_shape_numel(&x->shape))
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
    return vcc_put_output(ctx, g, n, check, n->out[0], x->dtype, &out) ? VCC_OK : VCC_ERR_SHAPE;
}

const VccOpDef vcc_def_RESHAPE = {VCC_OPF_VIEW, 0, reshape_attrs, NULL, reshape_canon, reshape_shape, view_grad,
                                  view_emit};

/* ------------------------------------------------------------------ Squeeze, Unsqueeze */

static const VccAttrSpec squeeze_attrs[] = {{"axes", 1, 12, VCC_A_INTS}, {NULL, 0, 0, 0}};

static void squeeze_check_attrs(VccCtx *ctx, const VccGraph *g, const VccNode *n) {
    if (n->op == VCC_OP_UNSQUEEZE && g->opset < 13 && !vcc_attr_get(n, "axes"))
        vcc_op_attr_problem(ctx, n, "%s attribute '%s'", "axes", "missing; ONNX requires it before opset 13");
}

/* Opset 13+: the axes input becomes the axes attribute of opsets 1-12; the output is a view. */
static VccStatus squeeze_canon(VccCtx *ctx, VccGraph *g, int k) {
    VccNode *n = &g->nodes[k];
    if (max_inputs(ctx, g, n, g->opset >= 13 ? 2 : 1)) return VCC_ERR_SHAPE;
    if (g->opset >= 13) {
        VccStatus st = const_input_to_attr(ctx, g, k, 1, "axes", VCC_I64);
        if (st) return st;
        n = &g->nodes[k];
        if (n->op == VCC_OP_UNSQUEEZE && !vcc_attr_get(n, "axes")) {
            vcc_error(ctx, "node '%s' (Unsqueeze): the axes input is missing", n->name);
            return VCC_ERR_SHAPE;
        }
    }
    drop_inputs(n, 1);
    return view_canon(ctx, g, k);
}

/* X (d0, ..., dr-1) -> X without the listed dims of size 1 (no axes: without every dim of size 1) */
static VccStatus squeeze_out(VccCtx *ctx, const VccGraph *g, const VccNode *n, const VccShape *x, VccShape *y) {
    int axes[VCC_MAX_RANK], cnt;
    bool drop[VCC_MAX_RANK] = {false};
    (void)g;
    if (!axes_attr(ctx, n, "axes", x->rank, axes, &cnt)) return VCC_ERR_SHAPE;
    for (int i = 0; i < x->rank; i++) drop[i] = cnt < 0 && x->dims[i] == 1;
    for (int i = 0; i < cnt; i++) {
        if (x->dims[axes[i]] != 1) {
            vcc_error(ctx, "node '%s' (Squeeze): axis %d has size %lld, not 1", n->name, axes[i],
                      (long long)x->dims[axes[i]]);
            return VCC_ERR_SHAPE;
        }
        drop[axes[i]] = true;
    }
    y->rank = 0;
    for (int i = 0; i < x->rank; i++)
        if (!drop[i]) y->dims[y->rank++] = x->dims[i];
    return VCC_OK;
}

static VccStatus squeeze_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    return forward_shape(ctx, g, k, check, squeeze_out, false);
}

const VccOpDef vcc_def_SQUEEZE = {VCC_OPF_VIEW, 0, squeeze_attrs, squeeze_check_attrs, squeeze_canon, squeeze_shape,
                                  view_grad, view_emit};

/* X (d0, ..., dr-1) -> rank r + len(axes), a dim of size 1 at each of the axes (of the output) */
static VccStatus unsqueeze_out(VccCtx *ctx, const VccGraph *g, const VccNode *n, const VccShape *x, VccShape *y) {
    int cnt;
    (void)g;
    attr_list(n, "axes", &cnt);
    if (cnt < 0 || x->rank + cnt > VCC_MAX_RANK) {
        vcc_error(ctx, "node '%s' (Unsqueeze): %s", n->name,
                  cnt < 0 ? "no axes" : "the output would have more dims than vcc's 8");
        return VCC_ERR_SHAPE;
    }
    int r = x->rank + cnt, axes[VCC_MAX_RANK];
    bool one[VCC_MAX_RANK] = {false};
    if (!axes_attr(ctx, n, "axes", r, axes, &cnt)) return VCC_ERR_SHAPE;
    for (int i = 0; i < cnt; i++) one[axes[i]] = true;
    y->rank = r;
    for (int i = 0, j = 0; i < r; i++) y->dims[i] = one[i] ? 1 : x->dims[j++];
    return VCC_OK;
}

static VccStatus unsqueeze_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    return forward_shape(ctx, g, k, check, unsqueeze_out, false);
}

const VccOpDef vcc_def_UNSQUEEZE = {VCC_OPF_VIEW, 0, squeeze_attrs, squeeze_check_attrs, squeeze_canon,
                                    unsqueeze_shape, view_grad, view_emit};

/* ------------------------------------------------------------------ Concat */

static const VccAttrSpec concat_attrs[] = {{"axis", 1, VCC_OPSET_NOW, VCC_A_INT}, {NULL, 0, 0, 0}};

static void concat_check_attrs(VccCtx *ctx, const VccGraph *g, const VccNode *n) {
    if (g->opset >= 4 && !vcc_attr_get(n, "axis"))
        vcc_op_attr_problem(ctx, n, "%s attribute '%s'", "axis", "missing; ONNX requires it from opset 4");
}

/* The geometry of a Concat node: its axis and each input's length along it. A backward Concat (the
 * gradient of Split) may lack inputs, zeros of the lengths its split attribute gives. */
typedef struct {
    int axis;
    const VccTensor *first; /* the first input present */
    int64_t total;          /* the output's length along axis */
} ConcatGeom;

static VccStatus concat_geom(VccCtx *ctx, const VccGraph *g, const VccNode *n, ConcatGeom *c, int64_t *len) {
    int cnt = -1;
    const int64_t *split = n->phase == VCC_PHASE_BACKWARD ? attr_list(n, "split", &cnt) : NULL;
    c->first = NULL;
    for (int i = 0; i < n->nin && !c->first; i++)
        if (n->in[i] >= 0) c->first = &g->tensors[n->in[i]];
    if (!c->first || n->nout != 1 || (split && cnt != n->nin)) return vcc_operands_missing(ctx, n);
    const VccShape *s0 = &c->first->shape;
    if (!norm_axis(ctx, n, "axis", vcc_attr_int(n, "axis", 1), s0->rank, &c->axis)) return VCC_ERR_SHAPE;
    c->total = 0;
    for (int i = 0; i < n->nin; i++) {
        const VccTensor *x = n->in[i] >= 0 ? &g->tensors[n->in[i]] : NULL;
        if (!x && !split) return vcc_operands_missing(ctx, n);
        len[i] = x ? x->shape.dims[c->axis] : split[i];
        bool ok = len[i] >= 0 && (!split || split[i] == len[i]);
        for (int d = 0; x && ok && d < s0->rank; d++)
            ok = x->dtype == c->first->dtype && x->shape.rank == s0->rank && (d == c->axis || x->shape.dims[d] == s0->dims[d]);
        if (!ok || !vcc_add_i64(c->total, len[i], &c->total)) {
            char a[128], b[128];
            vcc_shape_str(a, sizeof a, s0);
            vcc_shape_str(b, sizeof b, x ? &x->shape : s0);
            vcc_error(ctx, "node '%s' (%s): input %d %s %s does not fit input 0 %s %s along axis %d", n->name,
                      vcc_node_op(n), i, x ? vcc_dtype_name(x->dtype) : "(zeros)", b, vcc_dtype_name(c->first->dtype),
                      a, c->axis);
            return VCC_ERR_SHAPE;
        }
    }
    return VCC_OK;
}

/* (X0 (..., a0, ...), X1 (..., a1, ...), ...) -> Y (..., a0 + a1 + ..., ...) along axis */
static VccStatus concat_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    ConcatGeom c;
    int64_t *len = vcc_malloc(sizeof(int64_t) * (size_t)(n->nin ? n->nin : 1));
    VccStatus st = concat_geom(ctx, g, n, &c, len);
    free(len);
    if (st) return st;
    VccShape out = c.first->shape;
    out.dims[c.axis] = c.total;
    return vcc_put_output(ctx, g, n, check, n->out[0], c.first->dtype, &out) ? VCC_OK : VCC_ERR_SHAPE;
}

/* Concat(X0, X1, ...) -> dXi = Slice(dY) of Xi's part along axis (torch.cat's backward: narrow) */
static VccStatus concat_grad(VccDiff *d, int k) {
    VccNode n = d->g->nodes[k];
    int dy = vcc_diff_dy(d, k, 0);
    ConcatGeom c;
    int64_t *len = vcc_malloc(sizeof(int64_t) * (size_t)(n.nin ? n.nin : 1));
    VccStatus st = concat_geom(d->ctx, d->g, &n, &c, len);
    int64_t off = 0;
    for (int i = 0; i < n.nin && !st; off += len[i], i++) {
        int x = n.in[i];
        if (!d->req[x] || d->g->tensors[x].dtype != VCC_F32) continue;
        int dx = vcc_diff_new_grad(d, x);
        char suffix[32];
        snprintf(suffix, sizeof suffix, "grad%d", i);
        int s = vcc_diff_add_node(d, VCC_OP_SLICE, k, suffix, &dy, 1, &dx, 1);
        int64_t starts = off, ends = off + len[i], axes = c.axis;
        VccNode *sn = &d->g->nodes[s];
        vcc_attr_drop(sn, "axis");
        vcc_attr_set_ints(sn, "starts", &starts, 1);
        vcc_attr_set_ints(sn, "ends", &ends, 1);
        vcc_attr_set_ints(sn, "axes", &axes, 1);
        vcc_diff_accum(d, x, dx);
    }
    free(len);
    return st;
}

/* One copy per input into its columns of Y; absent inputs (a Split's outputs without a gradient) are
 * zeros. */
static VccStatus concat_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    ConcatGeom c;
    int64_t *len = vcc_malloc(sizeof(int64_t) * (size_t)(n->nin ? n->nin : 1)), outer, inner, off = 0;
    VccStatus st = concat_geom(e->ctx, e->g, n, &c, len);
    bool zeros = false;
    for (int i = 0; !st && i < n->nin; i++) zeros |= n->in[i] < 0 && len[i] > 0;
    if (!st) outer_inner(&e->g->tensors[n->out[0]].shape, c.axis, &outer, &inner);
    if (!st && zeros)
        fprintf(e->f, "    fill_forward(rt, %" PRId64 ", 0.0f, %s);\n", vcc_emit_numel(e, n->out[0]),
                vcc_emit_f32(e, n->out[0]));
    for (int i = 0; i < n->nin && !st; off += len[i], i++)
        if (n->in[i] >= 0) st = emit_part(e, n, n->in[i], n->out[0], true, outer, len[i], c.total, inner, off);
    free(len);
    return st;
}

const VccOpDef vcc_def_CONCAT = {VCC_OPF_EMPTY_IN, 0, concat_attrs, concat_check_attrs, NULL, concat_shape, concat_grad,
                                 concat_emit};

/* ------------------------------------------------------------------ Split */

static const VccAttrSpec split_attrs[] = {
    {"axis", 1, VCC_OPSET_NOW, VCC_A_INT}, {"split", 1, 12, VCC_A_INTS}, {"num_outputs", 18, VCC_OPSET_NOW, VCC_A_INT},
    {NULL, 0, 0, 0},
};

static void split_check_attrs(VccCtx *ctx, const VccGraph *g, const VccNode *n) {
    if (vcc_attr_get(n, "num_outputs") && has_input(n, 1))
        vcc_op_attr_problem(ctx, n, "%s attribute '%s'", "num_outputs", "given together with the split input");
}

/* The split input (opset 1, 13+) becomes the split attribute. */
static VccStatus split_canon(VccCtx *ctx, VccGraph *g, int k) {
    if (max_inputs(ctx, g, &g->nodes[k], g->opset >= 2 && g->opset < 13 ? 1 : 2)) return VCC_ERR_SHAPE;
    VccStatus st = const_input_to_attr(ctx, g, k, 1, "split", VCC_I64);
    drop_inputs(&g->nodes[k], 1);
    return st;
}

/* The axis of Split node n on x, and each output's length along it (len: n->nout values): the split
 * attribute, else num_outputs parts of ceil(dim / num_outputs) (the last one shorter), else equal parts. */
static VccStatus split_geom(VccCtx *ctx, const VccNode *n, const VccShape *x, int *axis, int64_t *len) {
    if (n->nout < 1) return vcc_operands_missing(ctx, n);
    if (!norm_axis(ctx, n, "axis", vcc_attr_int(n, "axis", 0), x->rank, axis)) return VCC_ERR_SHAPE;
    int64_t dim = x->dims[*axis], num = vcc_attr_int(n, "num_outputs", 0), sum = 0;
    int cnt;
    const int64_t *split = attr_list(n, "split", &cnt);
    const char *why = NULL;
    if (split) {
        for (int i = 0; i < cnt && i < n->nout; i++) {
            len[i] = split[i];
            if (split[i] < 0 || !vcc_add_i64(sum, split[i], &sum)) sum = -1;
            if (sum < 0) break;
        }
        if (cnt != n->nout) why = "split has a different number of values than the node has outputs";
        else if (sum != dim) why = "the split values do not add up to the dim";
    } else if (vcc_attr_get(n, "num_outputs")) {
        int64_t chunk = num > 0 ? dim / num + (dim % num != 0) : 0;
        if (num != n->nout) why = "num_outputs differs from the number of outputs";
        else if (chunk * (num - 1) > dim) why = "the dim is too short for num_outputs parts";
        for (int i = 0; !why && i < n->nout; i++) len[i] = i < n->nout - 1 ? chunk : dim - chunk * (num - 1);
    } else {
        if (dim % n->nout) why = "the dim does not split into equal parts, one per output";
        for (int i = 0; !why && i < n->nout; i++) len[i] = dim / n->nout;
    }
    if (why) {
        vcc_error(ctx, "node '%s' (Split): %s (dim %d has %lld elements, %d outputs)", n->name, why, *axis,
                  (long long)dim, n->nout);
        return VCC_ERR_SHAPE;
    }
    return VCC_OK;
}

/* X (..., a, ...) -> Y0 (..., a0, ...), Y1 (..., a1, ...), ... with a0 + a1 + ... = a */
static VccStatus split_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    const VccTensor *x = data_input(ctx, g, n, 0);
    if (!x) return VCC_ERR_SHAPE;
    int axis;
    int64_t *len = vcc_malloc(sizeof(int64_t) * (size_t)(n->nout ? n->nout : 1));
    VccStatus st = split_geom(ctx, n, &x->shape, &axis, len);
    for (int i = 0; !st && i < n->nout; i++) {
        VccShape out = x->shape;
        out.dims[axis] = len[i];
        if (!vcc_put_output(ctx, g, n, check, n->out[i], x->dtype, &out)) st = VCC_ERR_SHAPE;
    }
    free(len);
    return st;
}

/* Split(X) -> dX = Concat(dY0, dY1, ...) along axis (torch.split's backward: cat), zeros for outputs
 * no gradient reaches (the backward Concat's split attribute gives their lengths). */
static VccStatus split_grad(VccDiff *d, int k) {
    VccNode n = d->g->nodes[k];
    int axis, x = n.in[0];
    int64_t *len = vcc_malloc(sizeof(int64_t) * (size_t)n.nout);
    int *dys = vcc_malloc(sizeof(int) * (size_t)n.nout);
    VccStatus st = split_geom(d->ctx, &n, &d->g->tensors[x].shape, &axis, len);
    for (int i = 0; i < n.nout; i++) dys[i] = vcc_diff_dy(d, k, i);
    if (!st) {
        int dx = vcc_diff_new_grad(d, x);
        int c = vcc_diff_add_node(d, VCC_OP_CONCAT, k, "grad", dys, n.nout, &dx, 1);
        VccNode *cn = &d->g->nodes[c];
        vcc_attr_drop(cn, "num_outputs");
        vcc_attr_set_int(cn, "axis", axis);
        vcc_attr_set_ints(cn, "split", len, n.nout);
        vcc_diff_accum(d, x, dx);
    }
    free(dys);
    free(len);
    return st;
}

static VccStatus split_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    const VccTensor *x = &e->g->tensors[n->in[0]];
    int axis;
    int64_t *len = vcc_malloc(sizeof(int64_t) * (size_t)n->nout), outer, inner, off = 0;
    VccStatus st = split_geom(e->ctx, n, &x->shape, &axis, len);
    outer_inner(&x->shape, axis, &outer, &inner);
    for (int i = 0; i < n->nout && !st; off += len[i], i++)
        if (n->out[i] >= 0)
            st = emit_part(e, n, n->in[0], n->out[i], false, outer, len[i], x->shape.dims[axis], inner, off);
    free(len);
    return st;
}

const VccOpDef vcc_def_SPLIT = {0, 0, split_attrs, split_check_attrs, split_canon, split_shape, split_grad, split_emit};

/* ------------------------------------------------------------------ Slice, SliceGrad */

static const VccAttrSpec slice_attrs[] = {
    {"starts", 1, 9, VCC_A_INTS}, {"ends", 1, 9, VCC_A_INTS}, {"axes", 1, 9, VCC_A_INTS}, {NULL, 0, 0, 0},
};

static void slice_check_attrs(VccCtx *ctx, const VccGraph *g, const VccNode *n) {
    if (g->opset < 10 && (!vcc_attr_get(n, "starts") || !vcc_attr_get(n, "ends")))
        vcc_op_attr_problem(ctx, n, "%s attribute '%s'", "starts/ends", "missing; ONNX requires both before opset 10");
}

/* Opset 10+: the starts, ends, axes and steps inputs become attributes of those names. */
static VccStatus slice_canon(VccCtx *ctx, VccGraph *g, int k) {
    static const char *const names[4] = {"starts", "ends", "axes", "steps"};
    VccStatus st = max_inputs(ctx, g, &g->nodes[k], g->opset >= 10 ? 5 : 1);
    if (st) return st;
    if (g->opset >= 10) {
        if (!has_input(&g->nodes[k], 1) || !has_input(&g->nodes[k], 2)) {
            vcc_error(ctx, "node '%s' (Slice): the starts and ends inputs are required", g->nodes[k].name);
            return VCC_ERR_SHAPE;
        }
        for (int i = 0; i < 4; i++) {
            VccStatus s = const_input_to_attr(ctx, g, k, i + 1, names[i], VCC_I64);
            if (s) st = s;
        }
    }
    drop_inputs(&g->nodes[k], 1);
    return st;
}

/* Per dim of x: the first index start, the step and the length of Slice node n (ONNX Slice: negative
 * starts/ends count from the back; then clamped to [0, dim] for a positive step, to [0, dim - 1] (start)
 * and [-1, dim - 1] (end) for a negative one). Dims the axes do not name are taken whole. */
static VccStatus slice_geom(VccCtx *ctx, const VccNode *n, const VccShape *x, int64_t *start, int64_t *step,
                            int64_t *len) {
    int ns, ne, na, nst, axes[VCC_MAX_RANK];
    const int64_t *st = attr_list(n, "starts", &ns), *en = attr_list(n, "ends", &ne);
    const int64_t *steps = attr_list(n, "steps", &nst);
    attr_list(n, "axes", &na);
    if (!st || !en || ns != ne || (na >= 0 && na != ns) || (steps && nst != ns) || ns > x->rank) {
        vcc_error(ctx, "node '%s' (%s): starts, ends (and axes, steps where given) must have one value per sliced "
                  "axis, at most one per dim (rank %d)", n->name, vcc_node_op(n), x->rank);
        return VCC_ERR_SHAPE;
    }
    if (!axes_attr(ctx, n, "axes", x->rank, axes, &na)) return VCC_ERR_SHAPE;
    for (int d = 0; d < x->rank; d++) {
        start[d] = 0;
        step[d] = 1;
        len[d] = x->dims[d];
    }
    for (int i = 0; i < ns; i++) {
        int a = na >= 0 ? axes[i] : i;
        int64_t dim = x->dims[a], s = st[i], e = en[i], p = steps ? steps[i] : 1;
        if (p == 0) {
            vcc_error(ctx, "node '%s' (%s): steps must not be 0", n->name, vcc_node_op(n));
            return VCC_ERR_SHAPE;
        }
        if (s < 0) s += dim;
        if (e < 0) e += dim;
        if (p > 0) {
            s = s < 0 ? 0 : s > dim ? dim : s;
            e = e < 0 ? 0 : e > dim ? dim : e;
        } else {
            s = s < 0 ? 0 : s > dim - 1 ? dim - 1 : s;
            e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
        }
        /* elements s, s + p, ... short of e: 1 + (|e - s| - 1) / |p| when e lies beyond s in p's direction */
        int64_t span = p > 0 ? e - s : s - e, mag = p > 0 ? p : (p == INT64_MIN ? INT64_MAX : -p);
        start[a] = s;
        step[a] = p;
        len[a] = dim > 0 && span > 0 ? 1 + (span - 1) / mag : 0;
    }
    return VCC_OK;
}

/* The walk over Slice's output: x read from start with step-strides (forward), or dx written there
 * (SliceGrad, to_y). *base: the element offset of the first one in the sliced tensor. */
static VccStrided slice_walk(const VccShape *x, const int64_t *start, const int64_t *step, const int64_t *len,
                             bool to_y, int64_t *base) {
    int64_t xs[VCC_MAX_RANK], ys[VCC_MAX_RANK];
    VccShape out = *x;
    for (int d = 0; d < x->rank; d++) out.dims[d] = len[d];
    row_strides(x, xs);
    row_strides(&out, ys);
    VccStrided s;
    memset(&s, 0, sizeof s);
    *base = 0;
    for (int d = 0; d < x->rank; d++) {
        /* a step only moves between two elements: |step| < dim then, and step * stride fits */
        int64_t sx = len[d] > 1 ? step[d] * xs[d] : 0;
        *base += start[d] * xs[d];
        strided_push(&s, len[d], to_y ? ys[d] : sx, to_y ? sx : ys[d]);
    }
    return s;
}

/* X (d0, ..., dr-1) -> Y (len0, ..., len(r-1)), Y[i] = X[start + i * step] per dim */
static VccStatus slice_out(VccCtx *ctx, const VccGraph *g, const VccNode *n, const VccShape *x, VccShape *y) {
    int64_t start[VCC_MAX_RANK], step[VCC_MAX_RANK], len[VCC_MAX_RANK];
    (void)g;
    VccStatus st = slice_geom(ctx, n, x, start, step, len);
    *y = *x;
    for (int d = 0; d < y->rank; d++) y->dims[d] = len[d];
    return st;
}

static VccStatus slice_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    return forward_shape(ctx, g, k, check, slice_out, false);
}

/* Slice(X) -> SliceGrad(dY) -> dX: zeros, dY at the slice (torch's slice_backward) */
static VccStatus slice_grad(VccDiff *d, int k) { return grad_by(d, k, VCC_OP_SLICE_GRAD); }

static VccStatus slice_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    const VccTensor *x = &e->g->tensors[n->in[0]];
    int64_t start[VCC_MAX_RANK], step[VCC_MAX_RANK], len[VCC_MAX_RANK], base;
    VccStatus st = slice_geom(e->ctx, n, &x->shape, start, step, len);
    if (st) return st;
    VccStrided s = slice_walk(&x->shape, start, step, len, false, &base);
    return emit_strided(e, n, s, x->dtype, words_at(e, n->in[0], base), words_at(e, n->out[0], 0));
}

const VccOpDef vcc_def_SLICE = {0, 0, slice_attrs, slice_check_attrs, slice_canon, slice_shape, slice_grad, slice_emit};

/* dY (the slice's shape) -> dX (the forward input's shape) with the forward Slice's attributes */
static VccStatus slice_grad_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    return adjoint_shape(ctx, g, k, check, slice_out);
}

static VccStatus slice_grad_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    const VccTensor *dx = &e->g->tensors[n->out[0]];
    int64_t start[VCC_MAX_RANK], step[VCC_MAX_RANK], len[VCC_MAX_RANK], base;
    VccStatus st = slice_geom(e->ctx, n, &dx->shape, start, step, len);
    if (st) return st;
    fprintf(e->f, "    fill_forward(rt, %" PRId64 ", 0.0f, %s);\n", vcc_emit_numel(e, n->out[0]),
            vcc_emit_f32(e, n->out[0]));
    VccStrided s = slice_walk(&dx->shape, start, step, len, true, &base);
    return emit_strided(e, n, s, VCC_F32, words_at(e, n->in[0], 0), words_at(e, n->out[0], base));
}

const VccOpDef vcc_def_SLICE_GRAD = {0, 0, NULL, NULL, NULL, slice_grad_shape, NULL, slice_grad_emit};

/* ------------------------------------------------------------------ Transpose */

static const VccAttrSpec transpose_attrs[] = {{"perm", 1, VCC_OPSET_NOW, VCC_A_INTS}, {NULL, 0, 0, 0}};

/* perm of Transpose node n for rank r (default: the dims reversed); false, with an error, when it is
 * not a permutation of 0..r-1. */
static bool transpose_perm(VccCtx *ctx, const VccNode *n, int r, int *perm) {
    int cnt;
    const int64_t *p = attr_list(n, "perm", &cnt);
    bool seen[VCC_MAX_RANK] = {false}, ok = !p || cnt == r;
    for (int i = 0; i < r && ok; i++) {
        int64_t v = p ? p[i] : r - 1 - i;
        ok = v >= 0 && v < r && !seen[v];
        if (ok) seen[v] = true, perm[i] = (int)v;
    }
    if (!ok) vcc_error(ctx, "node '%s' (Transpose): perm is not a permutation of the %d dims", n->name, r);
    return ok;
}

/* X (d0, ..., dr-1) -> Y (d(perm[0]), ..., d(perm[r-1])) */
static VccStatus transpose_out(VccCtx *ctx, const VccGraph *g, const VccNode *n, const VccShape *x, VccShape *y) {
    int perm[VCC_MAX_RANK];
    (void)g;
    if (!transpose_perm(ctx, n, x->rank, perm)) return VCC_ERR_SHAPE;
    *y = *x;
    for (int i = 0; i < y->rank; i++) y->dims[i] = x->dims[perm[i]];
    return VCC_OK;
}

static VccStatus transpose_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    return forward_shape(ctx, g, k, check, transpose_out, false);
}

/* Transpose(X, perm) -> dX = Transpose(dY, inverse of perm) (torch.permute's backward) */
static VccStatus transpose_grad(VccDiff *d, int k) {
    VccNode n = d->g->nodes[k];
    int x = n.in[0], dy = vcc_diff_dy(d, k, 0), perm[VCC_MAX_RANK], r = d->g->tensors[x].shape.rank;
    if (!transpose_perm(d->ctx, &n, r, perm)) return VCC_ERR_SHAPE;
    int64_t inv[VCC_MAX_RANK];
    for (int i = 0; i < r; i++) inv[perm[i]] = i;
    int dx = vcc_diff_new_grad(d, x);
    int t = vcc_diff_add_node(d, VCC_OP_TRANSPOSE, k, "grad", &dy, 1, &dx, 1);
    vcc_attr_set_ints(&d->g->nodes[t], "perm", inv, r);
    vcc_diff_accum(d, x, dx);
    return VCC_OK;
}

static VccStatus transpose_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    const VccTensor *x = &e->g->tensors[n->in[0]], *y = &e->g->tensors[n->out[0]];
    int perm[VCC_MAX_RANK];
    int64_t xs[VCC_MAX_RANK], ys[VCC_MAX_RANK];
    if (!transpose_perm(e->ctx, n, x->shape.rank, perm)) return VCC_ERR_SHAPE;
    row_strides(&x->shape, xs);
    row_strides(&y->shape, ys);
    VccStrided s;
    memset(&s, 0, sizeof s);
    for (int i = 0; i < y->shape.rank; i++) strided_push(&s, y->shape.dims[i], xs[perm[i]], ys[i]);
    return emit_strided(e, n, s, x->dtype, words_at(e, n->in[0], 0), words_at(e, n->out[0], 0));
}

const VccOpDef vcc_def_TRANSPOSE = {0, 0, transpose_attrs, NULL, NULL, transpose_shape, transpose_grad,
                                    transpose_emit};

/* ------------------------------------------------------------------ Expand, Tile, ExpandGrad */

/* Expand: the shape input becomes the shape attribute. Tile: repeats (opset 6+) becomes the repeats
 * attribute; Tile-1's tiles and axis (scalars) become the attributes of those names. */
static VccStatus expand_canon(VccCtx *ctx, VccGraph *g, int k) {
    VccNode *n = &g->nodes[k];
    VccStatus st = max_inputs(ctx, g, n, n->op == VCC_OP_TILE && g->opset < 6 ? 3 : 2);
    if (st) return st;
    /* an Expand whose shape a node computes (torch's x.expand: Shape -> ... -> Where) waits for that
     * node to fold during shapes: expand_shape converts it then */
    if (n->op == VCC_OP_EXPAND && has_input(n, 1) && g->tensors[n->in[1]].producer >= 0 &&
        g->tensors[n->in[1]].dtype != VCC_F32)
        return VCC_OK;
    if (n->op == VCC_OP_EXPAND) st = const_input_to_attr(ctx, g, k, 1, "shape", VCC_I64);
    else if (g->opset >= 6) st = const_input_to_attr(ctx, g, k, 1, "repeats", VCC_I64);
    else if ((st = const_input_to_attr(ctx, g, k, 1, "tiles", VCC_I64)) == VCC_OK)
        st = const_input_to_attr(ctx, g, k, 2, "axis", VCC_I64);
    n = &g->nodes[k];
    if (!st && !vcc_attr_get(n, n->op == VCC_OP_EXPAND ? "shape" : g->opset >= 6 ? "repeats" : "axis")) {
        vcc_error(ctx, "node '%s' (%s): an input is missing", n->name, vcc_node_op(n));
        st = VCC_ERR_SHAPE;
    }
    drop_inputs(n, 1);
    return st;
}

/* Expand's output: x and the shape attribute broadcast together (numpy rules: aligned at the back,
 * a dim of 1 takes the other's size). */
static VccStatus expand_out(VccCtx *ctx, const VccNode *n, const VccShape *x, VccShape *out) {
    int cnt;
    const int64_t *v = attr_list(n, "shape", &cnt);
    if (!v || cnt > VCC_MAX_RANK) {
        vcc_error(ctx, "node '%s' (Expand): shape must have at most %d values", n->name, VCC_MAX_RANK);
        return VCC_ERR_SHAPE;
    }
    out->rank = cnt > x->rank ? cnt : x->rank;
    for (int i = 0; i < out->rank; i++) {
        int a = i - (out->rank - x->rank), b = i - (out->rank - cnt);
        int64_t dx = a >= 0 ? x->dims[a] : 1, ds = b >= 0 ? v[b] : 1;
        if (ds < 0 || (dx != ds && dx != 1 && ds != 1)) {
            char s1[128];
            vcc_shape_str(s1, sizeof s1, x);
            vcc_error(ctx, "node '%s' (Expand): input %s does not broadcast to the shape (dim %d: %lld)", n->name, s1,
                      i, (long long)ds);
            return VCC_ERR_SHAPE;
        }
        out->dims[i] = dx == 1 ? ds : dx;
    }
    return VCC_OK;
}

/* Tile's repeats for x: the repeats attribute (one per dim), or Tile-1's tiles copies along axis. */
static VccStatus tile_repeats(VccCtx *ctx, const VccNode *n, const VccShape *x, int64_t *rep) {
    int cnt, axis;
    const int64_t *v = attr_list(n, "repeats", &cnt);
    for (int i = 0; i < x->rank; i++) rep[i] = v && i < cnt ? v[i] : 1;
    if (!v) {
        int na;
        const int64_t *t = attr_list(n, "tiles", &cnt), *a = attr_list(n, "axis", &na);
        if (!t || cnt != 1 || !a || na != 1) {
            vcc_error(ctx, "node '%s' (Tile): tiles and axis must be one value each", n->name);
            return VCC_ERR_SHAPE;
        }
        if (!norm_axis(ctx, n, "axis", a[0], x->rank, &axis)) return VCC_ERR_SHAPE;
        rep[axis] = t[0];
    } else if (cnt != x->rank) {
        vcc_error(ctx, "node '%s' (Tile): repeats has %d values for rank %d", n->name, cnt, x->rank);
        return VCC_ERR_SHAPE;
    }
    for (int i = 0; i < x->rank; i++)
        if (rep[i] < 0) {
            vcc_error(ctx, "node '%s' (Tile): repeats must not be negative", n->name);
            return VCC_ERR_SHAPE;
        }
    return VCC_OK;
}

/* Expand X to the broadcast shape, or tile it: Y (d0 * rep0, ..., d(r-1) * rep(r-1)) */
static VccStatus expand_tile_out(VccCtx *ctx, const VccGraph *g, const VccNode *n, const VccShape *x,
                                 VccShape *out) {
    (void)g;
    if (n->op == VCC_OP_EXPAND || (n->op == VCC_OP_EXPAND_GRAD && !vcc_attr_get(n, "repeats") &&
                                   !vcc_attr_get(n, "tiles")))
        return expand_out(ctx, n, x, out);
    int64_t rep[VCC_MAX_RANK];
    VccStatus st = tile_repeats(ctx, n, x, rep);
    *out = *x;
    for (int i = 0; !st && i < x->rank; i++)
        if (!vcc_mul_i64(x->dims[i], rep[i], &out->dims[i])) {
            vcc_error(ctx, "node '%s' (Tile): the output is too large", n->name);
            st = VCC_ERR_SHAPE;
        }
    return st;
}

static VccStatus expand_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    VccNode *n = &g->nodes[k];
    if (!check && n->op == VCC_OP_EXPAND && has_input(n, 1) && !vcc_attr_get(n, "shape")) {
        VccTensor *shape = &g->tensors[n->in[1]];
        if (shape->kind == VCC_T_CONST && shape->data) shape->producer = -1; /* folded: its node is going */
        VccStatus st = expand_canon(ctx, g, k);
        if (st) {
            vcc_report_problems(ctx);
            return st;
        }
    }
    return forward_shape(ctx, g, k, check, expand_tile_out, false);
}

/* The walk of Expand/Tile over y (shape ys_) reading x (shape xs_): per dim of y, x's stride, 0 where
 * x's dim repeats (Expand: a dim of 1 broadcast or a new leading dim; Tile: each dim split in (repeat,
 * extent), the repeat with x stride 0). *sum: the same walk as ExpandGrad's reduction (keep: the dims of
 * x, sum: the repeats, in y's strides). */
static VccStatus expand_walk(VccCtx *ctx, const VccNode *n, const VccShape *x, const VccShape *y, VccStrided *copy,
                             VccSumTo *sum) {
    int64_t xs[VCC_MAX_RANK], ys[VCC_MAX_RANK], rep[VCC_MAX_RANK];
    row_strides(x, xs);
    row_strides(y, ys);
    memset(copy, 0, sizeof *copy);
    memset(sum, 0, sizeof *sum);
    bool tile = n->op == VCC_OP_TILE || vcc_attr_get(n, "repeats") || vcc_attr_get(n, "tiles");
    if (tile) {
        VccStatus st = tile_repeats(ctx, n, x, rep);
        if (st) return st;
        for (int i = 0; i < x->rank; i++) {
            strided_push(copy, rep[i], 0, x->dims[i] * ys[i]);
            strided_push(copy, x->dims[i], xs[i], ys[i]);
            strided_push(&sum->sum, rep[i], x->dims[i] * ys[i], 0);
            strided_push(&sum->keep, x->dims[i], ys[i], xs[i]);
        }
    } else {
        for (int i = 0; i < y->rank; i++) {
            int a = i - (y->rank - x->rank);
            bool bcast = a < 0 || (x->dims[a] == 1 && y->dims[i] != 1);
            strided_push(copy, y->dims[i], bcast ? 0 : xs[a], ys[i]);
            if (bcast) strided_push(&sum->sum, y->dims[i], ys[i], 0);
            else strided_push(&sum->keep, y->dims[i], ys[i], xs[a]);
        }
    }
    strided_finish(&sum->sum, VCC_F32); /* no dim is 0 here: the caller emits nothing for an empty dX */
    strided_finish(&sum->keep, VCC_F32);
    return VCC_OK;
}

/* Expand/Tile(X) -> ExpandGrad(dY) -> dX: per element of X the sum of dY over its copies
 * (torch: expand's sum_to_size, repeat's sum over the repeats) */
static VccStatus expand_grad(VccDiff *d, int k) { return grad_by(d, k, VCC_OP_EXPAND_GRAD); }

static VccStatus expand_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    const VccTensor *x = &e->g->tensors[n->in[0]], *y = &e->g->tensors[n->out[0]];
    VccStrided s;
    VccSumTo unused;
    VccStatus st = expand_walk(e->ctx, n, &x->shape, &y->shape, &s, &unused);
    return st ? st : emit_strided(e, n, s, x->dtype, words_at(e, n->in[0], 0), words_at(e, n->out[0], 0));
}

const VccOpDef vcc_def_EXPAND = {0, 0, NULL, NULL, expand_canon, expand_shape, expand_grad, expand_emit};
const VccOpDef vcc_def_TILE = {0, 0, NULL, NULL, expand_canon, expand_shape, expand_grad, expand_emit};

/* dY (Expand's or Tile's output) -> dX (its input), with the forward node's attributes */
static VccStatus expand_grad_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    return adjoint_shape(ctx, g, k, check, expand_tile_out);
}

static VccStatus expand_grad_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    const VccTensor *dy = &e->g->tensors[n->in[0]], *dx = &e->g->tensors[n->out[0]];
    VccStrided unused;
    VccSumTo s;
    VccStatus st = expand_walk(e->ctx, n, &dx->shape, &dy->shape, &unused, &s);
    int64_t count = vcc_emit_numel(e, n->out[0]);
    if (st || count == 0) return st;
    fputs("    { static const VccSumTo d = {", e->f);
    emit_strided_init(e->f, &s.keep);
    fputs(", ", e->f);
    emit_strided_init(e->f, &s.sum);
    fprintf(e->f, "}; expand_backward(rt, %" PRId64 ", &d, %s, %s); }\n", count, vcc_emit_f32(e, n->in[0]),
            vcc_emit_f32(e, n->out[0]));
    return VCC_OK;
}

const VccOpDef vcc_def_EXPAND_GRAD = {0, 0, NULL, NULL, NULL, expand_grad_shape, NULL, expand_grad_emit};

/* ------------------------------------------------------------------ Cast */

/* ONNX TensorProto element types Cast can produce in vcc (others are refused). */
enum { ONNX_FLOAT = 1, ONNX_INT32 = 6, ONNX_INT64 = 7, ONNX_BOOL = 9 };

static const VccAttrSpec cast_attrs[] = {
    {"to", 1, 5, VCC_A_STRING}, {"to", 6, VCC_OPSET_NOW, VCC_A_INT}, {"saturate", 19, VCC_OPSET_NOW, VCC_A_INT},
    {NULL, 0, 0, 0},
};

/* The element type code of Cast's to attribute (opset 1 spells it: "FLOAT", "INT64", ...); 0 when vcc
 * cannot produce it. */
static int cast_to(const VccNode *n) {
    static const struct { const char *name; int code; } names[] = {
        {"FLOAT", ONNX_FLOAT}, {"INT32", ONNX_INT32}, {"INT64", ONNX_INT64}, {"BOOL", ONNX_BOOL},
    };
    const VccAttr *a = vcc_attr_get(n, "to");
    if (a && a->type == VCC_A_STRING)
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            if (strcmp(a->s, names[i].name) == 0) return names[i].code;
    int64_t v = a && a->type == VCC_A_INT ? a->i : 0;
    return v == ONNX_FLOAT || v == ONNX_INT32 || v == ONNX_INT64 || v == ONNX_BOOL ? (int)v : 0;
}

static VccDType cast_dtype(int code) { return code == ONNX_FLOAT ? VCC_F32 : code == ONNX_BOOL ? VCC_BOOL : VCC_I64; }

static void cast_check_attrs(VccCtx *ctx, const VccGraph *g, const VccNode *n) {
    (void)g;
    /* DOUBLE: a Cast of a constant to double is evaluated while compiling (ir/ops/fold.c); one of a
     * value computed at run time is refused by the shape rule */
    const VccAttr *a = vcc_attr_get(n, "to");
    if (a && ((a->type == VCC_A_INT && a->i == 11) || (a->type == VCC_A_STRING && strcmp(a->s, "DOUBLE") == 0)))
        return;
    if (a && !cast_to(n))
        vcc_op_attr_problem(ctx, n, "%s attribute '%s'", "to",
                            "vcc's tensors are FLOAT, INT64 (INT32 is kept as int64) and BOOL constants");
}

/* Canonical form of Cast: Cast-1's string `to` becomes its type code. A Cast of a constant is folded
 * before this, by passes/canonical.c with ir/ops/fold.c (the one evaluator of ONNX Cast on constants);
 * one fold.c declines (a result over its size limit) runs as the kernel, as any Cast does. */
static VccStatus cast_canon(VccCtx *ctx, VccGraph *g, int k) {
    VccNode *n = &g->nodes[k];
    int to = cast_to(n);
    if (vcc_attr_get(n, "to") && vcc_attr_get(n, "to")->type == VCC_A_STRING) vcc_attr_set_int(n, "to", to);
    if (n->nin != 1 || n->in[0] < 0 || n->nout != 1 || n->out[0] < 0) return vcc_operands_missing(ctx, n);
    return VCC_OK;
}

/* X -> Y of the to type, X's shape. Cast to X's own type (INT32 from int64 excepted: it wraps) is an
 * Identity: the node becomes one, its output a view. */
static VccStatus cast_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    VccNode *n = &g->nodes[k];
    const VccTensor *x = data_input(ctx, g, n, 0);
    if (!x) return VCC_ERR_SHAPE;
    int to = cast_to(n);
    VccDType dt = cast_dtype(to);
    if (!to || x->dtype == VCC_BOOL || dt == VCC_BOOL) {
        vcc_error(ctx, "node '%s' (Cast): %s to %s of a value computed at run time is not supported (vcc has FLOAT "
                  "and INT64 values, and BOOL constants)", n->name, vcc_dtype_name(x->dtype),
                  to ? vcc_dtype_name(dt) : "this type");
        return VCC_ERR_UNSUPPORTED;
    }
    if (!check && x->dtype == dt && to != ONNX_INT32) {
        n->op = VCC_OP_IDENTITY;
        vcc_attr_drop(n, "to");
        vcc_attr_drop(n, "saturate");
        g->tensors[n->out[0]].alias_of = n->in[0];
    }
    return vcc_put_output(ctx, g, n, check, n->out[0], dt, &x->shape) ? VCC_OK : VCC_ERR_SHAPE;
}

/* A Cast that stays one converts between float and integers: no gradient flows through it (PyTorch:
 * integer tensors do not require grad). */
static VccStatus cast_grad(VccDiff *d, int k) {
    (void)d;
    (void)k;
    return VCC_OK;
}

static VccStatus cast_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    const VccTensor *x = &e->g->tensors[n->in[0]], *y = &e->g->tensors[n->out[0]];
    int64_t count = vcc_emit_numel(e, n->out[0]);
    if (x->dtype == VCC_F32 && y->dtype == VCC_I64) {
        bool i32 = cast_to(n) == ONNX_INT32;
        fprintf(e->f, "    cast_f32_int_forward(rt, %" PRId64 ", %s, %s, %s, (int64_t *)(A + %" PRId64 "));\n", count,
                i32 ? "INT32_MIN" : "INT64_MIN", i32 ? "INT32_MAX" : "INT64_MAX", vcc_emit_f32(e, n->in[0]), y->offset);
    } else if (x->dtype == VCC_I64 && y->dtype == VCC_F32) {
        fprintf(e->f, "    cast_i64_f32_forward(rt, %" PRId64 ", (const int64_t *)(A + %" PRId64 "), %s);\n", count,
                x->offset, vcc_emit_f32(e, n->out[0]));
    } else if (x->dtype == y->dtype && cast_to(n) != ONNX_INT32) { /* a dump's Cast to its own type */
        fprintf(e->f, "    copy_forward(rt, %" PRId64 ", %s, %s);\n", count * (int64_t)(vcc_dtype_size(x->dtype) / 4),
                words_at(e, n->in[0], 0), words_at(e, n->out[0], 0));
    } else if (x->dtype == VCC_I64 && y->dtype == VCC_I64) {
        fprintf(e->f, "    cast_i64_i32_forward(rt, %" PRId64 ", (const int64_t *)(A + %" PRId64 "), "
                "(int64_t *)(A + %" PRId64 "));\n", count, x->offset, y->offset);
    } else {
        vcc_error(e->ctx, "node '%s' (Cast): no code for %s to %s", n->name, vcc_dtype_name(x->dtype),
                  vcc_dtype_name(y->dtype));
        return VCC_ERR_UNSUPPORTED;
    }
    return VCC_OK;
}

const VccOpDef vcc_def_CAST = {0, 0, cast_attrs, cast_check_attrs, cast_canon, cast_shape, cast_grad, cast_emit};

/* ------------------------------------------------------------------ Resize, ResizeGrad */

static const VccAttrSpec resize_attrs[] = {
    {"mode", 10, VCC_OPSET_NOW, VCC_A_STRING},
    {"coordinate_transformation_mode", 11, VCC_OPSET_NOW, VCC_A_STRING},
    {"cubic_coeff_a", 11, VCC_OPSET_NOW, VCC_A_FLOAT},
    {"exclude_outside", 11, VCC_OPSET_NOW, VCC_A_INT},
    {"extrapolation_value", 11, VCC_OPSET_NOW, VCC_A_FLOAT},
    {"nearest_mode", 11, VCC_OPSET_NOW, VCC_A_STRING},
    {"antialias", 18, VCC_OPSET_NOW, VCC_A_INT},
    {"axes", 18, VCC_OPSET_NOW, VCC_A_INTS},
    {"keep_aspect_ratio_policy", 18, VCC_OPSET_NOW, VCC_A_STRING},
    {NULL, 0, 0, 0},
};

/* The index of s in the NULL-ended list names, or -1. */
static int name_index(const char *s, const char *const *names) {
    for (int i = 0; names[i]; i++)
        if (strcmp(s, names[i]) == 0) return i;
    return -1;
}

static const char *const resize_modes[] = {"nearest", "linear", "cubic", NULL};
static const char *const resize_coords[] = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                                            "tf_half_pixel_for_nearest", "half_pixel_symmetric",
                                            "tf_crop_and_resize", NULL};
static const char *const resize_nearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil", NULL};
static const char *const resize_policies[] = {"stretch", "not_larger", "not_smaller", NULL};

static void resize_check_attrs(VccCtx *ctx, const VccGraph *g, const VccNode *n) {
    int mode = name_index(vcc_attr_string(n, "mode", "nearest"), resize_modes);
    int c = name_index(vcc_attr_string(n, "coordinate_transformation_mode", "half_pixel"), resize_coords);
    if (mode < 0)
        vcc_op_attr_problem(ctx, n, "%s attribute '%s'", "mode", "not an ONNX Resize mode");
    else if (mode == VCC_RESIZE_CUBIC && g->opset < 11)
        vcc_op_attr_problem(ctx, n, "%s attribute '%s'", "mode", "cubic exists from opset 11");
    if (c < 0)
        vcc_op_attr_problem(ctx, n, "%s attribute '%s'", "coordinate_transformation_mode",
                            "not an ONNX coordinate_transformation_mode");
    else if (c == VCC_RESIZE_TF_HALF_PIXEL_FOR_NEAREST && g->opset >= 13)
        vcc_op_attr_problem(ctx, n, "%s attribute '%s'", "coordinate_transformation_mode",
                            "tf_half_pixel_for_nearest exists in opsets 11-12 only");
    else if (c == VCC_RESIZE_HALF_PIXEL_SYMMETRIC && g->opset < 19)
        vcc_op_attr_problem(ctx, n, "%s attribute '%s'", "coordinate_transformation_mode",
                            "half_pixel_symmetric exists from opset 19");
    if (name_index(vcc_attr_string(n, "nearest_mode", "round_prefer_floor"), resize_nearest) < 0)
        vcc_op_attr_problem(ctx, n, "%s attribute '%s'", "nearest_mode", "not an ONNX nearest_mode");
    if (name_index(vcc_attr_string(n, "keep_aspect_ratio_policy", "stretch"), resize_policies) < 0)
        vcc_op_attr_problem(ctx, n, "%s attribute '%s'", "keep_aspect_ratio_policy", "not an ONNX policy");
    /* nearest has no filter to stretch or renormalize (ONNX's reference refuses antialias there, and
     * divides 0 by 0 where exclude_outside drops the nearest index) */
    if (vcc_attr_int(n, "antialias", 0) != 0 && mode == VCC_RESIZE_NEAREST)
        vcc_op_attr_problem(ctx, n, "%s attribute '%s'", "antialias", "applies to linear and cubic modes only");
    if (vcc_attr_int(n, "exclude_outside", 0) != 0 && mode == VCC_RESIZE_NEAREST)
        vcc_op_attr_problem(ctx, n, "%s attribute '%s'", "exclude_outside", "applies to linear and cubic modes only");
}

/* Opset 10: the scales input (1) becomes the scales attribute; opset 11+: scales (2) or sizes (3), exactly
 * one of them (an empty scales tensor counts as absent); roi (1) becomes the roi attribute under
 * tf_crop_and_resize, the only mode that reads it, and is dropped otherwise. */
static VccStatus resize_canon(VccCtx *ctx, VccGraph *g, int k) {
    VccNode *n = &g->nodes[k];
    VccStatus st = max_inputs(ctx, g, n, g->opset < 11 ? 2 : 4);
    if (st) return st;
    if (g->opset < 11) {
        st = const_input_to_attr(ctx, g, k, 1, "scales", VCC_F32);
    } else {
        if (has_input(n, 1) && vcc_is_initializer(g, n->in[1])) g->tensors[n->in[1]].kind = VCC_T_CONST;
        if (strcmp(vcc_attr_string(n, "coordinate_transformation_mode", "half_pixel"), "tf_crop_and_resize") == 0)
            st = const_input_to_attr(ctx, g, k, 1, "roi", VCC_F32);
        if (!st && (st = const_input_to_attr(ctx, g, k, 2, "scales", VCC_F32)) == VCC_OK)
            st = const_input_to_attr(ctx, g, k, 3, "sizes", VCC_I64);
    }
    n = &g->nodes[k];
    const VccAttr *sc = vcc_attr_get(n, "scales");
    if (sc && sc->n == 0 && vcc_attr_get(n, "sizes")) vcc_attr_drop(n, "scales");
    if (!st && !vcc_attr_get(n, "scales") == !vcc_attr_get(n, "sizes")) {
        vcc_error(ctx, "node '%s' (Resize): give exactly one of the scales and sizes inputs", n->name);
        st = VCC_ERR_SHAPE;
    }
    drop_inputs(n, 1);
    return st;
}

/* Whether axis a of d maps every output index to its own input index alone (the identity), checked with
 * the kernels' own functions: such an axis is walked directly. */
static bool resize_identity(const VccResize *d, int a) {
    if (d->in[a] != d->out[a]) return false;
    for (int64_t o = 0; o < d->out[a]; o++) {
        if (vcc_resize_outside(d, a, o)) return false;
        if (vcc_resize_filtered(d)) {
            VccResizeWindow w;
            vcc_resize_window(d, a, o, &w);
            for (int64_t j = w.lo; j < w.lo + w.n; j++)
                if (vcc_resize_raw(d, a, &w, j) / w.norm != (j == o ? 1.0 : 0.0)) return false;
        } else {
            int64_t i0, i1;
            double w1;
            vcc_resize_taps(d, a, o, &i0, &i1, &w1);
            if (!(i0 == o && (i1 == o || w1 == 0.0))) return false;
        }
    }
    return true;
}

/* tf_crop_and_resize's crop of d: roi holds the starts, then the ends, of the na resized axes (fractions
 * of in - 1; an axis left out keeps [0, 1]). Refused: a crop whose end lies before its start (flipped:
 * ONNX's reference flips the axis, onnxruntime leaves an axis whose length does not change as it is,
 * and vcc's gradient gathers along a map that does not decrease) and values beyond +-1e6 (no input to
 * sample there). */
static VccStatus resize_roi(VccCtx *ctx, const VccNode *n, const int *axes, int na, VccResize *d) {
    const VccAttr *roi = vcc_attr_get(n, "roi");
    for (int a = 0; a < d->rank; a++) d->roi_start[a] = 0.0, d->roi_end[a] = 1.0;
    if (d->coord != VCC_RESIZE_TF_CROP_AND_RESIZE) return VCC_OK;
    if (!roi || roi->type != VCC_A_FLOATS || roi->n != 2 * na) {
        vcc_error(ctx, "node '%s' (Resize): tf_crop_and_resize needs the roi input, a start and an end per resized "
                  "axis (%d values)", n->name, 2 * na);
        return VCC_ERR_SHAPE;
    }
    for (int i = 0; i < na; i++) {
        double lo = roi->floats[i], hi = roi->floats[na + i];
        if (!(fabs(lo) <= 1e6 && fabs(hi) <= 1e6 && lo <= hi)) {
            vcc_error(ctx, "node '%s' (Resize): the roi of axis %d, [%.9g, %.9g], is not supported (vcc crops "
                      "with start <= end, both within +-1e6)", n->name, axes[i], lo, hi);
            return VCC_ERR_UNSUPPORTED;
        }
        d->roi_start[axes[i]] = lo;
        d->roi_end[axes[i]] = hi;
    }
    return VCC_OK;
}

/* The forms where ONNX's spec and its reference implementation (onnx/reference/ops/op_resize.py) give
 * axis a different samples, refused (onnxruntime follows the spec): with scales that give a fractional
 * length, align_corners and tf_crop_and_resize divide by the output's length - 1 in the spec and by the
 * fraction - 1 in the reference, and pytorch_half_pixel's length-1 test differs; tf_crop_and_resize's
 * output length is floor(in * (end - start) * scale) in the spec and floor(in * scale) in the reference
 * (and onnxruntime); for an output of length 1, pytorch_half_pixel's x_original is 0 in the spec and
 * -0.5 in the reference, which only a filter (cubic, antialias) tells apart. */
static VccStatus resize_unambiguous(VccCtx *ctx, const VccNode *n, const VccResize *d, int a, bool scales) {
    bool fraction = scales && d->length[a] != (double)d->out[a];
    if (fraction && (d->coord == VCC_RESIZE_ALIGN_CORNERS || d->coord == VCC_RESIZE_TF_CROP_AND_RESIZE ||
                     (d->coord == VCC_RESIZE_PYTORCH_HALF_PIXEL && d->out[a] == 1))) {
        vcc_error(ctx, "node '%s' (Resize): %s with a scale that does not give a whole length on axis %d "
                  "(%lld x %.9g) is ambiguous in ONNX (the spec's formula takes the output's length, its "
                  "reference implementation the fraction); give sizes instead of scales", n->name,
                  resize_coords[d->coord], a, (long long)d->in[a], d->scale[a]);
        return VCC_ERR_UNSUPPORTED;
    }
    double crop = floor((double)d->in[a] * (d->roi_end[a] - d->roi_start[a]) * d->scale[a]);
    if (scales && d->coord == VCC_RESIZE_TF_CROP_AND_RESIZE && crop != (double)d->out[a]) {
        vcc_error(ctx, "node '%s' (Resize): tf_crop_and_resize with scales on axis %d is ambiguous in ONNX (the "
                  "spec's output length floor(in * (end - start) * scale) is %.0f, its reference implementation's "
                  "floor(in * scale) %lld); give sizes instead of scales", n->name, a, crop, (long long)d->out[a]);
        return VCC_ERR_UNSUPPORTED;
    }
    if (d->coord == VCC_RESIZE_PYTORCH_HALF_PIXEL && d->out[a] == 1 && d->in[a] > 1 && vcc_resize_filtered(d)) {
        vcc_error(ctx, "node '%s' (Resize): pytorch_half_pixel with an output length of 1 on axis %d is ambiguous "
                  "in ONNX for %s (the spec's x_original is 0, its reference implementation's -0.5)", n->name, a,
                  d->antialias ? "an antialiasing filter" : "cubic mode");
        return VCC_ERR_UNSUPPORTED;
    }
    return VCC_OK;
}

/* The sampling of Resize node n on x (rank <= 8): output dims, per axis scale and length, active axes
 * (those whose map is not the identity), the filter of cubic mode and antialias, tf_crop_and_resize's
 * crop. Opset 10 maps coordinates asymmetrically, nearest rounding down when an axis grows and up when
 * it shrinks (onnxruntime's Resize-10); later opsets as their attributes say (cubic_coeff_a,
 * exclude_outside, extrapolation_value and roi from 11, antialias and axes from 18), with the
 * reference's arithmetic. */
static VccStatus resize_desc(VccCtx *ctx, const VccGraph *g, const VccNode *n, const VccShape *x, VccResize *d) {
    int r = x->rank, axes[VCC_MAX_RANK], na, ns = -1, nz = -1;
    memset(d, 0, sizeof *d);
    if (r < 1 || !axes_attr(ctx, n, "axes", r, axes, &na)) {
        if (r < 1) vcc_error(ctx, "node '%s' (Resize): the input is a scalar", n->name);
        return VCC_ERR_SHAPE;
    }
    if (na < 0)
        for (na = 0; na < r; na++) axes[na] = na;
    const VccAttr *sc = vcc_attr_get(n, "scales");
    const int64_t *sizes = attr_list(n, "sizes", &nz);
    if (sc && sc->type == VCC_A_FLOATS) ns = sc->n;
    if ((ns >= 0) == (nz >= 0) || (ns >= 0 && ns != na) || (nz >= 0 && nz != na)) {
        vcc_error(ctx, "node '%s' (Resize): needs scales or sizes, one value per resized axis (%d)", n->name, na);
        return VCC_ERR_SHAPE;
    }
    const char *policy = vcc_attr_string(n, "keep_aspect_ratio_policy", "stretch");
    int pol = nz >= 0 ? name_index(policy, resize_policies) : 0;
    double keep = pol == 1 ? INFINITY : 0.0; /* not_larger: the smallest ratio; not_smaller: the largest */
    d->rank = r;
    d->mode = name_index(vcc_attr_string(n, "mode", "nearest"), resize_modes);
    d->coord = g->opset < 11 ? VCC_RESIZE_ASYMMETRIC
                             : name_index(vcc_attr_string(n, "coordinate_transformation_mode", "half_pixel"), resize_coords);
    int nm = name_index(vcc_attr_string(n, "nearest_mode", "round_prefer_floor"), resize_nearest);
    if (d->mode < 0 || d->coord < 0 || nm < 0 || pol < 0) {
        vcc_error(ctx, "node '%s' (Resize): unknown mode, coordinate_transformation_mode, nearest_mode or policy",
                  n->name);
        return VCC_ERR_UNSUPPORTED;
    }
    d->cubic_a = -0.75;
    if (g->opset >= 11) {
        d->cubic_a = vcc_attr_float(n, "cubic_coeff_a", -0.75f);
        d->exclude_outside = d->mode != VCC_RESIZE_NEAREST && vcc_attr_int(n, "exclude_outside", 0) != 0;
        d->extrapolation = vcc_attr_float(n, "extrapolation_value", 0.0f);
    }
    d->antialias = g->opset >= 18 && d->mode != VCC_RESIZE_NEAREST && vcc_attr_int(n, "antialias", 0) != 0;
    for (int a = 0; a < r; a++) {
        d->in[a] = d->out[a] = x->dims[a];
        d->scale[a] = 1.0;
    }
    VccStatus st = resize_roi(ctx, n, axes, na, d);
    if (st) return st;
    for (int i = 0; i < na; i++) {
        int a = axes[i];
        double s = ns >= 0 ? (double)sc->floats[i] : (double)sizes[i] / (double)x->dims[a];
        if (!(s > 0.0 && s < 1e9) || (nz >= 0 && sizes[i] < 1)) {
            vcc_error(ctx, "node '%s' (Resize): the %s for axis %d must be positive and scale it at most 1e9 times",
                      n->name, ns >= 0 ? "scale" : "size", a);
            return VCC_ERR_SHAPE;
        }
        d->scale[a] = s;
        if (pol == 1 && s < keep) keep = s;
        if (pol == 2 && s > keep) keep = s;
        d->out[a] = ns >= 0 ? (int64_t)floor(s * (double)x->dims[a]) : sizes[i];
    }
    for (int i = 0; pol && i < na; i++) { /* keep_aspect_ratio_policy: one scale, sizes rounded half up */
        d->scale[axes[i]] = keep;
        d->out[axes[i]] = (int64_t)(keep * (double)x->dims[axes[i]] + 0.5);
    }
    for (int a = 0; a < r; a++) {
        d->length[a] = d->scale[a] * (double)d->in[a];
        d->nearest[a] = g->opset < 11 ? (d->scale[a] < 1.0 ? VCC_RESIZE_CEIL : VCC_RESIZE_FLOOR) : nm;
        if (d->out[a] < 1 || d->out[a] > ((int64_t)1 << 40)) {
            vcc_error(ctx, "node '%s' (Resize): axis %d would have %lld elements", n->name, a, (long long)d->out[a]);
            return VCC_ERR_SHAPE;
        }
        if ((st = resize_unambiguous(ctx, n, d, a, ns >= 0))) return st;
        d->active[a] = !resize_identity(d, a);
    }
    return VCC_OK;
}

/* X (d0, ..., dr-1), e.g. (N, C, T, H, W) -> Y (out0, ..., out(r-1)): floor(d * scale) or the sizes */
static VccStatus resize_out(VccCtx *ctx, const VccGraph *g, const VccNode *n, const VccShape *x, VccShape *y) {
    VccResize d;
    VccStatus st = resize_desc(ctx, g, n, x, &d);
    y->rank = x->rank;
    for (int a = 0; a < y->rank; a++) y->dims[a] = d.out[a];
    return st;
}

static VccStatus resize_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    return forward_shape(ctx, g, k, check, resize_out, true);
}

/* Resize(X) -> ResizeGrad(dY) -> dX, the adjoint of the sampling (torch: upsample_*_backward) */
static VccStatus resize_grad(VccDiff *d, int k) { return grad_by(d, k, VCC_OP_RESIZE_GRAD); }

static void emit_ints8(FILE *f, const int *v, int n) {
    fputc('{', f);
    for (int i = 0; i < n; i++) fprintf(f, i ? ", %d" : "%d", v[i]);
    fputc('}', f);
}

/* v as a C constant expression (math.h's NAN and INFINITY where it is not finite). */
static void emit_double(FILE *f, double v) {
    if (isnan(v)) fputs("NAN", f);
    else if (isinf(v)) fputs(v < 0 ? "-INFINITY" : "INFINITY", f);
    else fprintf(f, "%.17g", v);
}

static void emit_doubles(FILE *f, const double *v, int n) {
    fputc('{', f);
    for (int i = 0; i < n; i++) {
        if (i) fputs(", ", f);
        emit_double(f, v[i]);
    }
    fputc('}', f);
}

/* The VccResize of node k (x: the resized tensor's shape) and a call of kernel fn(rt, &d, a, b). */
static VccStatus emit_resize(VccEmit *e, int k, const VccShape *x, const char *fn) {
    const VccNode *n = &e->g->nodes[k];
    VccResize d;
    VccStatus st = resize_desc(e->ctx, e->g, n, x, &d);
    if (st) return st;
    fprintf(e->f, "    { static const VccResize d = {%d, %d, %d, ", d.rank, d.mode, d.coord);
    emit_ints8(e->f, d.nearest, d.rank);
    fputs(", ", e->f);
    emit_ints8(e->f, d.active, d.rank);
    fputs(", ", e->f);
    emit_i64s(e->f, d.in, d.rank);
    fputs(", ", e->f);
    emit_i64s(e->f, d.out, d.rank);
    fputs(", ", e->f);
    emit_doubles(e->f, d.scale, d.rank);
    fputs(", ", e->f);
    emit_doubles(e->f, d.length, d.rank);
    fprintf(e->f, ", %d, %d, ", d.antialias, d.exclude_outside);
    emit_double(e->f, d.cubic_a);
    fputs(", ", e->f);
    emit_double(e->f, d.extrapolation);
    fputs(", ", e->f);
    emit_doubles(e->f, d.roi_start, d.rank);
    fputs(", ", e->f);
    emit_doubles(e->f, d.roi_end, d.rank);
    fprintf(e->f, "}; %s(rt, &d, %s, %s); }\n", fn, vcc_emit_f32(e, n->in[0]), vcc_emit_f32(e, n->out[0]));
    return VCC_OK;
}

static VccStatus resize_emit(VccEmit *e, int k) {
    return emit_resize(e, k, &e->g->tensors[e->g->nodes[k].in[0]].shape, "resize_forward");
}

const VccOpDef vcc_def_RESIZE = {0, 0, resize_attrs, resize_check_attrs, resize_canon, resize_shape, resize_grad,
                                 resize_emit};

/* dY (Resize's output) -> dX (its input), with the forward node's attributes */
static VccStatus resize_grad_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    return adjoint_shape(ctx, g, k, check, resize_out);
}

static VccStatus resize_grad_emit(VccEmit *e, int k) {
    return emit_resize(e, k, &e->g->tensors[e->g->nodes[k].out[0]].shape, "resize_backward");
}

const VccOpDef vcc_def_RESIZE_GRAD = {0, 0, NULL, NULL, NULL, resize_grad_shape, NULL, resize_grad_emit};

/* ------------------------------------------------------------------ Gather, GatherGrad */

static const VccAttrSpec gather_attrs[] = {{"axis", 1, VCC_OPSET_NOW, VCC_A_INT}, {NULL, 0, 0, 0}};

/* Canonical form of Gather: int32 indices become an int64 constant of their values (the kernels read
 * int64); indices stay an input, a constant uploaded into the arena with the program. */
static VccStatus gather_canon(VccCtx *ctx, VccGraph *g, int k) {
    VccNode *n = &g->nodes[k];
    if (n->nin != 2 || n->in[0] < 0 || n->in[1] < 0 || n->nout != 1 || n->out[0] < 0)
        return vcc_operands_missing(ctx, n);
    vcc_indices_i64(g, k, 1);
    return VCC_OK;
}

/* Gather's geometry for data shape x and indices shape ix (ONNX Gather 1, 11, 13): the axis in [0, r),
 * outer = prod(x[:axis]), len = x[axis], inner = prod(x[axis+1:]), and the output shape
 * x[:axis] + ix + x[axis+1:]. Errors name the node. */
static VccStatus gather_geom(VccCtx *ctx, const VccNode *n, const VccShape *x, const VccShape *ix, int *axis,
                             int64_t *outer, int64_t *len, int64_t *inner, VccShape *y) {
    if (x->rank < 1 || !norm_axis(ctx, n, "axis", vcc_attr_int(n, "axis", 0), x->rank, axis)) {
        if (x->rank < 1) vcc_error(ctx, "node '%s' (%s): data must have rank >= 1", n->name, vcc_node_op(n));
        return VCC_ERR_SHAPE;
    }
    if (x->rank - 1 + ix->rank > VCC_MAX_RANK) {
        vcc_error(ctx, "node '%s' (%s): output rank %d exceeds %d", n->name, vcc_node_op(n), x->rank - 1 + ix->rank,
                  VCC_MAX_RANK);
        return VCC_ERR_SHAPE;
    }
    *outer = *inner = 1;
    y->rank = 0;
    for (int d = 0; d < *axis; d++) *outer *= x->dims[d], y->dims[y->rank++] = x->dims[d];
    for (int d = 0; d < ix->rank; d++) y->dims[y->rank++] = ix->dims[d];
    for (int d = *axis + 1; d < x->rank; d++) *inner *= x->dims[d], y->dims[y->rank++] = x->dims[d];
    *len = x->dims[*axis];
    return VCC_OK;
}

/* The indices of Gather(-Grad) node n: an int64 constant (read while compiling when its values are known:
 * each must lie in [-len, len-1]); indices computed at run time are refused, naming the node. */
static const VccTensor *gather_indices(VccCtx *ctx, const VccGraph *g, const VccNode *n, int64_t len) {
    const VccTensor *ix = data_input(ctx, g, n, 1);
    if (!ix) return NULL;
    if (ix->kind != VCC_T_CONST || ix->dtype != VCC_I64) {
        vcc_error(ctx, "node '%s' (%s): indices '%s' (%s) are %s; vcc gathers with constant int64 or int32 indices",
                  n->name, vcc_node_op(n), ix->name, vcc_dtype_name(ix->dtype),
                  ix->kind != VCC_T_CONST ? "computed at run time" : "of another type");
        return NULL;
    }
    for (size_t i = 0; ix->data && i < ix->data_bytes / 8; i++) {
        int64_t v;
        memcpy(&v, (const unsigned char *)ix->data + 8 * i, 8);
        if (v < -len || v >= len) {
            vcc_error(ctx, "node '%s' (%s): index %lld at position %zu is out of range for an axis of %lld", n->name,
                      vcc_node_op(n), (long long)v, i, (long long)len);
            return NULL;
        }
    }
    return ix;
}

/* Gather(X, indices) -> Y = X[..., indices, ...] along axis (float X; the output's shape by gather_geom) */
static VccStatus gather_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    const VccTensor *x = vcc_need_input(ctx, g, n, 0, VCC_F32);
    const VccTensor *ix = data_input(ctx, g, n, 1);
    int axis;
    int64_t outer, len, inner;
    VccShape y;
    if (!x || !ix || gather_geom(ctx, n, &x->shape, &ix->shape, &axis, &outer, &len, &inner, &y) ||
        !gather_indices(ctx, g, n, len))
        return VCC_ERR_SHAPE;
    return vcc_put_output(ctx, g, n, check, n->out[0], VCC_F32, &y) ? VCC_OK : VCC_ERR_SHAPE;
}

/* Gather(X, I) -> GatherGrad(dY, I) -> dX: zeros, each dY slice added at its index (torch's
 * index_select / gather backward: index_add into zeros, repeated indices summed) */
static VccStatus gather_grad(VccDiff *d, int k) {
    VccNode n = d->g->nodes[k];
    int dx = vcc_diff_new_grad(d, n.in[0]);
    int in[2] = {vcc_diff_dy(d, k, 0), n.in[1]};
    vcc_diff_add_node(d, VCC_OP_GATHER_GRAD, k, "grad", in, 2, &dx, 1);
    vcc_diff_accum(d, n.in[0], dx);
    return VCC_OK;
}

/* The kernel call of Gather (forward) or GatherGrad: x_shape is the data's (dX's) shape. */
static VccStatus gather_emit_call(VccEmit *e, int k, const VccShape *x_shape, const char *fn, int src, int dst) {
    const VccNode *n = &e->g->nodes[k];
    const VccTensor *ix = &e->g->tensors[n->in[1]];
    int axis;
    int64_t outer, len, inner;
    VccShape y;
    VccStatus st = gather_geom(e->ctx, n, x_shape, &ix->shape, &axis, &outer, &len, &inner, &y);
    if (st) return st;
    fprintf(e->f, "    %s(rt, %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", (const int64_t *)(A + %" PRId64 "), %s, %s);\n",
            fn, outer, len, inner, vcc_shape_numel(&ix->shape), ix->offset, vcc_emit_f32(e, src), vcc_emit_f32(e, dst));
    return VCC_OK;
}

static VccStatus gather_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    return gather_emit_call(e, k, &e->g->tensors[n->in[0]].shape, "gather_forward", n->in[0], n->out[0]);
}

const VccOpDef vcc_def_GATHER = {0, 0, gather_attrs, NULL, gather_canon, gather_shape, gather_grad, gather_emit};

/* (dY, indices) -> dX of the forward's data shape (dX's stored shape), with the forward's axis */
static VccStatus gather_grad_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    const VccTensor *dy = vcc_need_input(ctx, g, n, 0, VCC_F32), *ix = data_input(ctx, g, n, 1);
    if (!dy || !ix || n->nout != 1 || n->out[0] < 0) return vcc_operands_missing(ctx, n);
    const VccTensor *dx = &g->tensors[n->out[0]];
    int axis;
    int64_t outer, len, inner;
    VccShape want;
    if (gather_geom(ctx, n, &dx->shape, &ix->shape, &axis, &outer, &len, &inner, &want) ||
        !gather_indices(ctx, g, n, len))
        return VCC_ERR_SHAPE;
    if (dx->dtype != VCC_F32 || !vcc_same_shape(&want, &dy->shape)) return vcc_shape_mismatch(ctx, n);
    return vcc_put_output(ctx, g, n, check, n->out[0], VCC_F32, &dx->shape) ? VCC_OK : VCC_ERR_SHAPE;
}

static VccStatus gather_grad_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    return gather_emit_call(e, k, &e->g->tensors[n->out[0]].shape, "gather_backward", n->in[0], n->out[0]);
}

const VccOpDef vcc_def_GATHER_GRAD = {0, 0, NULL, NULL, NULL, gather_grad_shape, NULL, gather_grad_emit};
