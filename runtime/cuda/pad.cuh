/*
 * cuda/pad.cuh - the pad family's CUDA kernels: Pad and its gradient.
 * Signatures: proto/pad.h; per-element bodies shared with the C target: elem/pad.h. Part of the CUDA
 * target's runtime (cuda/base.cuh).
 */
#ifndef VCC_CUDA_PAD_CUH
#define VCC_CUDA_PAD_CUH

#include "base.cuh"
#include "../elem/pad.h"

#define VCC_KERNEL VCC_KERNEL_DECLARE
#include "../proto/pad.h"
#undef VCC_KERNEL

/* The data are float, or __nv_bfloat16 for the bfloat16 values of vcc --precision bf16 (vcc_ld / vcc_st,
 * elem/base.h). */
template <class TX, class TY> static __global__ void pad_forward_kernel(VccPadDesc d, int64_t n, const TX *x, TY *y)
{
    VCC_GRID_STRIDE(k, n) vcc_st(y, k, vcc_pad_forward_at(&d, x, k));
}

template <class TD, class TX> static __global__ void pad_backward_kernel(VccPadDesc d, int64_t n, const TD *dy, TX *dx)
{
    VCC_GRID_STRIDE(k, n) vcc_st(dx, k, vcc_pad_backward_at(&d, dy, k));
}

/* pad_forward: y (out...) = x (in...) cropped and padded in d's mode. As cpu/pad.h. */
template <class TX, class TY> static inline void pad_forward(VccRt *rt, const VccPadDesc *d, const TX *x, TY *y)
{
    int64_t n = 1;
    (void)rt;
    for (int i = 0; i < d->rank; i++) n *= d->out[i];
    if (n <= 0) return;
    pad_forward_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(*d, n, x, y);
    VCC_CUDA_LAUNCHED();
}

/* pad_backward: dx (in...) = the sum of dy over the outputs reading each element (OVERWRITTEN); one
 * thread per element of x gathers, no atomics. As cpu/pad.h. */
template <class TD, class TX> static inline void pad_backward(VccRt *rt, const VccPadDesc *d, const TD *dy, TX *dx)
{
    int64_t n = 1;
    (void)rt;
    for (int i = 0; i < d->rank; i++) n *= d->in[i];
    if (n <= 0) return;
    pad_backward_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(*d, n, dy, dx);
    VCC_CUDA_LAUNCHED();
}

#define VCC_KERNEL VCC_KERNEL_CHECK
#include "../proto/pad.h"
#undef VCC_KERNEL

#endif /* VCC_CUDA_PAD_CUH */
