/*
 * cuda/unary.cuh - the unary family's CUDA kernels: Relu and ReluGrad.
 * Signatures: proto/unary.h; per-element bodies shared with the C target: elem/unary.h. Part of the CUDA target's runtime (cuda/base.cuh).
 */
#ifndef VCC_CUDA_UNARY_CUH
#define VCC_CUDA_UNARY_CUH

#include "base.cuh"
#include "../elem/unary.h"

#define VCC_KERNEL VCC_KERNEL_DECLARE
#include "../proto/unary.h"
#undef VCC_KERNEL

static __global__ void relu_forward_kernel(int64_t n, const float *x, float *y)
{
    VCC_GRID_STRIDE(i, n) y[i] = vcc_relu_fwd(x[i]);
}

static __global__ void relu_backward_kernel(int64_t n, const float *y, const float *dy, float *dx)
{
    VCC_GRID_STRIDE(i, n) dx[i] = vcc_relu_bwd(y[i], dy[i]);
}

/* y may == x */
static inline void relu_forward(VccRt *rt, int64_t n, const float *x, float *y)
{
    (void)rt;
    if (n <= 0) return;
    relu_forward_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(n, x, y);
    VCC_CUDA_LAUNCHED();
}

/* dx may == dy */
static inline void relu_backward(VccRt *rt, int64_t n, const float *y, const float *dy, float *dx)
{
    (void)rt;
    if (n <= 0) return;
    relu_backward_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(n, y, dy, dx);
    VCC_CUDA_LAUNCHED();
}

#define VCC_KERNEL VCC_KERNEL_CHECK
#include "../proto/unary.h"
#undef VCC_KERNEL

#endif /* VCC_CUDA_UNARY_CUH */
