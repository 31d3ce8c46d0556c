/*
 * cuda/reduce.cuh - the reduce family's CUDA kernels: ReduceSum, ReduceMean, ReduceMax, ReduceMin,
 * their gradients, and ReduceToShape.
 * Signatures: proto/reduce.h; the arithmetic shared with the C target: elem/reduce.h. Part of the CUDA
 * target's runtime (cuda/base.cuh).
 *
 * A Y element that gathers at least VCC_REDUCE_BLOCK_MIN elements of X is one block's work (its threads
 * stride over the elements, then a fixed-order tree combines their partial results); smaller ones are a
 * thread's each. Either way the result is deterministic run to run.
 */
#ifndef VCC_CUDA_REDUCE_CUH
#define VCC_CUDA_REDUCE_CUH

#include "base.cuh"
#include "../elem/reduce.h"

#define VCC_KERNEL VCC_KERNEL_DECLARE
#include "../proto/reduce.h"
#undef VCC_KERNEL

#define VCC_REDUCE_BLOCK_MIN 64

/* vcc_reduce_step of every thread's v over the block in a fixed-order tree; sh holds VCC_CUDA_THREADS
 * doubles. Every thread of the block must call it; every thread gets the result. */
static __device__ __forceinline__ double vcc__block_reduce(int kind, double v, double *sh)
{
    unsigned t = threadIdx.x;
    unsigned s;
    sh[t] = v;
    __syncthreads();
    for (s = VCC_CUDA_THREADS / 2; s > 0; s >>= 1) {
        if (t < s) sh[t] = vcc_reduce_step(kind, sh[t], sh[t + s]);
        __syncthreads();
    }
    v = sh[0];
    __syncthreads();
    return v;
}

/* The data are float, or __nv_bfloat16 for the bfloat16 values of vcc --precision bf16 (vcc_ld / vcc_st,
 * elem/base.h); the reductions run in double either way. */

/* one block per Y element */
template <class TX, class TY>
static __global__ void reduce_forward_block_kernel(int kind, VccReduce d, float scale, const TX *x, TY *y)
{
    __shared__ double sh[VCC_CUDA_THREADS];
    for (int64_t o = blockIdx.x; o < d.nout; o += gridDim.x) {
        double acc = vcc_reduce_span(kind, &d, x, vcc_reduce_base(&d, o), threadIdx.x, blockDim.x);
        acc = vcc__block_reduce(kind, acc, sh);
        if (threadIdx.x == 0) vcc_st(y, o, vcc_reduce_result(kind, &d, acc, scale));
    }
}

/* one thread per Y element */
template <class TX, class TY>
static __global__ void reduce_forward_thread_kernel(int kind, VccReduce d, float scale, const TX *x, TY *y)
{
    VCC_GRID_STRIDE(o, d.nout) {
        const double acc = vcc_reduce_span(kind, &d, x, vcc_reduce_base(&d, o), 0, 1);
        vcc_st(y, o, vcc_reduce_result(kind, &d, acc, scale));
    }
}

template <class TX, class TY, class TD, class TG>
static __global__ void reduce_backward_block_kernel(int kind, VccReduce d, float scale, const TX *x,
                                                    const TY *y, const TD *dy, TG *dx)
{
    __shared__ double sh[VCC_CUDA_THREADS];
    const int ext = kind == VCC_RED_MAX || kind == VCC_RED_MIN;
    for (int64_t o = blockIdx.x; o < d.nout; o += gridDim.x) {
        const int64_t base = vcc_reduce_base(&d, o);
        const float yo = ext ? vcc_ld(y, o) : 0.0f;
        int64_t ties = 0;
        if (ext) {
            const double mine = (double)vcc_reduce_ties(&d, x, base, yo, threadIdx.x, blockDim.x);
            ties = (int64_t)vcc__block_reduce(VCC_RED_SUM, mine, sh);
        }
        vcc_reduce_scatter(kind, &d, x, yo, ties, vcc_ld(dy, o), scale, base, threadIdx.x, blockDim.x, dx);
    }
}

template <class TX, class TY, class TD, class TG>
static __global__ void reduce_backward_thread_kernel(int kind, VccReduce d, float scale, const TX *x,
                                                     const TY *y, const TD *dy, TG *dx)
{
    const int ext = kind == VCC_RED_MAX || kind == VCC_RED_MIN;
    VCC_GRID_STRIDE(o, d.nout) {
        const int64_t base = vcc_reduce_base(&d, o);
        const float yo = ext ? vcc_ld(y, o) : 0.0f;
        const int64_t ties = ext ? vcc_reduce_ties(&d, x, base, yo, 0, 1) : 0;
        vcc_reduce_scatter(kind, &d, x, yo, ties, vcc_ld(dy, o), scale, base, 0, 1, dx);
    }
}

template <class TX, class TY>
static inline void reduce_forward(VccRt *rt, int kind, const VccReduce *d, float scale, const TX *x, TY *y)
{
    (void)rt;
    if (d->nout <= 0) return;
    if (d->nred >= VCC_REDUCE_BLOCK_MIN)
        reduce_forward_block_kernel<<<vcc__blocks(d->nout), VCC_CUDA_THREADS>>>(kind, *d, scale, x, y);
    else
        reduce_forward_thread_kernel<<<vcc__grid(d->nout), VCC_CUDA_THREADS>>>(kind, *d, scale, x, y);
    VCC_CUDA_LAUNCHED();
}

/* dx is OVERWRITTEN; x and y are read for MAX and MIN only (NULL otherwise: x then takes dx's type, y dy's) */
template <class TD, class TG>
static inline void reduce_backward(VccRt *rt, int kind, const VccReduce *d, float scale,
                                   const typename VccSame<TG>::type *x, const typename VccSame<TD>::type *y,
                                   const TD *dy, TG *dx)
{
    (void)rt;
    if (d->nout <= 0) return;
    if (d->nred >= VCC_REDUCE_BLOCK_MIN)
        reduce_backward_block_kernel<<<vcc__blocks(d->nout), VCC_CUDA_THREADS>>>(kind, *d, scale, x, y, dy, dx);
    else
        reduce_backward_thread_kernel<<<vcc__grid(d->nout), VCC_CUDA_THREADS>>>(kind, *d, scale, x, y, dy, dx);
    VCC_CUDA_LAUNCHED();
}

#define VCC_KERNEL VCC_KERNEL_CHECK
#include "../proto/reduce.h"
#undef VCC_KERNEL

#endif /* VCC_CUDA_REDUCE_CUH */
