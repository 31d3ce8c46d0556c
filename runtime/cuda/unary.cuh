/*
 * cuda/unary.cuh - the unary family's CUDA kernels: Relu, Sigmoid, HardSigmoid, HardSwish, Tanh,
 * LeakyRelu, Clip, Softplus, Elu, Neg, Exp, Log, Sqrt, Sin, Cos, Abs, Reciprocal, Erf and their
 * gradients.
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

/* The kernel and launcher of every other op, written once: one thread per element (grid-stride),
 *   <op>_forward(rt, n, a, b, x, y):      y[i] = vcc_<op>_fwd(x[i], a, b)       y may == x
 *   <op>_backward(rt, n, a, b, v, dy, dx): dx[i] = vcc_<op>_bwd(v[i], dy[i], a, b) dx may == dy or v
 * with the arguments of cpu/unary.h. */
#define VCC_CUDA_UNARY_FORWARD(op)                                                                     \
    static __global__ void op##_forward_kernel(int64_t n, float a, float b, const float *x, float *y)  \
    {                                                                                                  \
        VCC_GRID_STRIDE(i, n) y[i] = vcc_##op##_fwd(x[i], a, b);                                       \
    }                                                                                                  \
    static inline void op##_forward(VccRt *rt, int64_t n, float a, float b, const float *x, float *y)  \
    {                                                                                                  \
        (void)rt;                                                                                      \
        if (n <= 0) return;                                                                            \
        op##_forward_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(n, a, b, x, y);                        \
        VCC_CUDA_LAUNCHED();                                                                           \
    }
#define VCC_CUDA_UNARY(op)                                                                             \
    VCC_CUDA_UNARY_FORWARD(op)                                                                         \
    static __global__ void op##_backward_kernel(int64_t n, float a, float b, const float *v, const float *dy, \
                                                float *dx)                                             \
    {                                                                                                  \
        VCC_GRID_STRIDE(i, n) dx[i] = vcc_##op##_bwd(v[i], dy[i], a, b);                               \
    }                                                                                                  \
    static inline void op##_backward(VccRt *rt, int64_t n, float a, float b, const float *v, const float *dy, \
                                     float *dx)                                                        \
    {                                                                                                  \
        (void)rt;                                                                                      \
        if (n <= 0) return;                                                                            \
        op##_backward_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(n, a, b, v, dy, dx);                  \
        VCC_CUDA_LAUNCHED();                                                                           \
    }

VCC_CUDA_UNARY(sigmoid)
VCC_CUDA_UNARY(hardsigmoid)
VCC_CUDA_UNARY(hardswish)
VCC_CUDA_UNARY(tanh)
VCC_CUDA_UNARY(leakyrelu)
VCC_CUDA_UNARY(clip)
VCC_CUDA_UNARY(softplus)
VCC_CUDA_UNARY(elu)
VCC_CUDA_UNARY_FORWARD(neg) /* Neg's gradient is a Neg */
VCC_CUDA_UNARY(exp)
VCC_CUDA_UNARY(log)
VCC_CUDA_UNARY(sqrt)
VCC_CUDA_UNARY(sin)
VCC_CUDA_UNARY(cos)
VCC_CUDA_UNARY(abs)
VCC_CUDA_UNARY_FORWARD(floor) /* no gradient */
VCC_CUDA_UNARY(reciprocal)
VCC_CUDA_UNARY(erf)
VCC_CUDA_UNARY(gelu)
VCC_CUDA_UNARY(swish)

#define VCC_KERNEL VCC_KERNEL_CHECK
#include "../proto/unary.h"
#undef VCC_KERNEL

#endif /* VCC_CUDA_UNARY_CUH */
