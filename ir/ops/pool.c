/*
 * pool.c — the pool family: MaxPool, AveragePool, GlobalMaxPool, GlobalAveragePool, and their backward ops
 * MaxPoolGrad, AveragePoolGrad, GlobalAveragePoolGrad.
 *
 * Kernels: runtime/{elem,proto,cpu,cuda}/pool.* (hand kernels on both targets, one per-window body).
 * Sources: ONNX Operators "MaxPool" (opsets 1; 8: storage_order and the Indices output; 10: ceil_mode and
 * dilations; 11, 12: no change vcc sees), "AveragePool" (1; 7: count_include_pad; 10: ceil_mode; 11;
 * 19: dilations), "GlobalMaxPool" and "GlobalAveragePool" (1); PyTorch max_pool{1,2,3}d and
 * avg_pool{1,2,3}d for what ONNX leaves open. The window geometry is a convolution's
 * (vcc_conv_params with a weight of the kernel's shape: strides, dilations, explicit or auto_pad pads),
 * then ceil_mode: out = ceil((in + pads - dilation*(kernel-1) - 1) / stride) + 1, less one when that last
 * window would start in the end padding ((out-1)*stride >= in + pad_begin), as PyTorch and ONNX. ceil_mode
 * with auto_pad is refused (ONNX's reference refuses it; the spec's output size ignores it). Every window
 * must reach the input (a window wholly in the padding has no max, and no mean without count_include_pad;
 * PyTorch refuses such pads too). AveragePool's divisor: the window's taps in the input, or with
 * count_include_pad those inside the declared pads [-pad_begin, in + pad_end) (a ceil_mode window past the
 * end padding does not count what lies past it), as torch avg_pool and the ONNX tests.
 *
 * Gradients (PyTorch autograd): AveragePool -> AveragePoolGrad(dY) -> dX (dY / divisor into every tap);
 * MaxPool and GlobalMaxPool -> MaxPoolGrad(X, dY) -> (dX, argmax workspace): dY goes to each window's
 * argmax, the first max in window order (a NaN wins, as PyTorch). The argmax is found again from the
 * saved input X in backward rather than saved as int indices by the forward: X is usually alive in
 * backward anyway (a Relu output, read by ReluGrad; a conv's input), so saving indices would add
 * prod(out) ints live from forward to backward, while the recomputation costs one more pass over the
 * windows. Where nothing else keeps X (S3D's branch pools read a Concat output), keeping it costs as much
 * as int32 indices for a stride-1 pool and more for a strided one (prod(in) floats against prod(out)
 * ints). The argmax lives in a workspace (int32 per output) for the backward node only, and dX is a
 * gather per input element (fixed order, no atomics on CUDA).
 */
#include "ops.h"

#include <inttypes.h>
#include <string.h>

/* ------------------------------------------------------------------ window geometry */

/* Pooling geometry: a convolution's (nsp, N, C, in, out, kernel, stride, dilation, pads) and the divisor
 * rule of an average. */
typedef struct {
    VccConvParams w;
    int count_include_pad;
} PoolGeom;

static const char *const pool_auto_pads[] = {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID", NULL};

/* Whether every window of dim i reaches the input (its taps hit [0, in)). */
static bool windows_reach_input(const VccConvParams *p, int i) {
    int64_t in = p->in[i], s = p->stride[i], d = p->dilation[i], k = p->kernel[i], pb = p->pad_begin[i];
    if ((p->out[i] - 1) * s - pb >= in) return false; /* the last window starts past the input */
    if (in >= d) return (k - 1) * d >= pb;             /* the first window's last tap reaches 0 */
    /* taps are farther apart than the input is long: each window starting before 0 has its own test */
    for (int64_t o = 0; o < p->out[i] && o * s < pb; o++) {
        int64_t start = o * s - pb, j = (-start + d - 1) / d;
        if (j >= k || start + j * d >= in) return false;
    }
    return true;
}

/* The geometry of pool node n (MaxPool, AveragePool, GlobalMaxPool and the backward ops, which carry the
 * forward node's attributes) over input shape x. Errors name the node. */
static VccStatus pool_geometry(VccCtx *ctx, const VccNode *n, const VccShape *x, PoolGeom *g) {
    const char *op = vcc_node_op(n);
    memset(g, 0, sizeof *g);
    if (x->rank < 3 || x->rank > 5) {
        vcc_error(ctx, "node '%s' (%s): input has rank %d; vcc supports 1-3 spatial dims (rank 3-5)", n->name, op,
                  x->rank);
        return VCC_ERR_UNSUPPORTED;
    }
    int nsp = x->rank - 2;
    VccShape w = {x->rank, {x->dims[1], x->dims[1]}};
    if (n->op == VCC_OP_GLOBALMAXPOOL) {
        for (int i = 0; i < nsp; i++) w.dims[2 + i] = x->dims[2 + i];
    } else {
        int64_t k[3];
        int nk = vcc_attr_ints(n, "kernel_shape", k, 3);
        if (nk != nsp) {
            vcc_error(ctx, "node '%s' (%s): kernel_shape has %d values, the input's %d spatial dims need %d", n->name,
                      op, nk < 0 ? 0 : nk, nsp, nsp);
            return VCC_ERR_SHAPE;
        }
        for (int i = 0; i < nsp; i++) w.dims[2 + i] = k[i];
    }
    VccStatus st = vcc_conv_params(ctx, n, x, &w, &g->w);
    if (st) return st;
    VccConvParams *p = &g->w;
    for (int i = 0; i < nsp && vcc_attr_int(n, "ceil_mode", 0); i++) {
        int64_t span = p->in[i] + p->pad_begin[i] + p->pad_end[i] - p->dilation[i] * (p->kernel[i] - 1) - 1;
        p->out[i] = (span + p->stride[i] - 1) / p->stride[i] + 1;
        if ((p->out[i] - 1) * p->stride[i] >= p->in[i] + p->pad_begin[i]) p->out[i]--;
    }
    g->count_include_pad = n->op == VCC_OP_AVGPOOL || n->op == VCC_OP_AVGPOOL_GRAD
                               ? (int)vcc_attr_int(n, "count_include_pad", 0) : 0;
    for (int i = 0; i < nsp; i++)
        if (!g->count_include_pad && !windows_reach_input(p, i)) {
            vcc_error(ctx, "node '%s' (%s): a pooling window of spatial dim %d lies wholly in the padding (pads %lld "
                      "and %lld, input %lld); its %s is not defined", n->name, op, i, (long long)p->pad_begin[i],
                      (long long)p->pad_end[i], (long long)p->in[i],
                      n->op == VCC_OP_AVGPOOL || n->op == VCC_OP_AVGPOOL_GRAD ? "mean" : "max");
            return VCC_ERR_UNSUPPORTED;
        }
    return VCC_OK;
}

/* The pooled shape (N, C, out...) of geometry g. */
static VccShape pooled_shape(const PoolGeom *g) {
    VccShape s = {2 + g->w.nsp, {g->w.N, g->w.C}};
    for (int i = 0; i < g->w.nsp; i++) s.dims[2 + i] = g->w.out[i];
    return s;
}

static void emit_ints3(FILE *f, const int64_t *v, int n, int64_t fill) {
    fprintf(f, "{%" PRId64 ", %" PRId64 ", %" PRId64 "}, ", n > 0 ? v[0] : fill, n > 1 ? v[1] : fill,
            n > 2 ? v[2] : fill);
}

/* Open a block holding the VccPoolDesc `d` of geometry g (runtime/elem/pool.h); the caller writes the
 * kernel call and closes the block. */
static void emit_desc(VccEmit *e, const PoolGeom *g) {
    const VccConvParams *p = &g->w;
    fprintf(e->f, "    { static const VccPoolDesc d = {%d, %d, %" PRId64 ", ", p->nsp, g->count_include_pad, p->N * p->C);
    emit_ints3(e->f, p->in, p->nsp, 1);
    emit_ints3(e->f, p->out, p->nsp, 1);
    emit_ints3(e->f, p->kernel, p->nsp, 1);
    emit_ints3(e->f, p->stride, p->nsp, 1);
    emit_ints3(e->f, p->dilation, p->nsp, 1);
    emit_ints3(e->f, p->pad_begin, p->nsp, 0);
    fprintf(e->f, "{%" PRId64 ", %" PRId64 ", %" PRId64 "}};\n      ", p->pad_end[0], p->nsp > 1 ? p->pad_end[1] : 0,
            p->nsp > 2 ? p->pad_end[2] : 0);
}

/* ------------------------------------------------------------------ MaxPool, AveragePool */

static const VccAttrSpec maxpool_attrs[] = {
    {"auto_pad", 1, VCC_OPSET_NOW, VCC_A_STRING},   {"kernel_shape", 1, VCC_OPSET_NOW, VCC_A_INTS},
    {"pads", 1, VCC_OPSET_NOW, VCC_A_INTS},         {"strides", 1, VCC_OPSET_NOW, VCC_A_INTS},
    {"storage_order", 8, VCC_OPSET_NOW, VCC_A_INT}, {"ceil_mode", 10, VCC_OPSET_NOW, VCC_A_INT},
    {"dilations", 10, VCC_OPSET_NOW, VCC_A_INTS},   {NULL, 0, 0, 0},
};

static const VccAttrSpec avgpool_attrs[] = {
    {"auto_pad", 1, VCC_OPSET_NOW, VCC_A_STRING},       {"kernel_shape", 1, VCC_OPSET_NOW, VCC_A_INTS},
    {"pads", 1, VCC_OPSET_NOW, VCC_A_INTS},             {"strides", 1, VCC_OPSET_NOW, VCC_A_INTS},
    {"count_include_pad", 7, VCC_OPSET_NOW, VCC_A_INT}, {"ceil_mode", 10, VCC_OPSET_NOW, VCC_A_INT},
    {"dilations", 19, VCC_OPSET_NOW, VCC_A_INTS},       {NULL, 0, 0, 0},
};

/* An INTS attribute a of n has count values (count < 0: any number from 1 to 3) of at least lo. */
static void check_ints(VccCtx *ctx, const VccNode *n, const char *a, int count, int64_t lo) {
    int64_t v[6];
    int c = vcc_attr_ints(n, a, v, 6);
    if (c < 0) return;
    if (count < 0 ? c < 1 || c > 3 : c != count) {
        char why[64];
        if (count < 0) snprintf(why, sizeof why, "has %d values; vcc pools over 1-3 spatial dims", c);
        else snprintf(why, sizeof why, "has %d values, kernel_shape needs %d", c, count);
        vcc_op_attr_problem(ctx, n, "%s attribute '%s'", a, why);
        return;
    }
    for (int i = 0; i < c; i++)
        if (v[i] < lo) {
            vcc_op_attr_problem(ctx, n, "%s attribute '%s'", a, lo ? "values must be at least 1" : "values must be >= 0");
            return;
        }
}

/* A 0/1 INT attribute. */
static void check_flag(VccCtx *ctx, const VccNode *n, const char *a) {
    int64_t v = vcc_attr_int(n, a, 0);
    if (v != 0 && v != 1) vcc_op_attr_problem(ctx, n, "%s attribute '%s'", a, "must be 0 or 1");
}

static void pool_check_attrs(VccCtx *ctx, const VccGraph *g, const VccNode *n) {
    const char *ap = vcc_attr_string(n, "auto_pad", "NOTSET");
    bool known = false;
    for (int i = 0; pool_auto_pads[i]; i++) known |= strcmp(ap, pool_auto_pads[i]) == 0;
    if (!known)
        vcc_op_attr_problem(ctx, n, "%s attribute '%s'", "auto_pad", "not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
    int64_t k[3];
    int nk = vcc_attr_ints(n, "kernel_shape", k, 3);
    if (nk < 0) vcc_op_attr_problem(ctx, n, "%s attribute '%s'", "kernel_shape", "required, absent");
    check_ints(ctx, n, "kernel_shape", -1, 1);
    if (nk >= 1 && nk <= 3) {
        check_ints(ctx, n, "strides", nk, 1);
        check_ints(ctx, n, "dilations", nk, 1);
        check_ints(ctx, n, "pads", 2 * nk, 0);
    }
    check_flag(ctx, n, "ceil_mode");
    check_flag(ctx, n, "storage_order");
    check_flag(ctx, n, "count_include_pad");
    if (vcc_attr_int(n, "ceil_mode", 0) == 1 && known && strcmp(ap, "NOTSET") != 0)
        vcc_op_attr_problem(ctx, n, "%s attribute '%s'", "ceil_mode=1 with auto_pad",
                            "the output size of the pair is not pinned down by ONNX");
    if (n->op == VCC_OP_MAXPOOL && g->opset < 8 && n->nout > 1 && n->out[1] >= 0)
        vcc_op_attr_problem(ctx, n, "%s %s", "output Indices", "exists from opset 8");
}

/* X (N, C, D...) -> Y (N, C, O...) [, Indices int64 (N, C, O...), MaxPool]; GlobalMaxPool: O = 1... */
static VccStatus pool_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    /* MaxPool also takes other number types (typed kernels; ONNX MaxPool-12+: int8, uint8, double) */
    const VccTensor *x = n->op == VCC_OP_MAXPOOL ? vcc_need_numeric(ctx, g, n, 0) : vcc_need_input(ctx, g, n, 0, VCC_F32);
    if (!x) return VCC_ERR_SHAPE;
    if (x->dtype != VCC_F32 && n->nout > 1 && n->out[1] >= 0) {
        vcc_error(ctx, "node '%s' (%s): the Indices output is supported for float32 data only, X is %s", n->name,
                  vcc_node_op(n), vcc_dtype_name(x->dtype));
        return VCC_ERR_UNSUPPORTED;
    }
    PoolGeom pg;
    VccStatus st = pool_geometry(ctx, n, &x->shape, &pg);
    if (st) return st;
    if (n->op != VCC_OP_AVGPOOL) {
        int64_t S = 1;
        for (int i = 2; i < x->shape.rank; i++) S *= x->shape.dims[i];
        if (S > INT32_MAX) {
            vcc_error(ctx, "node '%s' (%s): a spatial plane of %lld elements is larger than vcc's max pooling "
                      "supports (2^31-1)", n->name, vcc_node_op(n), (long long)S);
            return VCC_ERR_UNSUPPORTED;
        }
    }
    VccShape y = pooled_shape(&pg);
    int nout = n->op == VCC_OP_MAXPOOL ? 2 : 1;
    if (n->nout < 1 || n->nout > nout || n->out[0] < 0) {
        vcc_error(ctx, "node '%s' (%s): expected %s", n->name, vcc_node_op(n),
                  nout == 2 ? "the output Y and at most Indices" : "one output");
        return VCC_ERR_SHAPE;
    }
    if (!vcc_put_output(ctx, g, n, check, n->out[0], x->dtype, &y)) return VCC_ERR_SHAPE;
    if (n->nout > 1 && !vcc_put_output(ctx, g, n, check, n->out[1], VCC_I64, &y)) return VCC_ERR_SHAPE;
    return VCC_OK;
}

/* MaxPool, GlobalMaxPool -> MaxPoolGrad(X, dY) -> (dX, argmax workspace); a GlobalMaxPool's window is
 * its input's spatial extent (kernel_shape of the backward node). */
static VccStatus maxpool_grad(VccDiff *d, int k) {
    VccGraph *g = d->g;
    int x = g->nodes[k].in[0], y = g->nodes[k].out[0];
    int dx = vcc_diff_new_grad(d, x);
    VccShape ws = {1, {vcc_shape_numel(&g->tensors[y].shape)}};
    int out[2] = {dx, vcc_tensor_add_unique(g, VCC_F32, &ws, VCC_T_WORKSPACE, "%s.argmax", g->nodes[k].name)};
    vcc_diff_grow(d);
    int in[2] = {x, vcc_diff_dy(d, k, 0)};
    bool global = g->nodes[k].op == VCC_OP_GLOBALMAXPOOL;
    int kk = vcc_diff_add_node(d, VCC_OP_MAXPOOL_GRAD, k, "grad", in, 2, out, 2);
    if (global) {
        const VccShape *xs = &g->tensors[x].shape;
        vcc_attr_set_ints(&g->nodes[kk], "kernel_shape", xs->dims + 2, xs->rank - 2);
    }
    vcc_diff_accum(d, x, dx);
    return VCC_OK;
}

/* AveragePool -> AveragePoolGrad(dY) -> dX; GlobalAveragePool -> GlobalAveragePoolGrad(dY) -> dX */
static VccStatus avgpool_grad(VccDiff *d, int k) {
    int x = d->g->nodes[k].in[0], dy = vcc_diff_dy(d, k, 0);
    int dx = vcc_diff_new_grad(d, x);
    VccOp op = d->g->nodes[k].op == VCC_OP_AVGPOOL ? VCC_OP_AVGPOOL_GRAD : VCC_OP_GLOBALAVGPOOL_GRAD;
    vcc_diff_add_node(d, op, k, "grad", &dy, 1, &dx, 1);
    vcc_diff_accum(d, x, dx);
    return VCC_OK;
}

static VccStatus pool_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    PoolGeom pg;
    VccStatus st = pool_geometry(e->ctx, n, &e->g->tensors[n->in[0]].shape, &pg);
    if (st) return st;
    emit_desc(e, &pg);
    if (vcc_node_typed(e->g, n)) {
        fprintf(e->f, "typed_maxpool_forward(rt, %s, &d, %s, %s); }\n", vcc_emit_et(e->g->tensors[n->in[0]].dtype),
                vcc_emit_ptr(e, n->in[0]), vcc_emit_ptr(e, n->out[0]));
        return VCC_OK;
    }
    if (n->op == VCC_OP_AVGPOOL) {
        fprintf(e->f, "avgpool_forward(rt, &d, %s, %s); }\n", vcc_emit_f32(e, n->in[0]), vcc_emit_f32(e, n->out[0]));
        return VCC_OK;
    }
    char idx[48] = "NULL";
    if (n->nout > 1 && n->out[1] >= 0) snprintf(idx, sizeof idx, "(int64_t *)(A + %" PRId64 ")", e->g->tensors[n->out[1]].offset);
    fprintf(e->f, "maxpool_forward(rt, &d, %s, %s, %s, %d); }\n", vcc_emit_f32(e, n->in[0]),
            vcc_emit_f32(e, n->out[0]), idx, (int)vcc_attr_int(n, "storage_order", 0));
    return VCC_OK;
}

const VccOpDef vcc_def_MAXPOOL = {VCC_OPF_TYPED, 0, maxpool_attrs, pool_check_attrs, NULL, pool_shape, maxpool_grad, pool_emit};
const VccOpDef vcc_def_AVGPOOL = {0, 0, avgpool_attrs, pool_check_attrs, NULL, pool_shape, avgpool_grad, pool_emit};
/* GlobalMaxPool: a MaxPool whose window is the input's spatial extent (ONNX GlobalMaxPool 1; torch
 * adaptive_max_pool{1,2,3}d(x, 1), which exports to it) */
const VccOpDef vcc_def_GLOBALMAXPOOL = {0, 0, NULL, NULL, NULL, pool_shape, maxpool_grad, pool_emit};

/* ------------------------------------------------------------------ MaxPoolGrad, AveragePoolGrad */

/* MaxPoolGrad (X, dY) -> (dX, argmax ws of prod(dY) words); AveragePoolGrad (dY) -> dX. The geometry is the
 * forward node's over X's shape (dX's). */
static VccStatus pool_grad_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    (void)check;
    const VccNode *n = &g->nodes[k];
    bool max = n->op == VCC_OP_MAXPOOL_GRAD;
    const VccTensor *dy = vcc_need_input(ctx, g, n, max ? 1 : 0, VCC_F32);
    if (!dy || n->nout != (max ? 2 : 1) || n->out[0] < 0 || (max && n->out[1] < 0)) return vcc_operands_missing(ctx, n);
    const VccTensor *dx = &g->tensors[n->out[0]];
    if (max) {
        const VccTensor *x = vcc_need_input(ctx, g, n, 0, VCC_F32);
        if (!x) return VCC_ERR_SHAPE;
        if (!vcc_put_output(ctx, g, n, true, n->out[0], VCC_F32, &x->shape)) return VCC_ERR_SHAPE;
    }
    PoolGeom pg;
    if (dx->dtype != VCC_F32 || pool_geometry(ctx, n, &dx->shape, &pg)) return vcc_shape_mismatch(ctx, n);
    VccShape y = pooled_shape(&pg);
    if (!vcc_same_shape(&dy->shape, &y)) return vcc_shape_mismatch(ctx, n);
    VccShape ws = {1, {vcc_shape_numel(&y)}};
    return !max || vcc_put_output(ctx, g, n, true, n->out[1], VCC_F32, &ws) ? VCC_OK : VCC_ERR_SHAPE;
}

static VccStatus pool_grad_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    PoolGeom pg;
    VccStatus st = pool_geometry(e->ctx, n, &e->g->tensors[n->out[0]].shape, &pg);
    if (st) return st;
    emit_desc(e, &pg);
    if (n->op == VCC_OP_AVGPOOL_GRAD)
        fprintf(e->f, "avgpool_backward(rt, &d, %s, %s); }\n", vcc_emit_f32(e, n->in[0]), vcc_emit_f32(e, n->out[0]));
    else
        fprintf(e->f, "maxpool_backward(rt, &d, %s, %s, %s, (int32_t *)(A + %" PRId64 ")); }\n",
                vcc_emit_f32(e, n->in[0]), vcc_emit_f32(e, n->in[1]), vcc_emit_f32(e, n->out[0]),
                e->g->tensors[n->out[1]].offset);
    return VCC_OK;
}

const VccOpDef vcc_def_MAXPOOL_GRAD = {VCC_OPF_WORKSPACE, 1, NULL, NULL, NULL, pool_grad_shape, NULL, pool_grad_emit};
const VccOpDef vcc_def_AVGPOOL_GRAD = {0, 0, NULL, NULL, NULL, pool_grad_shape, NULL, pool_grad_emit};

/* ------------------------------------------------------------------ GlobalAveragePool */

/* X (N, C, S...) -> Y (N, C, 1...) */
static VccStatus gap_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    const VccTensor *x = vcc_need_input(ctx, g, n, 0, VCC_F32);
    if (!x) return VCC_ERR_SHAPE;
    if (x->shape.rank < 3) {
        vcc_error(ctx, "node '%s' (GlobalAveragePool): input rank %d < 3", n->name, x->shape.rank);
        return VCC_ERR_SHAPE;
    }
    VccShape out = x->shape;
    for (int i = 2; i < out.rank; i++) out.dims[i] = 1;
    return vcc_put_output(ctx, g, n, check, n->out[0], VCC_F32, &out) ? VCC_OK : VCC_ERR_SHAPE;
}

static VccStatus gap_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    int64_t N, C, S;
    vcc_emit_ncs(e, n->in[0], &N, &C, &S);
    fprintf(e->f, "    global_avgpool_forward(rt, %" PRId64 ", %" PRId64 ", %s, %s);\n", N * C, S,
            vcc_emit_f32(e, n->in[0]), vcc_emit_f32(e, n->out[0]));
    return VCC_OK;
}

const VccOpDef vcc_def_GLOBALAVGPOOL = {0, 0, NULL, NULL, NULL, gap_shape, avgpool_grad, gap_emit};

/* ------------------------------------------------------------------ GlobalAveragePoolGrad */

/* dY (N, C, 1, ...) -> dX (N, C, S...) */
static VccStatus gap_grad_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    const VccTensor *a = vcc_need_input(ctx, g, n, 0, VCC_F32);
    if (!a || n->nout != 1 || n->out[0] < 0) return vcc_operands_missing(ctx, n);
    VccShape s = g->tensors[n->out[0]].shape;
    for (int i = 2; i < s.rank; i++) s.dims[i] = 1;
    if (g->tensors[n->out[0]].dtype != VCC_F32 || s.rank < 3 || !vcc_same_shape(&a->shape, &s))
        return vcc_shape_mismatch(ctx, n);
    return VCC_OK;
}

static VccStatus gap_grad_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    int64_t N, C, S;
    vcc_emit_ncs(e, n->out[0], &N, &C, &S);
    fprintf(e->f, "    global_avgpool_backward(rt, %" PRId64 ", %" PRId64 ", %s, %s);\n", N * C, S,
            vcc_emit_f32(e, n->in[0]), vcc_emit_f32(e, n->out[0]));
    return VCC_OK;
}

const VccOpDef vcc_def_GLOBALAVGPOOL_GRAD = {0, 0, NULL, NULL, NULL, gap_grad_shape, NULL, gap_grad_emit};
