/*
 * cpu/unary.h - the unary family's CPU kernels: Relu, Sigmoid, HardSigmoid, HardSwish, Tanh, LeakyRelu,
 * Clip, Softplus, Elu, Neg, Exp, Log, Sqrt, Sin, Cos, Abs, Reciprocal, Erf and their gradients.
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
    VCC_CPU_PARALLEL_MAP
    for (i = 0; i < n; i++) y[i] = vcc_relu_fwd(x[i]);
}

/* relu_backward: dx = y > 0 ? dy : 0 from the forward OUTPUT y.
 * y, dy, dx (n); dx may == dy. */
VCC_CPU_FN void relu_backward(VccRt *rt, int64_t n, const float *y, const float *dy, float *dx)
{
    int64_t i;
    (void)rt;
    VCC_CPU_PARALLEL_MAP
    for (i = 0; i < n; i++) dx[i] = vcc_relu_bwd(y[i], dy[i]);
}

/* The loop of every other op, written once (OpenMP-parallel under -fopenmp):
 *   <op>_forward(rt, n, a, b, x, y):      y[i] = vcc_<op>_fwd(x[i], a, b)       x, y (n); y may == x
 *   <op>_backward(rt, n, a, b, v, dy, dx): dx[i] = vcc_<op>_bwd(v[i], dy[i], a, b) v, dy, dx (n); dx may
 *                                         == dy or v
 * a, b: the op's attributes; v: the forward input or output, as elem/unary.h says per op. */
#define VCC_CPU_UNARY_PARALLEL VCC_CPU_PARALLEL_MAP
#define VCC_CPU_UNARY_FORWARD(op)                                                                      \
    VCC_CPU_FN void op##_forward(VccRt *rt, int64_t n, float a, float b, const float *x, float *y)     \
    {                                                                                                  \
        int64_t i;                                                                                     \
        (void)rt;                                                                                      \
        VCC_CPU_UNARY_PARALLEL                                                                         \
        for (i = 0; i < n; i++) y[i] = vcc_##op##_fwd(x[i], a, b);                                     \
    }
#define VCC_CPU_UNARY(op)                                                                              \
    VCC_CPU_UNARY_FORWARD(op)                                                                          \
    VCC_CPU_FN void op##_backward(VccRt *rt, int64_t n, float a, float b, const float *v, const float *dy, \
                                  float *dx)                                                           \
    {                                                                                                  \
        int64_t i;                                                                                     \
        (void)rt;                                                                                      \
        VCC_CPU_UNARY_PARALLEL                                                                         \
        for (i = 0; i < n; i++) dx[i] = vcc_##op##_bwd(v[i], dy[i], a, b);                             \
    }

VCC_CPU_UNARY(sigmoid)
VCC_CPU_UNARY(hardsigmoid)
VCC_CPU_UNARY(hardswish)
VCC_CPU_UNARY(tanh)
VCC_CPU_UNARY(leakyrelu)
VCC_CPU_UNARY(clip)
VCC_CPU_UNARY(softplus)
VCC_CPU_UNARY(elu)
VCC_CPU_UNARY_FORWARD(neg) /* Neg's gradient is a Neg */
VCC_CPU_UNARY(exp)
VCC_CPU_UNARY(log)
VCC_CPU_UNARY(sqrt)
VCC_CPU_UNARY(sin)
VCC_CPU_UNARY(cos)
VCC_CPU_UNARY(abs)
VCC_CPU_UNARY_FORWARD(floor) /* no gradient */
VCC_CPU_UNARY(reciprocal)
VCC_CPU_UNARY(erf)
VCC_CPU_UNARY(gelu)
VCC_CPU_UNARY(swish)

#define VCC_KERNEL VCC_KERNEL_CHECK
#include "../proto/unary.h"
#undef VCC_KERNEL

#endif /* VCC_CPU_UNARY_H */
