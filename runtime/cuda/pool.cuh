/*
 * cuda/pool.cuh - the pool family's CUDA kernels: GlobalAveragePool and its gradient.
 * Signatures: proto/pool.h. Part of the CUDA target's runtime (cuda/base.cuh).
 */
#ifndef VCC_CUDA_POOL_CUH
#define VCC_CUDA_POOL_CUH

#include "base.cuh"

#define VCC_KERNEL VCC_KERNEL_DECLARE
#include "../proto/pool.h"
#undef VCC_KERNEL

/* y[r] = mean of x (NC, S) row r; one block per row */
static __global__ void global_avgpool_forward_kernel(int64_t NC, int64_t S, const float *x, float *y)
{
    __shared__ double sh[VCC_CUDA_THREADS];
    for (int64_t r = blockIdx.x; r < NC; r += gridDim.x) {
        double acc = 0.0;
        const float *row = x + r * S;
        for (int64_t s = threadIdx.x; s < S; s += blockDim.x) acc += (double)row[s];
        acc = vcc__block_sum(acc, sh);
        if (threadIdx.x == 0) y[r] = (float)(acc / (double)S);
    }
}

/* dx (NC, S) = dy[r] / S */
static __global__ void global_avgpool_backward_kernel(int64_t n, int64_t S, const float *dy, float *dx)
{
    VCC_GRID_STRIDE(i, n) dx[i] = dy[i / S] / (float)S;
}

static inline void global_avgpool_forward(VccRt *rt, int64_t NC, int64_t S, const float *x, float *y)
{
    (void)rt;
    if (NC <= 0 || S <= 0) return;
    global_avgpool_forward_kernel<<<vcc__blocks(NC), VCC_CUDA_THREADS>>>(NC, S, x, y);
    VCC_CUDA_LAUNCHED();
}

static inline void global_avgpool_backward(VccRt *rt, int64_t NC, int64_t S, const float *dy, float *dx)
{
    (void)rt;
    if (NC <= 0 || S <= 0) return;
    global_avgpool_backward_kernel<<<vcc__grid(NC * S), VCC_CUDA_THREADS>>>(NC * S, S, dy, dx);
    VCC_CUDA_LAUNCHED();
}

#define VCC_KERNEL VCC_KERNEL_CHECK
#include "../proto/pool.h"
#undef VCC_KERNEL

#endif /* VCC_CUDA_POOL_CUH */
