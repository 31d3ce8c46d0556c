/*
 * cuda/pool.cuh - the pool family's CUDA kernels: MaxPool, AveragePool (and GlobalMaxPool, a MaxPool
 * whose window is the whole plane), GlobalAveragePool, and their gradients.
 * Signatures: proto/pool.h; per-window bodies shared with the C target: elem/pool.h. Part of the CUDA
 * target's runtime (cuda/base.cuh).
 */
#ifndef VCC_CUDA_POOL_CUH
#define VCC_CUDA_POOL_CUH

#include "base.cuh"
#include "../elem/pool.h"

#define VCC_KERNEL VCC_KERNEL_DECLARE
#include "../proto/pool.h"
#undef VCC_KERNEL

/* The kernels are templates over their tensors' element types (float, or __nv_bfloat16 for the bfloat16
 * values of vcc --precision bf16; vcc_ld / vcc_st, elem/base.h); sums stay in double either way. */

/* y[r] = mean of x (NC, S) row r; one block per row */
template <class TX, class TY>
static __global__ void global_avgpool_forward_kernel(int64_t NC, int64_t S, const TX *x, TY *y)
{
    __shared__ double sh[VCC_CUDA_THREADS];
    for (int64_t r = blockIdx.x; r < NC; r += gridDim.x) {
        double acc = 0.0;
        const TX *row = x + r * S;
        for (int64_t s = threadIdx.x; s < S; s += blockDim.x) acc += (double)vcc_ld(row, s);
        acc = vcc__block_sum(acc, sh);
        if (threadIdx.x == 0) vcc_st(y, r, (float)(acc / (double)S));
    }
}

/* dx (NC, S) = dy[r] / S */
template <class TD, class TX>
static __global__ void global_avgpool_backward_kernel(int64_t n, int64_t S, const TD *dy, TX *dx)
{
    VCC_GRID_STRIDE(i, n) vcc_st(dx, i, vcc_ld(dy, i / S) / (float)S);
}

template <class TX, class TY>
static inline void global_avgpool_forward(VccRt *rt, int64_t NC, int64_t S, const TX *x, TY *y)
{
    (void)rt;
    if (NC <= 0 || S <= 0) return;
    global_avgpool_forward_kernel<<<vcc__blocks(NC), VCC_CUDA_THREADS>>>(NC, S, x, y);
    VCC_CUDA_LAUNCHED();
}

template <class TD, class TX>
static inline void global_avgpool_backward(VccRt *rt, int64_t NC, int64_t S, const TD *dy, TX *dx)
{
    (void)rt;
    if (NC <= 0 || S <= 0) return;
    global_avgpool_backward_kernel<<<vcc__grid(NC * S), VCC_CUDA_THREADS>>>(NC * S, S, dy, dx);
    VCC_CUDA_LAUNCHED();
}

/* one thread per output of every plane: vcc_pool_window (max or average); the max's flat tap index into
 * arg and/or its ONNX index into indices when given */
template <class TX, class TY>
static __global__ void pool_windows_kernel(VccPoolDesc d, int is_max, const TX *x, TY *y, int32_t *arg,
                                           int64_t *indices, int storage_order)
{
    const int64_t Si = d.in[0] * d.in[1] * d.in[2], So = d.out[0] * d.out[1] * d.out[2];
    VCC_GRID_STRIDE(k, d.NC * So) {
        const int64_t p = k / So;
        float v;
        const int64_t a = vcc_pool_window(&d, x + p * Si, k % So, is_max, &v);
        if (y) vcc_st(y, k, v);
        if (arg) arg[k] = (int32_t)a;
        if (indices) indices[k] = a < 0 ? -1 : vcc_maxpool_onnx_index(&d, p, a, storage_order);
    }
}

/* one thread per input element: vcc_pool_dx (arg: the argmax per output, or NULL for an average) */
template <class TD, class TX>
static __global__ void pool_dx_kernel(VccPoolDesc d, const int32_t *arg, const TD *dy, TX *dx)
{
    const int64_t Si = d.in[0] * d.in[1] * d.in[2], So = d.out[0] * d.out[1] * d.out[2];
    VCC_GRID_STRIDE(k, d.NC * Si) {
        const int64_t p = k / Si;
        vcc_st(dx, k, vcc_pool_dx(&d, arg ? arg + p * So : NULL, dy + p * So, k % Si));
    }
}

template <class TX, class TY>
static inline void vcc__pool_windows(const VccPoolDesc *d, int is_max, const TX *x, TY *y, int32_t *arg,
                                     int64_t *indices, int storage_order)
{
    const int64_t n = d->NC * d->out[0] * d->out[1] * d->out[2];
    if (n <= 0) return;
    pool_windows_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(*d, is_max, x, y, arg, indices, storage_order);
    VCC_CUDA_LAUNCHED();
}

template <class TD, class TX>
static inline void vcc__pool_dx(const VccPoolDesc *d, const int32_t *arg, const TD *dy, TX *dx)
{
    const int64_t n = d->NC * d->in[0] * d->in[1] * d->in[2];
    if (n <= 0) return;
    pool_dx_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(*d, arg, dy, dx);
    VCC_CUDA_LAUNCHED();
}

/* maxpool_forward: y (N, C, out...) = the max of each window of x (N, C, in...); indices (int64, or NULL):
 * ONNX's Indices output (storage_order 0 row-major, 1 column-major). As cpu/pool.h. */
template <class TX, class TY>
static inline void maxpool_forward(VccRt *rt, const VccPoolDesc *d, const TX *x, TY *y, int64_t *indices,
                                   int storage_order)
{
    (void)rt;
    vcc__pool_windows(d, 1, x, y, NULL, indices, storage_order);
}

/* maxpool_backward: dx = dy routed to each window's argmax in x (OVERWRITTEN); argmax (N*C*prod(out)
 * int32) is scratch. As cpu/pool.h: argmax per output, then a gather per input element, no atomics. */
template <class TX, class TD, class TG>
static inline void maxpool_backward(VccRt *rt, const VccPoolDesc *d, const TX *x, const TD *dy, TG *dx,
                                    int32_t *argmax)
{
    (void)rt;
    vcc__pool_windows(d, 1, x, (TX *)NULL, argmax, NULL, 0);
    vcc__pool_dx(d, argmax, dy, dx);
}

/* avgpool_forward: y (N, C, out...) = the mean of each window of x (N, C, in...). As cpu/pool.h. */
template <class TX, class TY> static inline void avgpool_forward(VccRt *rt, const VccPoolDesc *d, const TX *x, TY *y)
{
    (void)rt;
    vcc__pool_windows(d, 0, x, y, NULL, NULL, 0);
}

/* avgpool_backward: dx = sum over the windows holding each element of dy / divisor (OVERWRITTEN). */
template <class TD, class TX> static inline void avgpool_backward(VccRt *rt, const VccPoolDesc *d, const TD *dy, TX *dx)
{
    (void)rt;
    vcc__pool_dx(d, NULL, dy, dx);
}

#define VCC_KERNEL VCC_KERNEL_CHECK
#include "../proto/pool.h"
#undef VCC_KERNEL

#endif /* VCC_CUDA_POOL_CUH */
