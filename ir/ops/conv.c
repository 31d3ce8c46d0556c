/*
 * conv.c — the conv family: Conv and ConvTranspose, and their backward ops ConvGradData, ConvGradFilter,
 * ConvTransposeGradData and ConvTransposeGradFilter.
 *
 * Kernels: runtime/{elem,proto,cpu,cuda}/conv.* (im2col + GEMM on the CPU; cuDNN on CUDA, im2col +
 * cuBLAS there for pads cuDNN does not take). Every op computes with one convolution geometry
 * (VccConvParams, one runtime descriptor): Conv's own, and for ConvTranspose the Conv whose adjoint it is
 * (its Y in the role of that Conv's input, its X in the role of the output; same weight). Then
 *   Conv                     y  = conv(x, w) + b                conv_forward
 *   ConvGradData             dx = conv^T(dy, w)                 conv_backward_data
 *   ConvGradFilter           dw, db                             conv_backward_filter
 *   ConvTranspose            y  = conv^T(x, w) + b              conv_transpose_forward
 *   ConvTransposeGradData    dx = conv(dy, w)                   conv_forward, no bias
 *   ConvTransposeGradFilter  dw = conv's filter gradient (input dy, output gradient x), db = sum of dy
 *                                                               conv_transpose_backward_filter
 * so the transposed op reuses the Conv kernels. Every op's workspace is the im2col buffer of its
 * geometry for a chunk of output positions that fits --workspace-limit (vcc_conv_ws_bytes): the kernels
 * unfold, multiply and fold back one chunk at a time. With --cpu-conv dnnl the
 * ops oneDNN computes (all but the GradFilter ops) get at least the bytes of its blocked copies where
 * those fit the limit (vcc_conv_dnnl_ws_bytes).
 * Sources: ONNX Operators "Conv" (opsets 1 and 11, no semantic change through 22):
 *   out = floor((in + pad_begin + pad_end - dilation*(kernel-1) - 1) / stride) + 1,
 * auto_pad SAME_UPPER/SAME_LOWER: out = ceil(in / stride), the odd pad at the end (UPPER) or begin (LOWER);
 * ONNX Operators "ConvTranspose" (opsets 1 and 11; conv_transpose_geometry gives the output size and
 * pads); gradients as PyTorch's convolution_backward.
 */
#include "ops.h"

#include "../../runtime/cpu/conv_rules.h" /* the oneDNN path's slab, live-tap and Winograd rules */

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define VCC_CONV_ATTR_MAX (((int64_t)1 << 31) - 1) /* bound on sizes, strides, dilations, pads: no overflow below */

/* ONNX: pads must not be used together with auto_pad (all-zero pads are tolerated). */
static bool has_nonzero_pads(const VccNode *node) {
    const VccAttr *a = vcc_attr_get(node, "pads");
    for (int i = 0; a && a->type == VCC_A_INTS && i < a->n; i++)
        if (a->ints[i]) return true;
    return false;
}

/* An optional INTS attribute of want values into v (dflt where it is absent). */
static VccStatus attr_n(VccCtx *ctx, const VccNode *node, const char *name, int want, int64_t *v, int64_t dflt) {
    int64_t tmp[6];
    int cnt = vcc_attr_ints(node, name, tmp, 6);
    for (int i = 0; i < want; i++) v[i] = cnt == want ? tmp[i] : dflt;
    if (cnt < 0 || cnt == want) return VCC_OK;
    vcc_error(ctx, "node '%s' (%s): %s has %d values, expected %d", node->name, vcc_node_op(node), name, cnt, want);
    return VCC_ERR_SHAPE;
}

/* What Conv and ConvTranspose read alike: 1-3 spatial dims (rank 3-5), the weight's rank, group and the
 * channels (Conv: W (K, C/group, ...); transpose: W (C, K/group, ...), C = X's channels, and p gets the
 * transposed geometry's C = K and K = C), the kernel (the weight's spatial dims; kernel_shape, when
 * given, must agree), strides, dilations, and auto_pad (one of the four values; explicit pads only with
 * NOTSET). x's spatial sizes are bounded like the rest. */
static VccStatus conv_common(VccCtx *ctx, const VccNode *node, const VccShape *x, const VccShape *w, bool transpose,
                             VccConvParams *p, const char **auto_pad) {
    memset(p, 0, sizeof *p);
    const char *op = vcc_node_op(node);
    if (x->rank < 3 || x->rank > 5) {
        vcc_error(ctx, "node '%s' (%s): input has rank %d; vcc supports 1-3 spatial dims (rank 3-5)", node->name,
                  op, x->rank);
        return VCC_ERR_UNSUPPORTED;
    }
    if (w->rank != x->rank) {
        vcc_error(ctx, "node '%s' (%s): weight rank %d differs from input rank %d", node->name, op, w->rank,
                  x->rank);
        return VCC_ERR_SHAPE;
    }
    int n = x->rank - 2;
    p->nsp = n;
    p->N = x->dims[0];
    p->group = vcc_attr_int(node, "group", 1);
    int64_t cin = x->dims[1], g = p->group;
    if (g < 1 || cin % g ||
        (transpose ? w->dims[0] != cin || !vcc_mul_i64(w->dims[1], g, &p->C)
                   : w->dims[0] % g || w->dims[1] != cin / g)) {
        vcc_error(ctx, "node '%s' (%s): group=%lld does not fit input channels %lld and weight (%lld, %lld, ...)",
                  node->name, op, (long long)g, (long long)cin, (long long)w->dims[0], (long long)w->dims[1]);
        return VCC_ERR_SHAPE;
    }
    if (transpose) {
        p->K = cin;
    } else {
        p->C = cin;
        p->K = w->dims[0];
    }
    int64_t v[3];
    VccStatus st = attr_n(ctx, node, "kernel_shape", n, v, 0);
    if (st) return st;
    bool have_ks = vcc_attr_ints(node, "kernel_shape", v, 0) >= 0;
    for (int i = 0; i < n; i++) {
        p->kernel[i] = w->dims[2 + i];
        if (have_ks && v[i] != p->kernel[i]) {
            vcc_error(ctx, "node '%s' (%s): kernel_shape[%d]=%lld but the weight has %lld", node->name, op, i,
                      (long long)v[i], (long long)p->kernel[i]);
            return VCC_ERR_SHAPE;
        }
    }
    if ((st = attr_n(ctx, node, "strides", n, p->stride, 1)) ||
        (st = attr_n(ctx, node, "dilations", n, p->dilation, 1)))
        return st;
    for (int i = 0; i < n; i++)
        if (p->stride[i] < 1 || p->dilation[i] < 1 || p->kernel[i] < 1 || p->stride[i] > VCC_CONV_ATTR_MAX ||
            p->dilation[i] > VCC_CONV_ATTR_MAX || p->kernel[i] > VCC_CONV_ATTR_MAX ||
            x->dims[2 + i] > VCC_CONV_ATTR_MAX) {
            vcc_error(ctx, "node '%s' (%s): strides, dilations, kernel and input sizes must be from 1 to 2^31-1",
                      node->name, op);
            return VCC_ERR_SHAPE;
        }
    *auto_pad = vcc_attr_string(node, "auto_pad", "NOTSET");
    if (strcmp(*auto_pad, "NOTSET") != 0 && has_nonzero_pads(node)) {
        vcc_error(ctx, "node '%s' (%s): auto_pad=%s and explicit pads are given together", node->name, op, *auto_pad);
        return VCC_ERR_SHAPE;
    }
    if (strcmp(*auto_pad, "NOTSET") && strcmp(*auto_pad, "VALID") && strcmp(*auto_pad, "SAME_UPPER") &&
        strcmp(*auto_pad, "SAME_LOWER")) {
        vcc_error(ctx, "node '%s' (%s): unknown auto_pad '%s'", node->name, op, *auto_pad);
        return VCC_ERR_SHAPE;
    }
    return VCC_OK;
}

/* The explicit pads attribute (auto_pad NOTSET) into begin/end (0 where absent): 2n values from 0 to 2^31-1. */
static VccStatus explicit_pads(VccCtx *ctx, const VccNode *node, int n, int64_t *begin, int64_t *end) {
    int64_t v[6];
    VccStatus st = attr_n(ctx, node, "pads", 2 * n, v, 0);
    if (st) return st;
    for (int i = 0; i < n; i++) {
        begin[i] = v[i];
        end[i] = v[n + i];
        if (v[i] < 0 || v[n + i] < 0 || v[i] > VCC_CONV_ATTR_MAX || v[n + i] > VCC_CONV_ATTR_MAX) {
            vcc_error(ctx, "node '%s' (%s): pads must be from 0 to 2^31-1", node->name, vcc_node_op(node));
            return VCC_ERR_SHAPE;
        }
    }
    return VCC_OK;
}

/* Conv's geometry (ONNX Operators "Conv"). */
static VccStatus conv_geometry(VccCtx *ctx, const VccNode *node, const VccShape *x, const VccShape *w,
                               VccConvParams *p) {
    const char *auto_pad, *op = vcc_node_op(node);
    VccStatus st = conv_common(ctx, node, x, w, false, p, &auto_pad);
    if (st) return st;
    int n = p->nsp;
    for (int i = 0; i < n; i++) p->in[i] = x->dims[2 + i];
    if (strcmp(auto_pad, "NOTSET") == 0) {
        if ((st = explicit_pads(ctx, node, n, p->pad_begin, p->pad_end))) return st;
    } else if (strncmp(auto_pad, "SAME_", 5) == 0) {
        for (int i = 0; i < n; i++) {
            int64_t out = (p->in[i] + p->stride[i] - 1) / p->stride[i];
            int64_t total = (out - 1) * p->stride[i] + (p->kernel[i] - 1) * p->dilation[i] + 1 - p->in[i];
            if (total < 0) total = 0;
            int64_t small = total / 2, big = total - small;
            p->pad_begin[i] = auto_pad[5] == 'U' ? small : big;
            p->pad_end[i] = auto_pad[5] == 'U' ? big : small;
        }
    } /* VALID: all pads zero */
    /* a pooling window in ceil_mode (PyTorch, ONNX) may end up to stride-1 past the padded input */
    bool ceil = vcc_attr_int(node, "ceil_mode", 0) != 0;
    for (int i = 0; i < n; i++) {
        int64_t span = p->in[i] + p->pad_begin[i] + p->pad_end[i] - p->dilation[i] * (p->kernel[i] - 1) - 1;
        if (span + (ceil ? p->stride[i] - 1 : 0) < 0) {
            vcc_error(ctx, "node '%s' (%s): kernel extent exceeds the padded input in spatial dim %d", node->name,
                      op, i);
            return VCC_ERR_SHAPE;
        }
        p->out[i] = span < 0 ? 1 : span / p->stride[i] + 1; /* ceil_mode: the pool family rounds up */
    }
    return VCC_OK;
}

/* floor(a / 2), also for negative a (a total padding below zero: output_shape past the input's reach). */
static int64_t floor_half(int64_t a) { return a >= 0 ? a / 2 : -((1 - a) / 2); }

/* ConvTranspose's geometry as the Conv whose adjoint it is (ONNX Operators "ConvTranspose"):
 * X (N, C, D...), W (C, K/group, k...) -> Y (N, K, O...) with, per spatial dim,
 *   O = stride*(D-1) + output_padding + dilation*(k-1) + 1 - pad_begin - pad_end;
 * output_shape, when given, is O and the pads follow from it; auto_pad SAME_* makes O = D*stride. The
 * total padding splits, as in onnx's reference implementation and onnxruntime, with floor(total/2) at
 * the begin for SAME_UPPER and at the end otherwise (NOTSET, VALID, SAME_LOWER); a negative total (an
 * output larger than the input reaches) leaves output elements that nothing reaches. Opset 1 states the
 * same rule in words (the odd pad at the end for SAME_UPPER); its pads formula, which says the reverse,
 * was corrected in opset 11, and onnxruntime follows the words in both opsets, as vcc does.
 * The Conv: input Y (N, K, O...), weight W read as (C, K/group, k...), output X (N, C, D...); same
 * strides, dilations, group and begin pads; its end pads are whichever of the stride's values give
 * output D, as close to the begin pads as they can be (equal, so that cuDNN takes the geometry, where
 * the pads are symmetric and output_padding < stride, as in PyTorch's exports). */
static VccStatus conv_transpose_geometry(VccCtx *ctx, const VccNode *node, const VccShape *x, const VccShape *w,
                                         VccConvParams *p) {
    const char *auto_pad, *op = vcc_node_op(node);
    VccStatus st = conv_common(ctx, node, x, w, true, p, &auto_pad);
    if (st) return st;
    int n = p->nsp;
    int64_t opad[3], oshape[5], pb[3] = {0}, pe[3] = {0};
    if ((st = attr_n(ctx, node, "output_padding", n, opad, 0))) return st;
    /* output_shape: the spatial sizes (older exporters write the whole shape, N and C included) */
    const VccAttr *os = vcc_attr_get(node, "output_shape");
    if (os && os->type != VCC_A_INTS) os = NULL;
    int skip = os && os->n == n + 2 ? 2 : 0;
    if (os && (st = attr_n(ctx, node, "output_shape", n + skip, oshape, 0))) return st;
    if (skip && (oshape[0] != p->N || oshape[1] != p->C)) {
        vcc_error(ctx, "node '%s' (%s): output_shape begins with (%lld, %lld), but the output has batch %lld and "
                  "%lld channels", node->name, op, (long long)oshape[0], (long long)oshape[1], (long long)p->N,
                  (long long)p->C);
        return VCC_ERR_SHAPE;
    }
    if (strcmp(auto_pad, "NOTSET") == 0 && (st = explicit_pads(ctx, node, n, pb, pe))) return st;
    for (int i = 0; i < n; i++) {
        int64_t s = p->stride[i], d = p->dilation[i], k = p->kernel[i], D = x->dims[2 + i], O;
        if (opad[i] < 0 || (opad[i] >= s && opad[i] >= d)) {
            vcc_error(ctx, "node '%s' (%s): output_padding[%d]=%lld must be from 0 to below strides[%d] or "
                      "dilations[%d]", node->name, op, i, (long long)opad[i], i, i);
            return VCC_ERR_SHAPE;
        }
        if (D < 1) {
            vcc_error(ctx, "node '%s' (%s): input has size %lld in spatial dim %d", node->name, op, (long long)D, i);
            return VCC_ERR_SHAPE;
        }
        /* each product below 2^62 (factors below 2^31): the sums fit int64 */
        int64_t full = s * (D - 1) + opad[i] + d * (k - 1) + 1;
        bool derived = os || strncmp(auto_pad, "SAME_", 5) == 0; /* pads follow from the output size */
        O = !derived ? full - pb[i] - pe[i] : os ? oshape[skip + i] : D * s;
        if (O < 1 || O > VCC_CONV_ATTR_MAX) {
            vcc_error(ctx, "node '%s' (%s): output size %lld in spatial dim %d is not from 1 to 2^31-1", node->name,
                      op, (long long)O, i);
            return VCC_ERR_SHAPE;
        }
        if (derived) {
            int64_t total = full - O;
            pb[i] = strcmp(auto_pad, "SAME_UPPER") == 0 ? floor_half(total) : total - floor_half(total);
            pe[i] = total - pb[i];
        }
        p->in[i] = O;
        p->out[i] = D;
        p->pad_begin[i] = pb[i];
        /* the Conv's output is D for end pads in [lo, lo + s - 1] */
        int64_t lo = s * (D - 1) + d * (k - 1) + 1 - O - pb[i];
        p->pad_end[i] = pb[i] < lo ? lo : pb[i] > lo + s - 1 ? lo + s - 1 : pb[i];
        if (pb[i] < -VCC_CONV_ATTR_MAX || pb[i] > VCC_CONV_ATTR_MAX || p->pad_end[i] < -VCC_CONV_ATTR_MAX ||
            p->pad_end[i] > VCC_CONV_ATTR_MAX) {
            vcc_error(ctx, "node '%s' (%s): its padding in spatial dim %d is beyond 2^31-1", node->name, op, i);
            return VCC_ERR_SHAPE;
        }
    }
    return VCC_OK;
}

static bool is_transpose(VccOp op) {
    return op == VCC_OP_CONV_TRANSPOSE || op == VCC_OP_CONV_TRANSPOSE_GRAD_DATA ||
           op == VCC_OP_CONV_TRANSPOSE_GRAD_FILTER;
}

VccStatus vcc_conv_params(VccCtx *ctx, const VccNode *node, const VccShape *x, const VccShape *w,
                          VccConvParams *p) {
    return is_transpose(node->op) ? conv_transpose_geometry(ctx, node, x, w, p) : conv_geometry(ctx, node, x, w, p);
}

/* Rows of one sample's and one group's im2col column matrix, (C/group) * prod(kernel); -1 past
 * VCC_MAX_TENSOR_BYTES / 4. */
static int64_t ws_rows(const VccConvParams *p) {
    int64_t rows = p->C / p->group;
    for (int i = 0; i < p->nsp; i++)
        if (!vcc_mul_i64(rows, p->kernel[i], &rows)) return -1;
    return rows > VCC_MAX_TENSOR_BYTES / 4 ? -1 : rows;
}

int64_t vcc_conv_ws_bytes(const VccConvParams *p, int64_t limit) {
    int64_t rows = ws_rows(p), out = 1;
    if (rows < 0) return -1;
    for (int i = 0; i < p->nsp; i++)
        if (!vcc_mul_i64(out, p->out[i], &out)) return -1;
    int64_t cols = limit / 4 / (rows > 0 ? rows : 1); /* output positions per chunk */
    if (cols < 1) cols = 1;
    if (cols > out) cols = out;
    int64_t n;
    return !vcc_mul_i64(rows, cols, &n) || n > VCC_MAX_TENSOR_BYTES / 4 ? -1 : n * 4;
}

/* c rounded up to a multiple of 16 (oneDNN's channel blocks: 8 on AVX2, 16 on AVX-512). */
static int64_t round16(int64_t c) { return (c + 15) / 16 * 16; }

/* p as the program's runtime descriptor (runtime/elem/base.h), for the rules of runtime/cpu/conv_rules.h
 * that the program's oneDNN path follows. */
static VccConvDesc dnnl_desc(const VccConvParams *p) {
    VccConvDesc d = {p->nsp, p->N, p->C, p->K, p->group, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1},
                     {0, 0, 0}, {0, 0, 0}, NULL};
    for (int i = 0; i < p->nsp; i++) {
        d.in[i] = p->in[i], d.out[i] = p->out[i], d.kernel[i] = p->kernel[i], d.stride[i] = p->stride[i];
        d.dilation[i] = p->dilation[i], d.pad_begin[i] = p->pad_begin[i], d.pad_end[i] = p->pad_end[i];
    }
    return d;
}

/* oneDNN's workspace for geometry p under limit: vcc_conv_dnnl_ws_bytes; with weights, the
 * weight-gradient pass's: the same plus two more blocked copies of the weights for the partial sums of
 * its threads (its scratchpad: one per thread past the first) and, when the batch runs in chunks
 * (nb < N), the plain weight gradient (K, C/G, kernel...) that accumulates the later chunks. The
 * program computes that pass with im2col where oneDNN's real need is larger, or where oneDNN's kernel
 * would be its gemm convolution (runtime/cpu/conv_dnnl.h). Where one sample does not fit, the forward
 * and backward-data passes run one slab at a time: one sample, a divisor of the extent of
 * vcc_dnnl_slab_dim's dim (the runtime tries the same sizes in the same order). */
static int64_t dnnl_ws_bytes(const VccConvParams *p, int64_t limit, bool weights) {
    const VccConvDesc d = dnnl_desc(p);
    int64_t in = 1, out = 1, kk = 1, live = 1, g = p->group;
    for (int i = 0; i < p->nsp; i++) {
        int64_t lo, taps;
        if (p->pad_begin[i] < 0 || p->pad_end[i] < 0) return 0;
        vcc_dnnl_live_taps(&d, i, &lo, &taps);
        /* each factor below 2^31 (conv_common): the products are checked */
        if (!vcc_mul_i64(in, p->in[i], &in) || !vcc_mul_i64(out, p->out[i], &out) ||
            !vcc_mul_i64(kk, p->kernel[i], &kk) || !vcc_mul_i64(live, taps, &live))
            return 0;
    }
    /* oneDNN's blocked weights hold the live taps only; the plain accumulator the whole kernel */
    int64_t wts, x1, y1, plain_w;
    if (!vcc_mul_i64(round16(p->K / g) * round16(p->C / g), g, &wts) || !vcc_mul_i64(wts, live, &wts) ||
        !vcc_mul_i64(round16(p->C), in, &x1) || !vcc_mul_i64(round16(p->K), out, &y1) ||
        !vcc_mul_i64(p->K * (p->C / g), kk, &plain_w))
        return 0;
    /* the weight gradient: two more blocked weights for the threads' partial sums in the scratchpad,
     * and the plain accumulator when the batch runs in chunks */
    int64_t fixed = weights ? 3 * wts : wts, align = weights ? 4 * 64 : 3 * 64;
    for (int64_t nb = p->N; nb >= 1; nb--) {
        int64_t a, b;
        if (p->N % nb || !vcc_mul_i64(x1, nb, &a) || !vcc_mul_i64(y1, nb, &b)) continue;
        int64_t floats = a + b + fixed + (weights && nb < p->N ? plain_w : 0);
        if (floats < 0 || floats > (limit - align - 65536) / 4) continue;
        return 4 * floats + align + 65536;
    }
    int c = vcc_dnnl_slab_dim(&d);
    if (weights || c < 0) return 0;
    for (int64_t slab = p->in[c] - 1; slab >= 1; slab--) {
        if (p->in[c] % slab) continue;
        /* one sample's blocked x and y, slab positions of in[c] (== out[c]) */
        int64_t floats = (x1 / p->in[c] + y1 / p->in[c]) * slab + fixed;
        if (floats > (limit - align - 65536) / 4) continue;
        return 4 * floats + align + 65536;
    }
    return 0;
}

int64_t vcc_conv_dnnl_ws_bytes(const VccConvParams *p, int64_t limit) { return dnnl_ws_bytes(p, limit, false); }

/* The room for a Winograd pass over n images of hw positions and tiles tiles each, of p's channels:
 * where what it needs for certain fits limit (the blocked copies of the images' input and output and of
 * the weights, the transformed weights, 6x6 per kernel: three copies, the weight gradient's threads'
 * partial sums; extra floats), the smaller of limit and an estimate from above of oneDNN's need (that
 * and the transformed tiles of the n images, plus 8 MiB for its per-thread buffers); else 0. oneDNN's real
 * scratchpad depends on its blocking, which depends on the CPU's caches and the threads: the runtime
 * measures it and runs the direct convolution where it does not fit. */
static int64_t wino_room(const VccConvParams *p, int64_t n, int64_t hw, int64_t tiles, double extra, int64_t limit) {
    double ck = (double)p->C * (double)p->K, cpk = (double)(p->C + p->K);
    double sure = 36.0 * ck * 3 + (double)n * (double)hw * cpk + 9.0 * ck + extra;
    double bytes = 4.0 * sure + 4 * 64, est = bytes + 4.0 * 36.0 * (double)n * (double)tiles * cpk + 8.0 * 1048576;
    if (bytes > (double)limit) return 0;
    return (est < (double)limit ? (int64_t)est : limit) / 4 * 4;
}

/* oneDNN's workspace for a Winograd weight-gradient pass (the only one that runs Winograd) of geometry p
 * under limit (0: none fits, or p is not Winograd's), wino_room's: for the most images per execution n (a
 * divisor of the depth of a 3-D conv with one live depth tap, of the batch of a 2-D one) with at least
 * VCC_DNNL_WINO_MIN_TILES tiles whose certain need fits; for a 3x3x3 conv run tap by tap
 * (vcc_dnnl_taps_ok), one sample's depth, with the accumulator of the later samples. The runtime takes the
 * most images that its real need fits. */
static int64_t dnnl_wino_ws_bytes(const VccConvParams *p, int64_t limit) {
    const VccConvDesc d = dnnl_desc(p);
    /* every factor below 2^31 (conv_common); the sizes below as doubles */
    int64_t hw = p->in[p->nsp - 2] * p->in[p->nsp - 1], kk = 1;
    for (int i = 0; i < p->nsp; i++) kk *= p->kernel[i];
    double plain_w = (double)p->C * (double)p->K * (double)kk;
    if (vcc_dnnl_taps_ok(&d))
        return wino_room(p, p->in[0], hw, ((p->out[1] + 3) / 4) * ((p->out[2] + 3) / 4),
                         p->N > 1 ? plain_w : 0, limit);
    int64_t tiles = vcc_dnnl_wino_tiles(&d);
    if (tiles <= 0) return 0;
    int64_t imgs = p->nsp == 3 ? p->in[0] : p->N;
    for (int64_t n = imgs; n >= 1 && n * tiles >= VCC_DNNL_WINO_MIN_TILES; n--) {
        if (imgs % n) continue;
        int64_t bytes = wino_room(p, n, hw, tiles, plain_w, limit);
        if (bytes > 0) return bytes;
    }
    return 0;
}

/* oneDNN's workspace for conv-family op `op` of geometry p under limit: the weight-gradient pass's for
 * the GradFilter ops, the forward's otherwise; with wino, the larger of the direct and the Winograd
 * convolution's (dnnl_wino_ws_bytes). */
static int64_t dnnl_op_ws_bytes(VccOp op, const VccConvParams *p, int64_t limit, bool wino) {
    bool filter = op == VCC_OP_CONV_GRAD_FILTER || op == VCC_OP_CONV_TRANSPOSE_GRAD_FILTER;
    /* Winograd for the weight-gradient passes only (runtime/cpu/conv_dnnl.h): the forward and
     * backward-data passes feed every later value (ConvTransposeGradData runs the forward pass) */
    wino = wino && filter;
    int64_t d = dnnl_ws_bytes(p, limit, filter), w = wino ? dnnl_wino_ws_bytes(p, limit) : 0;
    return w > d ? w : d;
}

/* The workspace of conv-family op `op` of geometry p: the im2col chunk's under --cpu-conv im2col; under
 * --cpu-conv dnnl the largest of that, oneDNN's direct convolution's and, with wino, its Winograd
 * convolution's. -1 as vcc_conv_ws_bytes. */
static int64_t plan_ws_bytes(const VccCtx *ctx, VccOp op, const VccConvParams *p, bool wino) {
    int64_t bytes = vcc_conv_ws_bytes(p, ctx->workspace_limit);
    if (bytes < 0 || !ctx->cpu_conv_dnnl) return bytes;
    int64_t d = (dnnl_op_ws_bytes(op, p, ctx->workspace_limit, wino) + 3) / 4 * 4;
    return d > bytes ? d : bytes;
}

int64_t vcc_conv_plan_ws_bytes(const VccCtx *ctx, VccOp op, const VccConvParams *p) {
    return plan_ws_bytes(ctx, op, p, true);
}

/* The geometry of conv-family node n as its shape rule reads it: the forward op's X and W are Conv's in[0]
 * and in[1], a GradData op's out[0] (dX) and in[1], a GradFilter op's in[0] and out[0] (dW). */
static VccStatus node_geometry(VccCtx *ctx, const VccGraph *g, const VccNode *n, VccConvParams *p) {
    bool filter = n->op == VCC_OP_CONV_GRAD_FILTER || n->op == VCC_OP_CONV_TRANSPOSE_GRAD_FILTER;
    bool data = n->op == VCC_OP_CONV_GRAD_DATA || n->op == VCC_OP_CONV_TRANSPOSE_GRAD_DATA;
    int x = data ? n->out[0] : n->in[0], w = filter ? n->out[0] : n->in[1];
    if (x < 0 || w < 0) return VCC_ERR_SHAPE;
    return vcc_conv_params(ctx, n, &g->tensors[x].shape, &g->tensors[w].shape, p);
}

int64_t vcc_conv_ws_halved(VccCtx *ctx, const VccGraph *g, int k, int64_t bytes, bool dnnl_too) {
    const VccNode *n = &g->nodes[k];
    VccConvParams p;
    bool conv = n->op == VCC_OP_CONV || n->op == VCC_OP_CONV_GRAD_DATA || n->op == VCC_OP_CONV_GRAD_FILTER ||
                is_transpose(n->op);
    if (!conv || n->nout < 2 || node_geometry(ctx, g, n, &p)) return bytes;
    int64_t rows = ws_rows(&p), out = 1;
    for (int i = 0; i < p.nsp; i++)
        if (!vcc_mul_i64(out, p.out[i], &out)) return bytes;
    /* the room for oneDNN's Winograd convolution goes first: the runtime then runs it on fewer images,
     * or runs the direct convolution */
    int64_t base = plan_ws_bytes(ctx, n->op, &p, false);
    if (ctx->cpu_conv_dnnl && base >= 0 && bytes > base) return base;
    if (rows <= 0) return bytes;
    /* half the im2col columns, not below the floor */
    int64_t cols = bytes / 4 / rows, floor = out < VCC_WORKSPACE_MIN_COLS ? out : VCC_WORKSPACE_MIN_COLS;
    int64_t half = (cols + 1) / 2, im2col = 4 * rows * (half > floor ? half : floor);
    if (!ctx->cpu_conv_dnnl || dnnl_op_ws_bytes(n->op, &p, ctx->workspace_limit, false) <= 0)
        return bytes % (4 * rows) || cols <= floor ? bytes : im2col;
    /* oneDNN's direct convolution runs here: with dnnl_too, the room for its largest execution below bytes
     * (the whole batch while that fits, then fewer samples, then slabs of one) or half the im2col columns
     * (the path of a pass oneDNN does not take), the larger; no such execution: left as planned, as
     * im2col alone would be several times slower */
    if (!dnnl_too) return bytes;
    int64_t next = (dnnl_op_ws_bytes(n->op, &p, bytes - 1, false) + 3) / 4 * 4;
    if (next <= 0) return bytes;
    int64_t smaller = next > im2col ? next : im2col;
    return smaller < bytes ? smaller : bytes;
}

VccStatus vcc_conv_add_workspace(VccCtx *ctx, VccGraph *g, int k, const VccShape *x, const VccShape *w) {
    VccConvParams p;
    VccStatus st = vcc_conv_params(ctx, &g->nodes[k], x, w, &p);
    if (st) return st;
    int64_t bytes = vcc_conv_plan_ws_bytes(ctx, g->nodes[k].op, &p);
    if (bytes < 0) {
        vcc_error(ctx, "node '%s' (%s): its im2col workspace would be larger than vcc's limit of 2^47 bytes",
                  g->nodes[k].name, g->nodes[k].onnx_op ? g->nodes[k].onnx_op : vcc_op_name(g->nodes[k].op));
        return VCC_ERR_SHAPE;
    }
    VccShape s = {1, {bytes / 4}};
    int ws = vcc_tensor_add_unique(g, VCC_F32, &s, VCC_T_WORKSPACE, "%s.ws", g->nodes[k].name);
    VccNode *n = &g->nodes[k];
    n->out = vcc_realloc(n->out, sizeof(int) * (size_t)(n->nout + 1));
    n->out[n->nout++] = ws;
    g->tensors[ws].producer = k;
    return VCC_OK;
}

/* ------------------------------------------------------------------ shared by the family */

static void conv_check_attrs(VccCtx *ctx, const VccGraph *g, const VccNode *n) {
    (void)g;
    const char *ap = vcc_attr_string(n, "auto_pad", "NOTSET");
    if (strcmp(ap, "NOTSET") && strcmp(ap, "SAME_UPPER") && strcmp(ap, "SAME_LOWER") && strcmp(ap, "VALID"))
        vcc_op_attr_problem(ctx, n, "%s attribute '%s'", "auto_pad", "not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
}

/* The workspace output ws of conv-family node n must be the buffer vcc plans for geometry p under the
 * workspace limit and the CPU conv backend (vcc_conv_plan_ws_bytes; check mode). */
static bool check_ws(VccCtx *ctx, VccGraph *g, const VccNode *n, int ws, const VccConvParams *p) {
    int64_t bytes = vcc_conv_plan_ws_bytes(ctx, n->op, p);
    VccShape s = {1, {bytes / 4}};
    if (ws < 0 || bytes < 0) {
        vcc_error(ctx, "node '%s' (%s): its workspace output is missing or too large", n->name, vcc_op_name(n->op));
        return false;
    }
    /* or fewer whole im2col columns, at least one, as passes/schedule's shrinking at the peak leaves it */
    const VccTensor *t = &g->tensors[ws];
    int64_t have = t->shape.rank == 1 ? t->shape.dims[0] : -1, rows = ws_rows(p);
    if (t->dtype == VCC_F32 && rows > 0 && have >= rows && have < bytes / 4 && have % rows == 0) return true;
    /* or without the room for oneDNN's Winograd convolution, which the shrinking takes first */
    if (t->dtype == VCC_F32 && have >= 0 && have < bytes / 4 && have * 4 == plan_ws_bytes(ctx, n->op, p, false))
        return true;
    /* or, where oneDNN's direct convolution runs (--cpu-conv dnnl), room for one of its executions on fewer
     * samples, and at least one im2col column: the program takes what fits (runtime/cpu/conv_dnnl.h) */
    if (t->dtype == VCC_F32 && ctx->cpu_conv_dnnl && rows > 0 && have >= rows && have < bytes / 4 &&
        dnnl_op_ws_bytes(n->op, p, ctx->workspace_limit, false) > 0)
        return true;
    return vcc_put_output(ctx, g, n, true, ws, VCC_F32, &s);
}

/* The shape of the forward op's Y for geometry p: Conv (N, K, out...); ConvTranspose (N, C, in...), the
 * input of the Conv it is the adjoint of. */
static VccShape y_shape(const VccNode *n, const VccConvParams *p) {
    bool tr = is_transpose(n->op);
    VccShape s = {2 + p->nsp, {p->N, tr ? p->C : p->K}};
    for (int i = 0; i < p->nsp; i++) s.dims[2 + i] = tr ? p->in[i] : p->out[i];
    return s;
}

/* Conv:          (X (N, C, D...), W (K, C/group, k...), B (K) | _) -> (Y (N, K, O...), ws)
 * ConvTranspose: (X (N, C, D...), W (C, K/group, k...), B (K) | _) -> (Y (N, K, O...), ws) */
static VccStatus conv_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    VccNode *n = &g->nodes[k];
    char s1[128];
    const VccTensor *x = vcc_need_input(ctx, g, n, 0, VCC_F32), *w;
    if (!x || !(w = vcc_need_input(ctx, g, n, 1, VCC_F32))) return VCC_ERR_SHAPE;
    VccConvParams p;
    VccStatus st = vcc_conv_params(ctx, n, &x->shape, &w->shape, &p);
    if (st) return st;
    VccShape out = y_shape(n, &p);
    if (n->nin > 2 && n->in[2] >= 0) {
        const VccTensor *b = vcc_need_input(ctx, g, n, 2, VCC_F32);
        if (!b) return VCC_ERR_SHAPE;
        if (b->shape.rank != 1 || b->shape.dims[0] != out.dims[1]) {
            vcc_shape_str(s1, sizeof s1, &b->shape);
            vcc_error(ctx, "node '%s' (%s): bias has shape %s, expected (%lld)", n->name, vcc_op_name(n->op), s1,
                      (long long)out.dims[1]);
            return VCC_ERR_SHAPE;
        }
    }
    if (n->nout != (check ? 2 : 1) || n->out[0] < 0) {
        vcc_error(ctx, "node '%s' (%s): expected one output%s", n->name, vcc_op_name(n->op),
                  check ? " and a workspace" : "");
        return VCC_ERR_SHAPE;
    }
    if (!vcc_put_output(ctx, g, n, check, n->out[0], VCC_F32, &out)) return VCC_ERR_SHAPE;
    if (check) return check_ws(ctx, g, n, n->out[1], &p) ? VCC_OK : VCC_ERR_SHAPE;
    return vcc_conv_add_workspace(ctx, g, k, &x->shape, &w->shape);
}

/* Conv(X, W, B)          -> ConvGradData(dY, W) -> (dX, ws)       [only if X needs a gradient]
 *                           ConvGradFilter(X, dY) -> (dW, dB|_, ws)
 * ConvTranspose(X, W, B) -> ConvTransposeGradData(dY, W) -> (dX, ws), ConvTransposeGradFilter(X, dY) alike */
static VccStatus conv_grad(VccDiff *d, int k) {
    VccGraph *g = d->g;
    VccNode n = g->nodes[k]; /* copy: the node array grows below */
    bool tr = n.op == VCC_OP_CONV_TRANSPOSE;
    int x = n.in[0], dy = vcc_diff_dy(d, k, 0);
    VccShape xs = g->tensors[x].shape, ws = g->tensors[n.in[1]].shape;
    if (d->req[x]) {
        int dx = vcc_diff_new_grad(d, x);
        int in[2] = {dy, n.in[1]};
        int kk = vcc_diff_add_node(d, tr ? VCC_OP_CONV_TRANSPOSE_GRAD_DATA : VCC_OP_CONV_GRAD_DATA, k, "grad_data",
                                   in, 2, &dx, 1);
        VccStatus st = vcc_conv_add_workspace(d->ctx, g, kk, &xs, &ws);
        if (st) return st;
        vcc_diff_grow(d);
        vcc_diff_accum(d, x, dx);
    }
    int w = n.in[1], b = n.nin > 2 ? n.in[2] : -1;
    int dw = vcc_diff_new_grad(d, w), db = b >= 0 ? vcc_diff_new_grad(d, b) : -1;
    int in[2] = {x, dy}, out[2] = {dw, db};
    int kk = vcc_diff_add_node(d, tr ? VCC_OP_CONV_TRANSPOSE_GRAD_FILTER : VCC_OP_CONV_GRAD_FILTER, k, "grad_filter",
                               in, 2, out, 2);
    VccStatus st = vcc_conv_add_workspace(d->ctx, g, kk, &xs, &ws);
    if (st) return st;
    vcc_diff_grow(d);
    vcc_diff_accum(d, w, dw);
    if (b >= 0) vcc_diff_accum(d, b, db);
    return VCC_OK;
}

/* ConvGradData, ConvTransposeGradData:     (dY, W) -> (dX, ws)
 * ConvGradFilter, ConvTransposeGradFilter: (X, dY) -> (dW, dB | _, ws)
 * with the geometry of the forward op of X and W; dY has the shape of its Y, dB that of its bias. */
static VccStatus grad_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    (void)check;
    const VccNode *n = &g->nodes[k];
    bool filter = n->op == VCC_OP_CONV_GRAD_FILTER || n->op == VCC_OP_CONV_TRANSPOSE_GRAD_FILTER;
    const VccTensor *a = vcc_need_input(ctx, g, n, 0, VCC_F32), *b;
    if (!a || !(b = vcc_need_input(ctx, g, n, 1, VCC_F32)) || n->nout != (filter ? 3 : 2) || n->out[0] < 0)
        return vcc_operands_missing(ctx, n);
    const VccTensor *out = &g->tensors[n->out[0]], *dy = filter ? b : a;
    VccConvParams p;
    if (vcc_conv_params(ctx, n, filter ? &a->shape : &out->shape, filter ? &out->shape : &b->shape, &p))
        return VCC_ERR_SHAPE;
    VccShape s = y_shape(n, &p);
    if (out->dtype != VCC_F32 || !vcc_same_shape(&dy->shape, &s)) {
        vcc_error(ctx, "node '%s' (%s): dy does not have the shape of the conv's output", n->name, vcc_op_name(n->op));
        return VCC_ERR_SHAPE;
    }
    s = (VccShape){1, {s.dims[1]}};
    if (filter && !vcc_put_output(ctx, g, n, true, n->out[1], VCC_F32, &s)) return VCC_ERR_SHAPE;
    return check_ws(ctx, g, n, n->out[n->nout - 1], &p) ? VCC_OK : VCC_ERR_SHAPE;
}

/* The descriptor index of the geometry of node n (x, w: the forward op's input and weight shapes),
 * registered in e->convs. Both targets take every geometry (the CUDA target computes pads cuDNN does
 * not take by im2col and cuBLAS, in the same planned workspace). */
static VccStatus conv_desc(VccEmit *e, const VccNode *n, const VccShape *x, const VccShape *w, int *idx) {
    VccConvParams p;
    VccStatus st = vcc_conv_params(e->ctx, n, x, w, &p);
    if (st) return st;
    for (int i = 0; i < e->nconv; i++)
        if (!memcmp(&e->convs[i], &p, sizeof p)) {
            *idx = i;
            return VCC_OK;
        }
    e->convs = vcc_realloc(e->convs, sizeof p * (size_t)(e->nconv + 1));
    e->convs[e->nconv] = p;
    *idx = e->nconv++;
    return VCC_OK;
}

/* "    fn(rt, &vcc_conv[i], t0, t1, ..., A + ws, bytes);" for node k: its tensors args (-1: NULL), its last
 * output the workspace; x and w the forward op's X and W (tensor indices). */
static VccStatus emit_call(VccEmit *e, int k, const char *fn, int x, int w, const int *args, int nargs) {
    const VccGraph *g = e->g;
    const VccNode *n = &g->nodes[k];
    int ci, ws = n->out[n->nout - 1];
    VccStatus st = conv_desc(e, n, &g->tensors[x].shape, &g->tensors[w].shape, &ci);
    if (st) return st;
    fprintf(e->f, "    %s(rt, &vcc_conv[%d]", fn, ci);
    for (int i = 0; i < nargs; i++) fprintf(e->f, ", %s", vcc_emit_f32(e, args[i]));
    fprintf(e->f, ", A + %" PRId64 ", %" PRId64 ");\n", g->tensors[ws].offset, vcc_tensor_bytes(&g->tensors[ws]));
    return VCC_OK;
}

/* ------------------------------------------------------------------ Conv */

static const VccAttrSpec conv_attrs[] = {
    {"auto_pad", 1, VCC_OPSET_NOW, VCC_A_STRING}, {"dilations", 1, VCC_OPSET_NOW, VCC_A_INTS},
    {"group", 1, VCC_OPSET_NOW, VCC_A_INT},       {"kernel_shape", 1, VCC_OPSET_NOW, VCC_A_INTS},
    {"pads", 1, VCC_OPSET_NOW, VCC_A_INTS},       {"strides", 1, VCC_OPSET_NOW, VCC_A_INTS},
    {NULL, 0, 0, 0},
};

/* Conv: y = conv(x, w) + b; ConvTranspose: y = conv^T(x, w) + b, the adjoint of its geometry's conv
 * (conv_backward_data) and the bias */
static VccStatus fwd_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    int a[4] = {n->in[0], n->in[1], n->nin > 2 ? n->in[2] : -1, n->out[0]};
    return emit_call(e, k, n->op == VCC_OP_CONV ? "conv_forward" : "conv_transpose_forward", n->in[0], n->in[1],
                     a, 4);
}

const VccOpDef vcc_def_CONV = {VCC_OPF_WORKSPACE, 1, conv_attrs, conv_check_attrs, NULL, conv_shape, conv_grad,
                               fwd_emit};

/* ------------------------------------------------------------------ ConvGradData */

/* dx = conv^T(dy, w) */
static VccStatus conv_grad_data_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    int a[3] = {n->in[0], n->in[1], n->out[0]};
    return emit_call(e, k, "conv_backward_data", n->out[0], n->in[1], a, 3);
}

const VccOpDef vcc_def_CONV_GRAD_DATA = {VCC_OPF_WORKSPACE, 1, NULL, NULL, NULL, grad_shape, NULL,
                                         conv_grad_data_emit};

/* ------------------------------------------------------------------ ConvGradFilter */

/* ConvGradFilter: dw, db of conv(x, w) + b given dy; ConvTransposeGradFilter: dw, the conv's filter gradient
 * with dy as its input and x as its output gradient, and db = the sum of dy */
static VccStatus grad_filter_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    int a[4] = {n->in[0], n->in[1], n->out[0], n->out[1]};
    const char *fn = n->op == VCC_OP_CONV_GRAD_FILTER ? "conv_backward_filter" : "conv_transpose_backward_filter";
    return emit_call(e, k, fn, n->in[0], n->out[0], a, 4);
}

const VccOpDef vcc_def_CONV_GRAD_FILTER = {VCC_OPF_WORKSPACE, 2, NULL, NULL, NULL, grad_shape, NULL,
                                           grad_filter_emit};

/* ------------------------------------------------------------------ ConvTranspose */

/* Opsets 1 and 11 have the same attributes (22 adds types only). */
static const VccAttrSpec conv_transpose_attrs[] = {
    {"auto_pad", 1, VCC_OPSET_NOW, VCC_A_STRING},     {"dilations", 1, VCC_OPSET_NOW, VCC_A_INTS},
    {"group", 1, VCC_OPSET_NOW, VCC_A_INT},           {"kernel_shape", 1, VCC_OPSET_NOW, VCC_A_INTS},
    {"output_padding", 1, VCC_OPSET_NOW, VCC_A_INTS}, {"output_shape", 1, VCC_OPSET_NOW, VCC_A_INTS},
    {"pads", 1, VCC_OPSET_NOW, VCC_A_INTS},           {"strides", 1, VCC_OPSET_NOW, VCC_A_INTS},
    {NULL, 0, 0, 0},
};

const VccOpDef vcc_def_CONV_TRANSPOSE = {VCC_OPF_WORKSPACE, 1, conv_transpose_attrs, conv_check_attrs, NULL,
                                         conv_shape, conv_grad, fwd_emit};

/* ------------------------------------------------------------------ ConvTransposeGradData */

/* dx = conv(dy, w): the input gradient of an adjoint is the conv itself (PyTorch: conv_transpose's
 * grad_input is convolution(grad_output, weight)) */
static VccStatus conv_transpose_grad_data_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    int a[4] = {n->in[0], n->in[1], -1, n->out[0]};
    return emit_call(e, k, "conv_forward", n->out[0], n->in[1], a, 4);
}

const VccOpDef vcc_def_CONV_TRANSPOSE_GRAD_DATA = {VCC_OPF_WORKSPACE, 1, NULL, NULL, NULL, grad_shape, NULL,
                                                   conv_transpose_grad_data_emit};

/* ------------------------------------------------------------------ ConvTransposeGradFilter */

const VccOpDef vcc_def_CONV_TRANSPOSE_GRAD_FILTER = {VCC_OPF_WORKSPACE, 2, NULL, NULL, NULL, grad_shape,
                                                     NULL, grad_filter_emit};
