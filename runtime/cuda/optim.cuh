/*
 * cuda/optim.cuh - the optim family's CUDA kernels: SGD with momentum, AdamW, and the global gradient
 * norm of --clip-grad-norm.
 * Signatures: proto/optim.h; per-element bodies shared with the C target: elem/optim.h. Part of the CUDA target's runtime (cuda/base.cuh).
 */
#ifndef VCC_CUDA_OPTIM_CUH
#define VCC_CUDA_OPTIM_CUH

#include "base.cuh"
#include "../elem/optim.h"

#define VCC_KERNEL VCC_KERNEL_DECLARE
#include "../proto/optim.h"
#undef VCC_KERNEL

static __global__ void sgd_update_kernel(int64_t n, float *p, const float *g, float *v, const double *scale, float lr,
                                         float momentum, float wd)
{
    float s = scale ? (float)*scale : 1.0f;
    VCC_GRID_STRIDE(i, n) {
        float none = 0.0f;
        vcc_sgd(&p[i], scale ? g[i] * s : g[i], v ? &v[i] : &none, lr, momentum, wd);
    }
}

/* p, g, v (n); v (the momentum buffer) may be NULL when momentum == 0; scale (device, the clip scale of
 * grad_clip_scale) multiplies g when not NULL */
static inline void sgd_update(VccRt *rt, int64_t n, float *p, const float *g, float *v, const double *scale, float lr,
                              float momentum, float wd)
{
    (void)rt;
    if (n <= 0) return;
    sgd_update_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(n, p, g, v, scale, lr, momentum, wd);
    VCC_CUDA_LAUNCHED();
}

static __global__ void adamw_update_kernel(int64_t n, float *p, const float *g, float *m, float *v,
                                           const double *scale, VccAdamwCoef c)
{
    float s = scale ? (float)*scale : 1.0f;
    VCC_GRID_STRIDE(i, n) vcc_adamw(&p[i], scale ? g[i] * s : g[i], &m[i], &v[i], &c);
}

/* p, g, m, v (n), device; c from vcc_adamw_coef; scale as sgd_update's */
static inline void adamw_update(VccRt *rt, int64_t n, float *p, const float *g, float *m, float *v,
                                const double *scale, VccAdamwCoef c)
{
    (void)rt;
    if (n <= 0) return;
    adamw_update_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(n, p, g, m, v, scale, c);
    VCC_CUDA_LAUNCHED();
}

/* one block: a fixed-order tree sum of the squares in float64, so the norm is the same run after run */
static __global__ void grad_sumsq_kernel(int64_t n, const float *g, double *acc, int first)
{
    __shared__ double part[VCC_CUDA_THREADS];
    double s = 0.0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += (double)g[i] * (double)g[i];
    part[threadIdx.x] = s;
    __syncthreads();
    for (unsigned w = blockDim.x / 2; w > 0; w >>= 1) {
        if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) acc[0] = first ? part[0] : acc[0] + part[0];
}

/* g (n), acc (1 double), device: acc[0] = (first ? 0 : acc[0]) + sum of g's squares */
static inline void grad_sumsq(VccRt *rt, int64_t n, const float *g, double *acc, int first)
{
    (void)rt;
    grad_sumsq_kernel<<<1, VCC_CUDA_THREADS>>>(n, g, acc, first);
    VCC_CUDA_LAUNCHED();
}

static __global__ void grad_clip_scale_kernel(double *c, double max_norm)
{
    if (threadIdx.x == 0 && blockIdx.x == 0) vcc_clip_scale(c, max_norm);
}

/* c (2 doubles, device): (sum of squares) -> (total norm, clip scale), vcc_clip_scale */
static inline void grad_clip_scale(VccRt *rt, double *c, double max_norm)
{
    (void)rt;
    grad_clip_scale_kernel<<<1, 1>>>(c, max_norm);
    VCC_CUDA_LAUNCHED();
}

#define VCC_KERNEL VCC_KERNEL_CHECK
#include "../proto/optim.h"
#undef VCC_KERNEL

#endif /* VCC_CUDA_OPTIM_CUH */
