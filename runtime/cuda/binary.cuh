/*
 * cuda/binary.cuh - the binary family's CUDA kernels: Add and GradAccumulate.
 * Signatures: proto/binary.h. Part of the CUDA target's runtime (cuda/base.cuh).
 */
#ifndef VCC_CUDA_BINARY_CUH
#define VCC_CUDA_BINARY_CUH

#include "base.cuh"

#define VCC_KERNEL VCC_KERNEL_DECLARE
#include "../proto/binary.h"
#undef VCC_KERNEL

static __global__ void add_forward_kernel(int64_t n, const float *a, const float *b, float *y)
{
    VCC_GRID_STRIDE(i, n) y[i] = a[i] + b[i];
}

/* y may == a or b */
static inline void add_forward(VccRt *rt, int64_t n, const float *a, const float *b, float *y)
{
    (void)rt;
    if (n <= 0) return;
    add_forward_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(n, a, b, y);
    VCC_CUDA_LAUNCHED();
}

#define VCC_KERNEL VCC_KERNEL_CHECK
#include "../proto/binary.h"
#undef VCC_KERNEL

#endif /* VCC_CUDA_BINARY_CUH */
