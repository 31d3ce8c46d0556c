/*
 * cuda/softmax.cuh - the softmax family's CUDA kernels: Softmax, LogSoftmax and their gradients.
 * Signatures: proto/softmax.h; per-element bodies shared with the C target: elem/softmax.h. Part of the
 * CUDA target's runtime (cuda/base.cuh).
 */
#ifndef VCC_CUDA_SOFTMAX_CUH
#define VCC_CUDA_SOFTMAX_CUH

#include "base.cuh"
#include "../elem/softmax.h"

#define VCC_KERNEL VCC_KERNEL_DECLARE
#include "../proto/softmax.h"
#undef VCC_KERNEL

/* One warp per row (rows r = o * inner + i, the row's first element at o * D * inner + i, stride inner):
 * lane l reads the row's elements l, l + 32, ...; the max and the double sums are
 * combined across the warp by butterfly shuffles (every lane ends with the row's value). The row loop
 * is uniform within a warp (the block size is a multiple of 32), so every shuffle has all 32 lanes. */
static __device__ __forceinline__ double vcc__warp_sum(double v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

template <class TX, class TY>
static __global__ void softmax_forward_kernel(int lg, int64_t rows, int64_t D, int64_t inner, const TX *x, TY *y)
{
    const int lane = threadIdx.x & 31;
    const int64_t step = ((int64_t)blockDim.x * gridDim.x) >> 5;
    for (int64_t r = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5; r < rows; r += step) {
        const int64_t base = (r / inner) * D * inner + r % inner;
        float m = -INFINITY;
        double s = 0.0;
        for (int64_t j = lane; j < D; j += 32)
            if (vcc_ld(x, base + j * inner) > m) m = vcc_ld(x, base + j * inner);
        for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
        for (int64_t j = lane; j < D; j += 32) s += (double)expf(vcc_ld(x, base + j * inner) - m);
        s = vcc__warp_sum(s);
        for (int64_t j = lane; j < D; j += 32)
            vcc_st(y, base + j * inner, vcc_softmax_out(lg, vcc_ld(x, base + j * inner), m, s));
    }
}

template <class TY, class TD, class TX>
static __global__ void softmax_backward_kernel(int lg, int64_t rows, int64_t D, int64_t inner, const TY *y,
                                               const TD *dy, TX *dx)
{
    const int lane = threadIdx.x & 31;
    const int64_t step = ((int64_t)blockDim.x * gridDim.x) >> 5;
    for (int64_t r = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5; r < rows; r += step) {
        const int64_t base = (r / inner) * D * inner + r % inner;
        double s = 0.0;
        for (int64_t j = lane; j < D; j += 32)
            s += vcc_softmax_dot(lg, vcc_ld(y, base + j * inner), vcc_ld(dy, base + j * inner));
        s = vcc__warp_sum(s);
        for (int64_t j = lane; j < D; j += 32)
            vcc_st(dx, base + j * inner,
                   vcc_softmax_bwd(lg, vcc_ld(y, base + j * inner), vcc_ld(dy, base + j * inner), s));
    }
}

/* softmax_forward: ONNX Softmax (lg 0) / LogSoftmax (lg 1) of x viewed as (outer, D, inner), normalized
 * along D for each (outer, inner) row; y overwritten, y != x. x, y, dy, dx float or bfloat16 (vcc
 * --precision bf16: Softmax on autocast's float32 list reads a bfloat16 product), sums in double. */
template <class TX, class TY>
static inline void softmax_forward(VccRt *rt, int lg, int64_t outer, int64_t D, int64_t inner, const TX *x, TY *y)
{
    (void)rt;
    if (outer * inner <= 0 || D <= 0) return;
    softmax_forward_kernel<<<vcc__grid(outer * inner * 32), VCC_CUDA_THREADS>>>(lg, outer * inner, D, inner, x, y);
    VCC_CUDA_LAUNCHED();
}

/* softmax_backward: the gradient of softmax_forward from its OUTPUT y and dy: softmax
 * dx = y * (dy - sum(dy * y)), log-softmax dx = dy - exp(y) * sum(dy), row sums in double. */
template <class TY, class TD, class TX>
static inline void softmax_backward(VccRt *rt, int lg, int64_t outer, int64_t D, int64_t inner, const TY *y,
                                    const TD *dy, TX *dx)
{
    (void)rt;
    if (outer * inner <= 0 || D <= 0) return;
    softmax_backward_kernel<<<vcc__grid(outer * inner * 32), VCC_CUDA_THREADS>>>(lg, outer * inner, D, inner, y,
                                                                                 dy, dx);
    VCC_CUDA_LAUNCHED();
}

#define VCC_KERNEL VCC_KERNEL_CHECK
#include "../proto/softmax.h"
#undef VCC_KERNEL

#endif /* VCC_CUDA_SOFTMAX_CUH */
