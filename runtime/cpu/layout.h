/*
 * cpu/layout.h - the layout family's CPU kernels: the strided copy (Concat, Split, Slice, Transpose,
 * Expand, Tile, SliceGrad's scatter), ExpandGrad's sum over copies, Resize and ResizeGrad, Cast,
 * Gather and GatherGrad.
 * Signatures: proto/layout.h; per-element bodies and descriptors shared with the CUDA target:
 * elem/layout.h. Part of the C target's runtime (cpu/base.h).
 */
#ifndef VCC_CPU_LAYOUT_H
#define VCC_CPU_LAYOUT_H

#include "base.h"
#include "../elem/layout.h"

#define VCC_KERNEL VCC_KERNEL_DECLARE
#include "../proto/layout.h"
#undef VCC_KERNEL

/* strided_copy_forward: y[yo(i)] = x[xo(i)] for every index i of d (elem/layout.h, VccStrided): the
 * data movement of Concat (one call per input, into its part of y), Split and Slice (x read at the
 * part's offset and strides), Transpose (x strides permuted), Expand and Tile (stride 0 on repeated
 * dims) and SliceGrad (y written at the slice's strides). Words are copied as they are: an int64
 * tensor is a trailing dim of 2 words. x and y must not overlap. */
VCC_CPU_FN void strided_copy_forward(VccRt *rt, const VccStrided *d, const float *x, float *y)
{
    const int last = d->rank - 1;
    const int64_t inner = d->dims[last], xs = d->xs[last], ys = d->ys[last];
    int64_t rows = 1, r;
    int a;
    (void)rt;
    for (a = 0; a < last; a++) rows *= d->dims[a];
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (r = 0; r < rows; r++) {
        int64_t xo, yo, j;
        vcc_strided_offsets(d, last, r, &xo, &yo);
        if (xs == 1 && ys == 1) memcpy(y + yo, x + xo, (size_t)inner * sizeof(float));
        else
            for (j = 0; j < inner; j++) y[yo + j * ys] = x[xo + j * xs];
    }
}

/* expand_backward: dx[i] = the sum in double of dy over the copies of dx element i (VccSumTo), for the
 * n elements of dx: the gradient of Expand (dy (broadcast shape) -> dx (x's shape)) and of Tile
 * (torch: sum_to_size of dy; Tile's sums over the repeats). OVERWRITES dx. */
VCC_CPU_FN void expand_backward(VccRt *rt, int64_t n, const VccSumTo *d, const float *dy, float *dx)
{
    int64_t i;
    (void)rt;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (i = 0; i < n; i++) {
        int64_t xo, yo;
        vcc_strided_offsets(&d->keep, d->keep.rank, i, &xo, &yo);
        dx[yo] = (float)vcc_sum_to_element(d, dy, xo);
    }
}

/* One Resize direction over every element of its output: y (out) from x (in) forward, dx (in) from
 * dy (out) backward. */
VCC_CPU_FN void vcc__resize_all(const VccResize *d, const float *src, float *dst, int backward)
{
    int64_t n = 1, i;
    int a;
    for (a = 0; a < d->rank; a++) n *= backward ? d->in[a] : d->out[a];
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (i = 0; i < n; i++) dst[i] = backward ? vcc_resize_bwd(d, src, i) : vcc_resize_fwd(d, src, i);
}

/* resize_forward: y (out) = ONNX Resize of x (in): nearest, n-linear or n-cubic, antialiased filters,
 * tf_crop_and_resize's crop and extrapolation (VccResize; per element vcc_resize_fwd, e.g. x (N, C, T, H,
 * W) -> y (N, C, 2T, 2H, 2W)). */
VCC_CPU_FN void resize_forward(VccRt *rt, const VccResize *d, const float *x, float *y)
{
    (void)rt;
    vcc__resize_all(d, x, y, 0);
}

/* resize_backward: dx (in) = the adjoint of resize_forward applied to dy (out): each dx element sums
 * dy over the outputs that sample it, times their weights (vcc_resize_bwd; PyTorch's
 * upsample_nearest/linear/bicubic backward, antialiased too); an extrapolated output reads no x and
 * sends nothing back. OVERWRITES dx. */
VCC_CPU_FN void resize_backward(VccRt *rt, const VccResize *d, const float *dy, float *dx)
{
    (void)rt;
    vcc__resize_all(d, dy, dx, 1);
}

/* cast_f32_int_forward: y = x truncated toward zero and saturated to [lo, hi] (ONNX Cast to INT64, or to
 * INT32 kept as int64), n elements. */
VCC_CPU_FN void cast_f32_int_forward(VccRt *rt, int64_t n, int64_t lo, int64_t hi, const float *x, int64_t *y)
{
    int64_t i;
    (void)rt;
    for (i = 0; i < n; i++) y[i] = vcc_cast_f32_int(x[i], lo, hi);
}

/* cast_i64_f32_forward: y = (float)x, rounded to nearest (ONNX Cast from INT64 to FLOAT), n elements. */
VCC_CPU_FN void cast_i64_f32_forward(VccRt *rt, int64_t n, const int64_t *x, float *y)
{
    int64_t i;
    (void)rt;
    for (i = 0; i < n; i++) y[i] = vcc_cast_i64_f32(x[i]);
}

/* cast_i64_i32_forward: y = x wrapped to int32, kept as int64 (ONNX Cast from INT64 to INT32), n
 * elements. */
VCC_CPU_FN void cast_i64_i32_forward(VccRt *rt, int64_t n, const int64_t *x, int64_t *y)
{
    int64_t i;
    (void)rt;
    for (i = 0; i < n; i++) y[i] = vcc_cast_i64_i32(x[i]);
}

/* gather_forward: y (outer, nidx, inner) = x (outer, len, inner) at index idx[j] of its middle axis
 * (ONNX Gather along axis: outer = prod of the dims before it, inner = prod after; negative indices
 * count from the back; an index outside the axis gives zeros). */
VCC_CPU_FN void gather_forward(VccRt *rt, int64_t outer, int64_t len, int64_t inner, int64_t nidx, const int64_t *idx,
                               const float *x, float *y)
{
    int64_t o;
    (void)rt;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (o = 0; o < outer; o++) {
        int64_t j, i;
        for (j = 0; j < nidx; j++) {
            const int64_t a = vcc_gather_index(idx[j], len);
            float *yr = y + (o * nidx + j) * inner;
            for (i = 0; i < inner; i++) yr[i] = a < 0 ? 0.0f : x[(o * len + a) * inner + i];
        }
    }
}

/* gather_backward: dx (outer, len, inner) = zeros, then dy (outer, nidx, inner) row j added at index
 * idx[j], j ascending (OVERWRITTEN; torch index_select's backward, index_add: a repeated index sums its
 * rows in order). */
VCC_CPU_FN void gather_backward(VccRt *rt, int64_t outer, int64_t len, int64_t inner, int64_t nidx, const int64_t *idx,
                                const float *dy, float *dx)
{
    int64_t o;
    (void)rt;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (o = 0; o < outer; o++) {
        int64_t j, i;
        float *dr = dx + o * len * inner;
        for (i = 0; i < len * inner; i++) dr[i] = 0.0f;
        for (j = 0; j < nidx; j++) {
            const int64_t a = vcc_gather_index(idx[j], len);
            const float *g = dy + (o * nidx + j) * inner;
            if (a < 0) continue;
            for (i = 0; i < inner; i++) dr[a * inner + i] += g[i];
        }
    }
}

#define VCC_KERNEL VCC_KERNEL_CHECK
#include "../proto/layout.h"
#undef VCC_KERNEL

#endif /* VCC_CPU_LAYOUT_H */
