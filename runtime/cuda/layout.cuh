/*
 * cuda/layout.cuh - the layout family's CUDA kernels: the strided copy (Concat, Split, Slice, Transpose,
 * Expand, Tile, SliceGrad's scatter), ExpandGrad's sum over copies, Resize and ResizeGrad, Cast.
 * Signatures: proto/layout.h; per-element bodies and descriptors shared with the C target:
 * elem/layout.h. The descriptors reach the kernels by value. Part of the CUDA target's runtime
 * (cuda/base.cuh).
 */
#ifndef VCC_CUDA_LAYOUT_CUH
#define VCC_CUDA_LAYOUT_CUH

#include "base.cuh"
#include "../elem/layout.h"

#define VCC_KERNEL VCC_KERNEL_DECLARE
#include "../proto/layout.h"
#undef VCC_KERNEL

/* The strided copy, ExpandGrad and Resize take float, or __nv_bfloat16 for the bfloat16 values of vcc
 * --precision bf16 (vcc_ld / vcc_st, elem/base.h); their sums run in double either way. */
template <class TX, class TY>
static __global__ void strided_copy_forward_kernel(int64_t n, VccStrided d, const TX *x, TY *y)
{
    VCC_GRID_STRIDE(i, n) {
        int64_t xo, yo;
        vcc_strided_offsets(&d, d.rank, i, &xo, &yo);
        vcc_st(y, yo, vcc_ld(x, xo));
    }
}

/* one thread per dx element; the sum over its copies in double */
template <class TD, class TX>
static __global__ void expand_backward_kernel(int64_t n, VccSumTo d, const TD *dy, TX *dx)
{
    VCC_GRID_STRIDE(i, n) {
        int64_t xo, yo;
        vcc_strided_offsets(&d.keep, d.keep.rank, i, &xo, &yo);
        vcc_st(dx, yo, (float)vcc_sum_to_element(&d, dy, xo));
    }
}

/* one thread per element of the direction's output; backward gathers the outputs that sample each dx
 * element (no atomics) */
template <class TS, class TD>
static __global__ void resize_kernel(int64_t n, VccResize d, const TS *src, TD *dst, int backward)
{
    VCC_GRID_STRIDE(i, n) vcc_st(dst, i, backward ? vcc_resize_bwd(&d, src, i) : vcc_resize_fwd(&d, src, i));
}

static __global__ void cast_f32_int_forward_kernel(int64_t n, int64_t lo, int64_t hi, const float *x, int64_t *y)
{
    VCC_GRID_STRIDE(i, n) y[i] = vcc_cast_f32_int(x[i], lo, hi);
}

static __global__ void cast_i64_f32_forward_kernel(int64_t n, const int64_t *x, float *y)
{
    VCC_GRID_STRIDE(i, n) y[i] = vcc_cast_i64_f32(x[i]);
}

static __global__ void cast_i64_i32_forward_kernel(int64_t n, const int64_t *x, int64_t *y)
{
    VCC_GRID_STRIDE(i, n) y[i] = vcc_cast_i64_i32(x[i]);
}

/* x and y must not overlap */
template <class TX, class TY>
static inline void strided_copy_forward(VccRt *rt, const VccStrided *d, const TX *x, TY *y)
{
    int64_t n = 1;
    int a;
    (void)rt;
    for (a = 0; a < d->rank; a++) n *= d->dims[a];
    if (n <= 0) return;
    strided_copy_forward_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(n, *d, x, y);
    VCC_CUDA_LAUNCHED();
}

template <class TD, class TX>
static inline void expand_backward(VccRt *rt, int64_t n, const VccSumTo *d, const TD *dy, TX *dx)
{
    (void)rt;
    if (n <= 0) return;
    expand_backward_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(n, *d, dy, dx);
    VCC_CUDA_LAUNCHED();
}

/* One Resize direction: y (out) from x (in) forward, dx (in) from dy (out) backward. */
template <class TS, class TD>
static inline void vcc__resize_launch(const VccResize *d, const TS *src, TD *dst, int backward)
{
    int64_t n = 1;
    int a;
    for (a = 0; a < d->rank; a++) n *= backward ? d->in[a] : d->out[a];
    if (n <= 0) return;
    resize_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(n, *d, src, dst, backward);
    VCC_CUDA_LAUNCHED();
}

template <class TX, class TY> static inline void resize_forward(VccRt *rt, const VccResize *d, const TX *x, TY *y)
{
    (void)rt;
    vcc__resize_launch(d, x, y, 0);
}

template <class TD, class TX>
static inline void resize_backward(VccRt *rt, const VccResize *d, const TD *dy, TX *dx)
{
    (void)rt;
    vcc__resize_launch(d, dy, dx, 1);
}

static inline void cast_f32_int_forward(VccRt *rt, int64_t n, int64_t lo, int64_t hi, const float *x, int64_t *y)
{
    (void)rt;
    if (n <= 0) return;
    cast_f32_int_forward_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(n, lo, hi, x, y);
    VCC_CUDA_LAUNCHED();
}

static inline void cast_i64_f32_forward(VccRt *rt, int64_t n, const int64_t *x, float *y)
{
    (void)rt;
    if (n <= 0) return;
    cast_i64_f32_forward_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(n, x, y);
    VCC_CUDA_LAUNCHED();
}

static inline void cast_i64_i32_forward(VccRt *rt, int64_t n, const int64_t *x, int64_t *y)
{
    (void)rt;
    if (n <= 0) return;
    cast_i64_i32_forward_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(n, x, y);
    VCC_CUDA_LAUNCHED();
}

template <class TX, class TY>
static __global__ void gather_forward_kernel(int64_t outer, int64_t len, int64_t inner, int64_t nidx,
                                             const int64_t *idx, const TX *x, TY *y)
{
    VCC_GRID_STRIDE(k, outer * nidx * inner) {
        const int64_t i = k % inner, j = (k / inner) % nidx, o = k / (inner * nidx);
        const int64_t a = vcc_gather_index(idx[j], len);
        vcc_st(y, k, a < 0 ? 0.0f : vcc_ld(x, (o * len + a) * inner + i));
    }
}

/* one thread per (o, i) column: zeros, then the rows of dy in j order (the CPU kernel's sums) */
template <class TD>
static __global__ void gather_backward_kernel(int64_t outer, int64_t len, int64_t inner, int64_t nidx,
                                              const int64_t *idx, const TD *dy, float *dx)
{
    VCC_GRID_STRIDE(k, outer * inner) {
        const int64_t i = k % inner, o = k / inner;
        float *dr = dx + o * len * inner + i;
        int64_t a, j;
        for (a = 0; a < len; a++) dr[a * inner] = 0.0f;
        for (j = 0; j < nidx; j++) {
            const int64_t t = vcc_gather_index(idx[j], len);
            if (t >= 0) dr[t * inner] += vcc_ld(dy, (o * nidx + j) * inner + i);
        }
    }
}

/* gather_backward_kernel into bfloat16 dx (vcc --precision bf16; an overload, so gather_backward's one
 * launch picks it by dx's type): each dx element sums its dy in float in the order above and is rounded
 * once, as the float32 kernel's sum then the C trainer's rounding */
template <class TD>
static __global__ void gather_backward_kernel(int64_t outer, int64_t len, int64_t inner, int64_t nidx,
                                              const int64_t *idx, const TD *dy, __nv_bfloat16 *dx)
{
    VCC_GRID_STRIDE(k, outer * inner) {
        const int64_t i = k % inner, o = k / inner;
        for (int64_t a = 0; a < len; a++) {
            float acc = 0.0f;
            for (int64_t j = 0; j < nidx; j++)
                if (vcc_gather_index(idx[j], len) == a) acc += vcc_ld(dy, (o * nidx + j) * inner + i);
            vcc_st(dx, (o * len + a) * inner + i, acc);
        }
    }
}

/* gather_forward, gather_backward: as the CPU kernels (cpu/layout.h) */
template <class TX, class TY>
static inline void gather_forward(VccRt *rt, int64_t outer, int64_t len, int64_t inner, int64_t nidx, const int64_t *idx,
                                  const TX *x, TY *y)
{
    (void)rt;
    if (outer * nidx * inner <= 0) return;
    gather_forward_kernel<<<vcc__grid(outer * nidx * inner), VCC_CUDA_THREADS>>>(outer, len, inner, nidx, idx, x, y);
    VCC_CUDA_LAUNCHED();
}

template <class TD, class TX>
static inline void gather_backward(VccRt *rt, int64_t outer, int64_t len, int64_t inner, int64_t nidx, const int64_t *idx,
                                   const TD *dy, TX *dx)
{
    static_assert(VccStored<TX>::value, "gather_backward: float or __nv_bfloat16");
    (void)rt;
    if (outer * len * inner <= 0) return;
    gather_backward_kernel<<<vcc__grid(outer * inner), VCC_CUDA_THREADS>>>(outer, len, inner, nidx, idx, dy, dx);
    VCC_CUDA_LAUNCHED();
}

#define VCC_KERNEL VCC_KERNEL_CHECK
#include "../proto/layout.h"
#undef VCC_KERNEL

#endif /* VCC_CUDA_LAYOUT_CUH */
