/*
 * cuda/dropout.cuh - the dropout family's CUDA kernels: Dropout in training mode and its gradient, and
 * the random ops.
 * Signatures: proto/dropout.h; the draw and the per-element bodies, shared with the C target:
 * elem/dropout.h, so both targets draw the same masks. Part of the CUDA target's runtime (cuda/base.cuh).
 */
#ifndef VCC_CUDA_DROPOUT_CUH
#define VCC_CUDA_DROPOUT_CUH

#include "base.cuh"
#include "../elem/dropout.h"

#define VCC_KERNEL VCC_KERNEL_DECLARE
#include "../proto/dropout.h"
#undef VCC_KERNEL

/* One thread per four elements (one Philox call), grid-stride. The data are float, or __nv_bfloat16 for
 * the bfloat16 values of vcc --precision bf16 (elem/base.h's vcc_ld / vcc_st); the mask is the same. */
template <class TX, class TY>
static __global__ void dropout_forward_kernel(int64_t n, uint64_t seed, uint32_t stream, uint64_t step,
                                              uint32_t threshold, float scale, const TX *x, TY *y,
                                              unsigned char *mask, float *mask_f32)
{
    VCC_GRID_STRIDE(q, (n + 3) / 4) vcc_dropout_block_fwd(seed, stream, step, threshold, scale, q, n, x, y, mask, mask_f32);
}

template <class TD, class TX>
static __global__ void dropout_backward_kernel(int64_t n, uint64_t seed, uint32_t stream, uint64_t step,
                                               uint32_t threshold, float scale, const TD *dy, TX *dx)
{
    VCC_GRID_STRIDE(q, (n + 3) / 4) vcc_dropout_block_bwd(seed, stream, step, threshold, scale, q, n, dy, dx);
}

/* y may == x; d is a host descriptor, read here */
template <class TX, class TY>
static inline void dropout_forward(VccRt *rt, int64_t n, const VccDropoutDesc *d, const TX *x, TY *y,
                                   unsigned char *mask, float *mask_f32)
{
    if (n <= 0) return;
    dropout_forward_kernel<<<vcc__grid((n + 3) / 4), VCC_CUDA_THREADS>>>(
        n, d->own_seed ? d->seed : rt->seed, d->stream, rt->step, d->threshold, d->scale, x, y, mask, mask_f32);
    VCC_CUDA_LAUNCHED();
}

/* dx may == dy */
template <class TD, class TX>
static inline void dropout_backward(VccRt *rt, int64_t n, const VccDropoutDesc *d, const TD *dy, TX *dx)
{
    if (n <= 0) return;
    dropout_backward_kernel<<<vcc__grid((n + 3) / 4), VCC_CUDA_THREADS>>>(
        n, d->own_seed ? d->seed : rt->seed, d->stream, rt->step, d->threshold, d->scale, dy, dx);
    VCC_CUDA_LAUNCHED();
}

template <class TY>
static __global__ void random_like_forward_kernel(int64_t n, VccRandomDesc d, uint64_t seed, uint64_t step, TY *y)
{
    VCC_GRID_STRIDE(i, n) vcc_st(y, i, vcc_random_value(&d, seed, step, i));
}

/* random_like_forward: as the CPU kernel (cpu/dropout.h); d is a host descriptor, passed by value. y float,
 * or bfloat16 where the value it is like holds bfloat16 (vcc --precision bf16): each draw rounded once. */
template <class TY> static inline void random_like_forward(VccRt *rt, int64_t n, const VccRandomDesc *d, TY *y)
{
    if (n <= 0) return;
    random_like_forward_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(n, *d, d->own_seed ? d->seed : rt->seed, rt->step, y);
    VCC_CUDA_LAUNCHED();
}

#define VCC_KERNEL VCC_KERNEL_CHECK
#include "../proto/dropout.h"
#undef VCC_KERNEL

#endif /* VCC_CUDA_DROPOUT_CUH */
