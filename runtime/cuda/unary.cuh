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

/* Every kernel of the family is a template over its tensors' element types (float, or __nv_bfloat16 for
 * the bfloat16 values of vcc --precision bf16): elements are read with vcc_ld and stored with vcc_st
 * (elem/base.h), the arithmetic is float32 either way. */
template <class TX, class TY> static __global__ void relu_forward_kernel(int64_t n, const TX *x, TY *y)
{
    VCC_GRID_STRIDE(i, n) vcc_st(y, i, vcc_relu_fwd(vcc_ld(x, i)));
}

template <class TV, class TD, class TX>
static __global__ void relu_backward_kernel(int64_t n, const TV *y, const TD *dy, TX *dx)
{
    VCC_GRID_STRIDE(i, n) vcc_st(dx, i, vcc_relu_bwd(vcc_ld(y, i), vcc_ld(dy, i)));
}

/* y may == x */
template <class TX, class TY> static inline void relu_forward(VccRt *rt, int64_t n, const TX *x, TY *y)
{
    (void)rt;
    if (n <= 0) return;
    relu_forward_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(n, x, y);
    VCC_CUDA_LAUNCHED();
}

/* dx may == dy */
template <class TV, class TD, class TX>
static inline void relu_backward(VccRt *rt, int64_t n, const TV *y, const TD *dy, TX *dx)
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
    template <class TX, class TY>                                                                      \
    static __global__ void op##_forward_kernel(int64_t n, float a, float b, const TX *x, TY *y)        \
    {                                                                                                  \
        VCC_GRID_STRIDE(i, n) vcc_st(y, i, vcc_##op##_fwd(vcc_ld(x, i), a, b));                        \
    }                                                                                                  \
    template <class TX, class TY>                                                                      \
    static inline void op##_forward(VccRt *rt, int64_t n, float a, float b, const TX *x, TY *y)        \
    {                                                                                                  \
        (void)rt;                                                                                      \
        if (n <= 0) return;                                                                            \
        op##_forward_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(n, a, b, x, y);                        \
        VCC_CUDA_LAUNCHED();                                                                           \
    }
#define VCC_CUDA_UNARY(op)                                                                             \
    VCC_CUDA_UNARY_FORWARD(op)                                                                         \
    template <class TV, class TD, class TX>                                                            \
    static __global__ void op##_backward_kernel(int64_t n, float a, float b, const TV *v, const TD *dy, TX *dx) \
    {                                                                                                  \
        VCC_GRID_STRIDE(i, n) vcc_st(dx, i, vcc_##op##_bwd(vcc_ld(v, i), vcc_ld(dy, i), a, b));        \
    }                                                                                                  \
    template <class TV, class TD, class TX>                                                            \
    static inline void op##_backward(VccRt *rt, int64_t n, float a, float b, const TV *v, const TD *dy, TX *dx) \
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
