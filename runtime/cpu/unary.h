/*
 * cpu/unary.h - the unary family's CPU kernels: Relu and ReluGrad.
 * Signatures: proto/unary.h; per-element bodies shared with the CUDA target: elem/unary.h. Part of the C target's runtime (cpu/base.h).
 */
#ifndef VCC_CPU_UNARY_H
#define VCC_CPU_UNARY_H

#include "base.h"
#include "../elem/unary.h"

#define VCC_KERNEL VCC_KERNEL_DECLARE
#include "../proto/unary.h"
#undef VCC_KERNEL

/* relu_forward: y = max(x, 0) elementwise (torch.relu, ONNX Relu; NaN
 * propagates). x, y (n); y may == x. */
VCC_CPU_FN void relu_forward(VccRt *rt, int64_t n, const float *x, float *y)
{
    int64_t i;
    (void)rt;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (i = 0; i < n; i++) y[i] = vcc_relu_fwd(x[i]);
}

/* relu_backward: dx = y > 0 ? dy : 0 from the forward OUTPUT y.
 * y, dy, dx (n); dx may == dy. */
VCC_CPU_FN void relu_backward(VccRt *rt, int64_t n, const float *y, const float *dy, float *dx)
{
    int64_t i;
    (void)rt;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (i = 0; i < n; i++) dx[i] = vcc_relu_bwd(y[i], dy[i]);
}

#define VCC_KERNEL VCC_KERNEL_CHECK
#include "../proto/unary.h"
#undef VCC_KERNEL

#endif /* VCC_CPU_UNARY_H */
