/*
 * cuda/norm.cuh - the norm family's CUDA kernels: BatchNormalization (training and inference forms) and its
 * gradients; the row normalizations (InstanceNormalization, GroupNormalization, LayerNormalization) and
 * their gradient.
 * Signatures: proto/norm.h; per-element bodies shared with the C target: elem/norm.h. Part of the CUDA target's runtime (cuda/base.cuh).
 */
#ifndef VCC_CUDA_NORM_CUH
#define VCC_CUDA_NORM_CUH

#include "base.cuh"
#include "../elem/norm.h"

#define VCC_KERNEL VCC_KERNEL_DECLARE
#include "../proto/norm.h"
#undef VCC_KERNEL

/* Per channel c (one block each): two-pass mean and biased variance over the
 * m = N*S elements of x (N, C, S), in double; save_mean, save_invstd; the
 * running statistics (ONNX momentum, unbiased variance as PyTorch). */
template <class TX>
static __global__ void batchnorm_forward_train_stats_kernel(int64_t N, int64_t C, int64_t S, const TX *x,
                                                            float *running_mean, float *running_var,
                                                            float momentum, float eps, int unbiased,
                                                            float *save_mean, float *save_invstd)
{
    __shared__ double sh[VCC_CUDA_THREADS];
    const int64_t m = N * S;
    for (int64_t c = blockIdx.x; c < C; c += gridDim.x) {
        double acc = 0.0, mean, var;
        for (int64_t n = 0; n < N; n++) {
            const TX *row = x + (n * C + c) * S;
            for (int64_t s = threadIdx.x; s < S; s += blockDim.x) acc += (double)vcc_ld(row, s);
        }
        mean = vcc__block_sum(acc, sh) / (double)m;
        acc = 0.0;
        for (int64_t n = 0; n < N; n++) {
            const TX *row = x + (n * C + c) * S;
            for (int64_t s = threadIdx.x; s < S; s += blockDim.x) {
                double dv = (double)vcc_ld(row, s) - mean;
                acc += dv * dv;
            }
        }
        var = vcc__block_sum(acc, sh) / (double)m;
        if (threadIdx.x == 0) {
            double v = unbiased && m > 1 ? var * (double)m / (double)(m - 1) : var;
            save_mean[c] = (float)mean;
            save_invstd[c] = (float)(1.0 / sqrt(var + (double)eps));
            if (running_mean)
                running_mean[c] = (float)((double)running_mean[c] * (double)momentum +
                                          mean * (1.0 - (double)momentum));
            if (running_var)
                running_var[c] = (float)((double)running_var[c] * (double)momentum + v * (1.0 - (double)momentum));
        }
    }
}

template <class TX, class TY>
static __global__ void batchnorm_forward_train_kernel(int64_t n, int64_t C, int64_t S, const TX *x,
                                                      const float *gamma, const float *beta, const float *mean,
                                                      const float *invstd, TY *y)
{
    VCC_GRID_STRIDE(i, n) {
        int64_t c = (i / S) % C;
        vcc_st(y, i, vcc_bn_norm(vcc_ld(x, i), mean[c], invstd[c], gamma[c], beta[c]));
    }
}

/* batchnorm_forward_train: x, y (N, C, S); gamma, beta, running_*, save_* (C).
 * y may == x; the running variance takes the unbiased batch variance when unbiased
 * (PyTorch), else the biased one (ONNX). x and y float or bfloat16 (vcc --precision bf16: y holds what
 * x holds), the parameters and statistics float32, the statistics summed in double either way. */
template <class TX, class TY>
static inline void batchnorm_forward_train(VccRt *rt, int64_t N, int64_t C, int64_t S, const TX *x,
                                           const float *gamma, const float *beta, float *running_mean,
                                           float *running_var, float momentum, float eps, int unbiased,
                                           TY *y, float *save_mean, float *save_invstd)
{
    int64_t n = N * C * S;
    (void)rt;
    if (n <= 0) return;
    batchnorm_forward_train_stats_kernel<<<vcc__blocks(C), VCC_CUDA_THREADS>>>(
        N, C, S, x, running_mean, running_var, momentum, eps, unbiased, save_mean, save_invstd);
    VCC_CUDA_LAUNCHED();
    batchnorm_forward_train_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(n, C, S, x, gamma, beta, save_mean,
                                                                       save_invstd, y);
    VCC_CUDA_LAUNCHED();
}

/* batchnorm_apply: the normalization kernel of batchnorm_forward_train alone, with the statistics it saved
 * (bit-identical y; no statistics, no running update: passes/remat.c's recomputation).
 * x, y (N, C, S), y may == x; gamma, beta, save_mean, save_invstd (C). */
template <class TX, class TY>
static inline void batchnorm_apply(VccRt *rt, int64_t N, int64_t C, int64_t S, const TX *x, const float *gamma,
                                   const float *beta, const float *save_mean, const float *save_invstd, TY *y)
{
    int64_t n = N * C * S;
    (void)rt;
    if (n <= 0) return;
    batchnorm_forward_train_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(n, C, S, x, gamma, beta, save_mean,
                                                                       save_invstd, y);
    VCC_CUDA_LAUNCHED();
}

template <class TX, class TY>
static __global__ void batchnorm_forward_infer_kernel(int64_t n, int64_t C, int64_t S, const TX *x,
                                                      const float *gamma, const float *beta, const float *mean,
                                                      const float *var, float eps, TY *y)
{
    VCC_GRID_STRIDE(i, n) {
        int64_t c = (i / S) % C;
        vcc_st(y, i, vcc_bn_norm(vcc_ld(x, i), mean[c], vcc_bn_invstd(var[c], eps), gamma[c], beta[c]));
    }
}

/* batchnorm_forward_infer: inference form with given statistics (ONNX training_mode=0);
 * x, y (N, C, S), y may == x; gamma, beta, mean, var (C). */
template <class TX, class TY>
static inline void batchnorm_forward_infer(VccRt *rt, int64_t N, int64_t C, int64_t S, const TX *x,
                                           const float *gamma, const float *beta, const float *mean,
                                           const float *var, float eps, TY *y)
{
    int64_t n = N * C * S;
    (void)rt;
    if (n <= 0) return;
    batchnorm_forward_infer_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(n, C, S, x, gamma, beta, mean, var, eps, y);
    VCC_CUDA_LAUNCHED();
}

/* Channel c of x, dy (N, C, S), summed by the block: *sdy = sum dy, *sdyx = sum dy*(x - mean), in
 * double (every thread gets both; every thread of the block must call it). */
template <class TX, class TD>
static __device__ __forceinline__ void vcc__bn_channel_sums(int64_t N, int64_t C, int64_t S, int64_t c,
                                                            const TX *x, const TD *dy, float mean,
                                                            double *sh, double *sdy_out, double *sdyx_out)
{
    double sdy = 0.0, sdyx = 0.0;
    for (int64_t n = 0; n < N; n++) {
        const int64_t off = (n * C + c) * S;
        for (int64_t s = threadIdx.x; s < S; s += blockDim.x) {
            double g = (double)vcc_ld(dy, off + s);
            sdy += g;
            sdyx += g * ((double)vcc_ld(x, off + s) - (double)mean);
        }
    }
    *sdy_out = vcc__block_sum(sdy, sh);
    *sdyx_out = vcc__block_sum(sdyx, sh);
}

/* Per channel (one block each): sum_dy = sum dy, sum_dy_xhat = invstd * sum dy*(x - mean)
 * in double, written to dbeta / dgamma. When in_block (dgamma or dbeta is NULL,
 * so there is nowhere to leave the sums) the block also writes its channel's dx. */
template <class TX, class TD, class TG>
static __global__ void batchnorm_backward_reduce_kernel(int64_t N, int64_t C, int64_t S, const TX *x,
                                                        const TD *dy, const float *gamma, const float *save_mean,
                                                        const float *save_invstd, float inv_m, int in_block,
                                                        TG *dx, float *dgamma, float *dbeta)
{
    __shared__ double sh[VCC_CUDA_THREADS];
    for (int64_t c = blockIdx.x; c < C; c += gridDim.x) {
        const float mean = save_mean[c], invstd = save_invstd[c];
        double sdy, sdyx;
        float sum_dy, sum_dy_xhat;
        vcc__bn_channel_sums(N, C, S, c, x, dy, mean, sh, &sdy, &sdyx);
        sum_dy = (float)sdy;
        sum_dy_xhat = (float)(sdyx * (double)invstd);
        if (threadIdx.x == 0) {
            if (dbeta) dbeta[c] = sum_dy;
            if (dgamma) dgamma[c] = sum_dy_xhat;
        }
        if (in_block) {
            const float gm = gamma[c];
            for (int64_t n = 0; n < N; n++) {
                const int64_t off = (n * C + c) * S;
                for (int64_t s = threadIdx.x; s < S; s += blockDim.x)
                    vcc_st(dx, off + s, vcc_bn_dx(vcc_ld(x, off + s), vcc_ld(dy, off + s), mean, invstd, gm, sum_dy,
                                                  sum_dy_xhat, inv_m));
            }
        }
    }
}

template <class TX, class TD, class TG>
static __global__ void batchnorm_backward_kernel(int64_t n, int64_t C, int64_t S, const TX *x, const TD *dy,
                                                 const float *gamma, const float *save_mean,
                                                 const float *save_invstd, const float *sum_dy,
                                                 const float *sum_dy_xhat, float inv_m, TG *dx)
{
    VCC_GRID_STRIDE(i, n) {
        int64_t c = (i / S) % C;
        vcc_st(dx, i, vcc_bn_dx(vcc_ld(x, i), vcc_ld(dy, i), save_mean[c], save_invstd[c], gamma[c], sum_dy[c],
                                sum_dy_xhat[c], inv_m));
    }
}

/* batchnorm_backward: x, dy, dx (N, C, S); gamma, save_* (C) from the forward;
 * dgamma = sum dy*xhat, dbeta = sum dy (C), either may be NULL.
 * All outputs overwritten; dx may == dy. x, dy, dx float or bfloat16, the rest float32. */
template <class TX, class TD, class TG>
static inline void batchnorm_backward(VccRt *rt, int64_t N, int64_t C, int64_t S, const TX *x, const TD *dy,
                                      const float *gamma, const float *save_mean, const float *save_invstd,
                                      TG *dx, float *dgamma, float *dbeta)
{
    const int64_t n = N * C * S;
    const float inv_m = (float)(1.0 / (double)(N * S));
    const int in_block = !dgamma || !dbeta;
    (void)rt;
    if (n <= 0) return;
    /* the reduction reads all of dy before the elementwise kernel writes dx */
    batchnorm_backward_reduce_kernel<<<vcc__blocks(C), VCC_CUDA_THREADS>>>(
        N, C, S, x, dy, gamma, save_mean, save_invstd, inv_m, in_block, dx, dgamma, dbeta);
    VCC_CUDA_LAUNCHED();
    if (in_block) return;
    batchnorm_backward_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(n, C, S, x, dy, gamma, save_mean, save_invstd,
                                                                  dbeta, dgamma, inv_m, dx);
    VCC_CUDA_LAUNCHED();
}

/* Per channel (one block each): dgamma = invstd * sum dy*(x - mean), dbeta = sum dy, in double, with
 * the given statistics (invstd from var as the forward computes it); either output may be NULL. */
template <class TX, class TD>
static __global__ void batchnorm_backward_infer_reduce_kernel(int64_t N, int64_t C, int64_t S, const TX *x,
                                                              const TD *dy, const float *mean,
                                                              const float *var, float eps, float *dgamma,
                                                              float *dbeta)
{
    __shared__ double sh[VCC_CUDA_THREADS];
    for (int64_t c = blockIdx.x; c < C; c += gridDim.x) {
        double sdy, sdyx;
        vcc__bn_channel_sums(N, C, S, c, x, dy, mean[c], sh, &sdy, &sdyx);
        if (threadIdx.x == 0) {
            if (dgamma) dgamma[c] = (float)(sdyx * (double)vcc_bn_invstd(var[c], eps));
            if (dbeta) dbeta[c] = (float)sdy;
        }
    }
}

template <class TD, class TG>
static __global__ void batchnorm_backward_infer_kernel(int64_t n, int64_t C, int64_t S, const TD *dy,
                                                       const float *gamma, const float *var, float eps, TG *dx)
{
    VCC_GRID_STRIDE(i, n) {
        int64_t c = (i / S) % C;
        vcc_st(dx, i, vcc_bn_dx_frozen(vcc_ld(dy, i), vcc_bn_invstd(var[c], eps), gamma[c]));
    }
}

/* batchnorm_backward_infer: gradients of batchnorm_forward_infer with frozen statistics (PyTorch's
 * batch_norm(training=False) backward): x, dy, dx (N, C, S); gamma, mean, var (C);
 * dx = gamma*invstd*dy, dgamma = invstd * sum dy*(x - mean), dbeta = sum dy (C); any output may be
 * NULL (not wanted). The reduction reads all of dy before dx is written. */
template <class TX, class TD>
static inline void batchnorm_backward_infer(VccRt *rt, int64_t N, int64_t C, int64_t S, const TX *x,
                                            const TD *dy, const float *gamma, const float *mean,
                                            const float *var, float eps, typename VccSame<TX>::type *dx,
                                            float *dgamma, float *dbeta)
{
    const int64_t n = N * C * S;
    (void)rt;
    if (n <= 0) return;
    if (dgamma || dbeta) {
        batchnorm_backward_infer_reduce_kernel<<<vcc__blocks(C), VCC_CUDA_THREADS>>>(N, C, S, x, dy, mean, var,
                                                                                      eps, dgamma, dbeta);
        VCC_CUDA_LAUNCHED();
    }
    if (!dx) return;
    batchnorm_backward_infer_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(n, C, S, dy, gamma, var, eps, dx);
    VCC_CUDA_LAUNCHED();
}

/* ------------------------------------------------------------------ row normalizations
 * x (R, D): R rows of D contiguous elements, each normalized with its own statistics; scale and bias
 * indexed per element by vcc_norm_pidx (see cpu/norm.h). One block per row. */

/* Per row (one block each): mean and biased variance in double (two passes), the saved statistics,
 * then y. */
template <class TX, class TY>
static __global__ void rownorm_forward_kernel(int64_t R, int64_t D, const TX *x, const float *scale,
                                              int64_t scale_m, int64_t scale_s, const float *bias, int64_t bias_m,
                                              int64_t bias_s, float eps, TY *y, float *mean, float *invstd)
{
    __shared__ double sh[VCC_CUDA_THREADS];
    for (int64_t r = blockIdx.x; r < R; r += gridDim.x) {
        const TX *xr = x + r * D;
        double acc = 0.0, mu, var;
        for (int64_t j = threadIdx.x; j < D; j += blockDim.x) acc += (double)vcc_ld(xr, j);
        mu = vcc__block_sum(acc, sh) / (double)D;
        acc = 0.0;
        for (int64_t j = threadIdx.x; j < D; j += blockDim.x) {
            double dv = (double)vcc_ld(xr, j) - mu;
            acc += dv * dv;
        }
        var = vcc__block_sum(acc, sh) / (double)D;
        const float mf = (float)mu, sf = vcc_norm_invstd(var, eps);
        if (threadIdx.x == 0) {
            if (mean) mean[r] = mf;
            if (invstd) invstd[r] = sf;
        }
        for (int64_t j = threadIdx.x; j < D; j += blockDim.x)
            vcc_st(y, r * D + j,
                   vcc_rownorm_y(r * D + j, vcc_ld(xr, j), mf, sf, scale, scale_m, scale_s, bias, bias_m, bias_s));
    }
}

/* rownorm_forward: x, y (R, D), y may == x; scale (scale_m), bias (bias_m) or NULL; mean, invstd (R)
 * or NULL. y = scale[p]*(x - mean)*invstd + bias[p], statistics per row in double. x and y float or
 * bfloat16 (vcc --precision bf16), the rest float32. */
template <class TX, class TY>
static inline void rownorm_forward(VccRt *rt, int64_t R, int64_t D, const TX *x, const float *scale,
                                   int64_t scale_m, int64_t scale_s, const float *bias, int64_t bias_m,
                                   int64_t bias_s, float eps, TY *y, float *mean, float *invstd)
{
    (void)rt;
    if (R <= 0 || D <= 0) return;
    rownorm_forward_kernel<<<vcc__blocks(R), VCC_CUDA_THREADS>>>(R, D, x, scale, scale_m, scale_s, bias, bias_m,
                                                                 bias_s, eps, y, mean, invstd);
    VCC_CUDA_LAUNCHED();
}

template <class TX, class TY>
static __global__ void rownorm_apply_kernel(int64_t n, int64_t D, const TX *x, const float *scale,
                                            int64_t scale_m, int64_t scale_s, const float *bias, int64_t bias_m,
                                            int64_t bias_s, const float *mean, const float *invstd, TY *y)
{
    VCC_GRID_STRIDE(i, n) {
        vcc_st(y, i, vcc_rownorm_y(i, vcc_ld(x, i), mean[i / D], invstd[i / D], scale, scale_m, scale_s, bias, bias_m,
                                   bias_s));
    }
}

/* rownorm_apply: rownorm_forward's y from the row statistics it saved, bit-identical (vcc_rownorm_y);
 * passes/remat.c's recomputation. x, y (R, D), y may == x; scale (scale_m), bias (bias_m) or NULL;
 * mean, invstd (R). */
template <class TX, class TY>
static inline void rownorm_apply(VccRt *rt, int64_t R, int64_t D, const TX *x, const float *scale,
                                 int64_t scale_m, int64_t scale_s, const float *bias, int64_t bias_m, int64_t bias_s,
                                 const float *mean, const float *invstd, TY *y)
{
    int64_t n = R * D;
    (void)rt;
    if (n <= 0) return;
    rownorm_apply_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(n, D, x, scale, scale_m, scale_s, bias, bias_m, bias_s,
                                                             mean, invstd, y);
    VCC_CUDA_LAUNCHED();
}

/* Per parameter entry p < m (one block each): the sum of dy*xhat (with_xhat) or dy over the elements
 * i = (q*m + p)*s + t that read it, in double. */
template <class TX, class TD>
static __global__ void rownorm_param_grad_kernel(int64_t R, int64_t D, const TX *x, const TD *dy,
                                                 const float *mean, const float *invstd, int64_t m, int64_t s,
                                                 int with_xhat, float *out)
{
    __shared__ double sh[VCC_CUDA_THREADS];
    const int64_t count = R * D / m;
    for (int64_t p = blockIdx.x; p < m; p += gridDim.x) {
        double acc = 0.0;
        for (int64_t k = threadIdx.x; k < count; k += blockDim.x) {
            const int64_t i = ((k / s) * m + p) * s + k % s, r = i / D;
            acc += vcc_norm_pgrad(vcc_ld(x, i), vcc_ld(dy, i), mean[r], invstd[r], with_xhat);
        }
        acc = vcc__block_sum(acc, sh);
        if (threadIdx.x == 0) out[p] = (float)acc;
    }
}

/* Per row (one block each): sum_g = sum dy*scale[p], sum_g_xhat = invstd * sum dy*scale[p]*(x - mean) in
 * double, then the row's dx. */
template <class TX, class TD, class TG>
static __global__ void rownorm_backward_kernel(int64_t R, int64_t D, const TX *x, const TD *dy,
                                               const float *scale, int64_t scale_m, int64_t scale_s,
                                               const float *mean, const float *invstd, float inv_d, TG *dx)
{
    __shared__ double sh[VCC_CUDA_THREADS];
    for (int64_t r = blockIdx.x; r < R; r += gridDim.x) {
        const float mu = mean[r], is = invstd[r];
        double sg = 0.0, sgx = 0.0;
        for (int64_t j = threadIdx.x; j < D; j += blockDim.x) {
            const int64_t i = r * D + j;
            const float g = vcc_ld(dy, i) * scale[vcc_norm_pidx(i, scale_m, scale_s)];
            sg += (double)g;
            sgx += (double)g * ((double)vcc_ld(x, i) - (double)mu);
        }
        const float sum_g = (float)vcc__block_sum(sg, sh);
        const float sum_g_xhat = (float)(vcc__block_sum(sgx, sh) * (double)is);
        for (int64_t j = threadIdx.x; j < D; j += blockDim.x) {
            const int64_t i = r * D + j;
            vcc_st(dx, i, vcc_norm_dx(vcc_ld(x, i), vcc_ld(dy, i), scale[vcc_norm_pidx(i, scale_m, scale_s)], mu, is,
                                      sum_g, sum_g_xhat, inv_d));
        }
    }
}

/* rownorm_backward: gradients of rownorm_forward. x, dy, dx (R, D); scale (scale_m); mean, invstd (R)
 * from the forward; dscale (scale_m) = sum dy*xhat, dbias (bias_m) = sum dy per entry; dx, dscale,
 * dbias may each be NULL (not wanted). The parameter sums read all of dy before dx is written. x, dy, dx
 * float or bfloat16 (dx, when NULL, takes x's type), the rest float32. */
template <class TX, class TD>
static inline void rownorm_backward(VccRt *rt, int64_t R, int64_t D, const TX *x, const TD *dy,
                                    const float *scale, int64_t scale_m, int64_t scale_s, const float *mean,
                                    const float *invstd, typename VccSame<TX>::type *dx, float *dscale, int64_t bias_m,
                                    int64_t bias_s, float *dbias)
{
    (void)rt;
    if (R <= 0 || D <= 0) return;
    if (dscale) {
        rownorm_param_grad_kernel<<<vcc__blocks(scale_m), VCC_CUDA_THREADS>>>(R, D, x, dy, mean, invstd, scale_m,
                                                                             scale_s, 1, dscale);
        VCC_CUDA_LAUNCHED();
    }
    if (dbias) {
        rownorm_param_grad_kernel<<<vcc__blocks(bias_m), VCC_CUDA_THREADS>>>(R, D, x, dy, mean, invstd, bias_m,
                                                                            bias_s, 0, dbias);
        VCC_CUDA_LAUNCHED();
    }
    if (!dx) return;
    rownorm_backward_kernel<<<vcc__blocks(R), VCC_CUDA_THREADS>>>(R, D, x, dy, scale, scale_m, scale_s, mean, invstd,
                                                                  (float)(1.0 / (double)D), dx);
    VCC_CUDA_LAUNCHED();
}

#define VCC_KERNEL VCC_KERNEL_CHECK
#include "../proto/norm.h"
#undef VCC_KERNEL

#endif /* VCC_CUDA_NORM_CUH */
