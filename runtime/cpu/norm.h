/*
 * cpu/norm.h - the norm family's CPU kernels: BatchNormalization (training and inference forms) and its
 * gradients; the row normalizations (InstanceNormalization, GroupNormalization, LayerNormalization:
 * statistics over each of R contiguous rows of D elements) and their gradient.
 * Signatures: proto/norm.h; per-element bodies shared with the CUDA target: elem/norm.h. Part of the C target's runtime (cpu/base.h).
 */
#ifndef VCC_CPU_NORM_H
#define VCC_CPU_NORM_H

#include "base.h"
#include "../elem/norm.h"

#define VCC_KERNEL VCC_KERNEL_DECLARE
#include "../proto/norm.h"
#undef VCC_KERNEL

/* vcc__bn_channel_norm: channel c of y (N, C, S) = vcc_bn_norm of x's with the channel's mean, invstd, gamma
 * and beta (the one normalization loop of every batch norm form, so their outputs agree bit for bit). */
VCC_CPU_FN void vcc__bn_channel_norm(int64_t N, int64_t C, int64_t S, int64_t c, const float *x, float mean,
                                     float invstd, float gamma, float beta, float *y)
{
    int64_t n, i;
    for (n = 0; n < N; n++) {
        const float *r = x + (n * C + c) * S;
        float *yr = y + (n * C + c) * S;
        VCC_CPU_SIMD
        for (i = 0; i < S; i++) yr[i] = vcc_bn_norm(r[i], mean, invstd, gamma, beta);
    }
}

/* vcc__bn_normalize: y (N, C, S) = vcc_bn_norm(x, mean[c], invstd, gamma[c], beta[c]) for every channel c,
 * with invstd = vcc_bn_invstd(scale[c], eps) when scale_is_var (scale holds variances), else scale[c]. */
VCC_CPU_FN void vcc__bn_normalize(int64_t N, int64_t C, int64_t S, const float *x, const float *gamma,
                                  const float *beta, const float *mean, const float *scale, int scale_is_var,
                                  float eps, float *y)
{
    int64_t c;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (c = 0; c < C; c++)
        vcc__bn_channel_norm(N, C, S, c, x, mean[c], scale_is_var ? vcc_bn_invstd(scale[c], eps) : scale[c],
                             gamma[c], beta[c], y);
}

/* batchnorm_forward_train: training-mode batch norm over (N, S) per channel,
 * as torch.nn.functional.batch_norm(training=True) / ONNX
 * BatchNormalization(training_mode=1).
 *   x, y (N, C, S) with S = T*H*W; y may == x
 *   gamma, beta, running_mean, running_var, save_mean, save_invstd (C)
 *   mean/var over m = N*S elements (sums in double, shifted by the channel's
 *   first element); y = gamma*(x-mean)*invstd + beta with invstd =
 *   1/sqrt(var_biased + eps). Running stats (ONNX momentum convention;
 *   PyTorch momentum p corresponds to ONNX momentum 1-p):
 *     running_mean = running_mean*momentum + mean*(1-momentum)
 *     running_var  = running_var*momentum + v*(1-momentum),
 *   v = var_unbiased = var*m/(m-1) (var itself when m == 1) when unbiased (PyTorch), else the biased
 *   var (the ONNX spec's ReduceVar, onnxruntime). running_* may be NULL. */
VCC_CPU_FN void batchnorm_forward_train(VccRt *rt, int64_t N, int64_t C, int64_t S, const float *x,
                                           const float *gamma, const float *beta, float *running_mean,
                                           float *running_var, float momentum, float eps, int unbiased,
                                           float *y, float *save_mean, float *save_invstd)
{
    int64_t c;
    const int64_t m = N * S;
    (void)rt;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (c = 0; c < C; c++) {
        double shift = m > 0 ? (double)x[c * S] : 0.0;
        double s1 = 0.0, s2 = 0.0, mean, var, invstd;
        float meanf, invstdf, gm = gamma[c], bt = beta[c];
        int64_t n;
        for (n = 0; n < N; n++) {
            const float *r = x + (n * C + c) * S;
            double a, q;
            vcc_dot_sums_f64(r, shift, r, shift, S, &a, &q);
            s1 += a;
            s2 += q;
        }
        if (m > 0) {
            mean = shift + s1 / (double)m;
            var = (s2 - s1 * s1 / (double)m) / (double)m;
            if (var < 0.0) var = 0.0;
        } else {
            mean = 0.0;
            var = 0.0;
        }
        invstd = 1.0 / sqrt(var + (double)eps);
        meanf = (float)mean;
        invstdf = (float)invstd;
        save_mean[c] = meanf;
        save_invstd[c] = invstdf;
        if (running_mean)
            running_mean[c] = (float)((double)running_mean[c] * (double)momentum + mean * (1.0 - (double)momentum));
        if (running_var) {
            double vu = unbiased && m > 1 ? var * (double)m / (double)(m - 1) : var;
            running_var[c] = (float)((double)running_var[c] * (double)momentum + vu * (1.0 - (double)momentum));
        }
        vcc__bn_channel_norm(N, C, S, c, x, meanf, invstdf, gm, bt, y);
    }
}

/* batchnorm_forward_infer: inference-mode batch norm with given statistics, as
 * torch.nn.functional.batch_norm(training=False) / ONNX BatchNormalization
 * (training_mode=0): y = gamma*(x-mean)*invstd + beta, invstd =
 * 1/sqrt(var + eps) per channel (in double, then float).
 *   x, y (N, C, S) with S = T*H*W; y may == x; gamma, beta, mean, var (C) */
VCC_CPU_FN void batchnorm_forward_infer(VccRt *rt, int64_t N, int64_t C, int64_t S, const float *x,
                                           const float *gamma, const float *beta, const float *mean,
                                           const float *var, float eps, float *y)
{
    (void)rt;
    vcc__bn_normalize(N, C, S, x, gamma, beta, mean, var, 1, eps, y);
}

/* batchnorm_apply: the normalization step of batchnorm_forward_train alone, with the batch statistics it
 * saved: y = vcc_bn_norm(x, save_mean, save_invstd, gamma, beta), the same arithmetic element for element,
 * so y is bit-identical to the forward's y; no statistics are computed and no running statistics move
 * (passes/remat.c recomputes a BatchNormalization output this way, as InPlace-ABN, Rota Bulo et al.,
 * CVPR 2018, does).
 *   x, y (N, C, S), y may == x; gamma, beta, save_mean, save_invstd (C) */
VCC_CPU_FN void batchnorm_apply(VccRt *rt, int64_t N, int64_t C, int64_t S, const float *x, const float *gamma,
                                const float *beta, const float *save_mean, const float *save_invstd, float *y)
{
    (void)rt;
    vcc__bn_normalize(N, C, S, x, gamma, beta, save_mean, save_invstd, 0, 0.0f, y);
}

/* vcc__bn_channel_sums: for channel c of x, dy (N, C, S), *sdy = sum dy and *sdyx = sum dy*(x - mean)
 * over its N*S elements, in double, in a fixed order (the batch norm gradients' reductions). */
VCC_CPU_FN void vcc__bn_channel_sums(int64_t N, int64_t C, int64_t S, int64_t c, const float *x, const float *dy,
                                     float mean, double *sdy_out, double *sdyx_out)
{
    double sdy = 0.0, sdyx = 0.0;
    int64_t n;
    for (n = 0; n < N; n++) {
        const float *xr = x + (n * C + c) * S;
        const float *gr = dy + (n * C + c) * S;
        double a, b;
        vcc_dot_sums_f64(gr, 0.0, xr, (double)mean, S, &a, &b);
        sdy += a;
        sdyx += b;
    }
    *sdy_out = sdy;
    *sdyx_out = sdyx;
}

/* batchnorm_backward: gradients of batchnorm_forward_train (batch statistics,
 * as PyTorch's training-mode batch_norm backward).
 *   x, dy, dx (N, C, S); dx OVERWRITTEN (may == dy)
 *   gamma, save_mean, save_invstd (C) from the forward
 *   dgamma (C) = sum dy*xhat, dbeta (C) = sum dy (double sums; either may be NULL)
 *   dx = vcc_bn_dx(...) = gamma*invstd*(dy - mean(dy) - xhat*mean(dy*xhat)). */
VCC_CPU_FN void batchnorm_backward(VccRt *rt, int64_t N, int64_t C, int64_t S, const float *x, const float *dy,
                                      const float *gamma, const float *save_mean, const float *save_invstd,
                                      float *dx, float *dgamma, float *dbeta)
{
    int64_t c;
    const int64_t m = N * S;
    const float inv_m = m > 0 ? (float)(1.0 / (double)m) : 0.0f;
    (void)rt;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (c = 0; c < C; c++) {
        const float mean = save_mean[c], invstd = save_invstd[c], gm = gamma[c];
        double sdy, sdyx;
        float sum_dy, sum_dy_xhat;
        int64_t n, i;
        vcc__bn_channel_sums(N, C, S, c, x, dy, mean, &sdy, &sdyx);
        sum_dy = (float)sdy;
        sum_dy_xhat = (float)(sdyx * (double)invstd);
        if (dgamma) dgamma[c] = sum_dy_xhat;
        if (dbeta) dbeta[c] = sum_dy;
        for (n = 0; n < N; n++) {
            const float *xr = x + (n * C + c) * S;
            const float *gr = dy + (n * C + c) * S;
            float *dr = dx + (n * C + c) * S;
            VCC_CPU_SIMD
            for (i = 0; i < S; i++)
                dr[i] = vcc_bn_dx(xr[i], gr[i], mean, invstd, gm, sum_dy, sum_dy_xhat, inv_m);
        }
    }
}

/* batchnorm_backward_infer: gradients of batchnorm_forward_infer (statistics given and frozen, as
 * PyTorch's batch_norm(training=False) backward: mean and var get no gradient).
 *   x, dy, dx (N, C, S); dx OVERWRITTEN, may be NULL (not wanted)
 *   gamma, mean, var (C); invstd = 1/sqrt(var + eps) as the forward computes it
 *   dx = gamma*invstd*dy; dgamma (C) = invstd * sum dy*(x - mean), dbeta (C) = sum dy (double sums;
 *   either may be NULL). */
VCC_CPU_FN void batchnorm_backward_infer(VccRt *rt, int64_t N, int64_t C, int64_t S, const float *x,
                                          const float *dy, const float *gamma, const float *mean,
                                          const float *var, float eps, float *dx, float *dgamma, float *dbeta)
{
    int64_t c;
    (void)rt;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (c = 0; c < C; c++) {
        const float invstd = vcc_bn_invstd(var[c], eps), gm = gamma[c];
        int64_t n, i;
        if (dgamma || dbeta) {
            double sdy, sdyx;
            vcc__bn_channel_sums(N, C, S, c, x, dy, mean[c], &sdy, &sdyx);
            if (dgamma) dgamma[c] = (float)(sdyx * (double)invstd);
            if (dbeta) dbeta[c] = (float)sdy;
        }
        for (n = 0; dx && n < N; n++) {
            const float *gr = dy + (n * C + c) * S;
            float *dr = dx + (n * C + c) * S;
            VCC_CPU_SIMD
            for (i = 0; i < S; i++) dr[i] = vcc_bn_dx_frozen(gr[i], invstd, gm);
        }
    }
}

/* ------------------------------------------------------------------ row normalizations
 * x (R, D): R rows of D contiguous elements, each normalized with its own mean and biased variance
 * (PyTorch's instance_norm, group_norm, layer_norm; ONNX InstanceNormalization, GroupNormalization,
 * LayerNormalization). InstanceNormalization: R = N*C, D = S; GroupNormalization: R = N*G,
 * D = (C/G)*S; LayerNormalization: R = prod(X.shape[:axis]), D = prod(X.shape[axis:]).
 * The scale and bias are indexed per element by vcc_norm_pidx(i, m, s) (elem/norm.h). */

/* rownorm_forward: y = scale[p] * (x - mean) * invstd + bias[p] per row, p = vcc_norm_pidx(i, m, s) of
 * the element's flat index i, with the row's mean and invstd = 1/sqrt(var + eps) (biased variance;
 * two passes in double, rounded to float once).
 *   x, y (R, D), y may == x; scale (scale_m), bias (bias_m) or NULL (no bias)
 *   mean, invstd (R): the row statistics (LayerNormalization's Mean and InvStdDev); either may be NULL */
VCC_CPU_FN void rownorm_forward(VccRt *rt, int64_t R, int64_t D, const float *x, const float *scale,
                                int64_t scale_m, int64_t scale_s, const float *bias, int64_t bias_m,
                                int64_t bias_s, float eps, float *y, float *mean, float *invstd)
{
    int64_t r;
    (void)rt;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (r = 0; r < R; r++) {
        const float *xr = x + r * D;
        float *yr = y + r * D;
        const double mu = D > 0 ? vcc_sum_f64(xr, D) / (double)D : 0.0;
        const double var = D > 0 ? vcc_sumsq_dev_f64(xr, D, mu) / (double)D : 0.0;
        const float mf = (float)mu, sf = vcc_norm_invstd(var, eps);
        int64_t j;
        if (mean) mean[r] = mf;
        if (invstd) invstd[r] = sf;
        for (j = 0; j < D; j++)
            yr[j] = vcc_rownorm_y(r * D + j, xr[j], mf, sf, scale, scale_m, scale_s, bias, bias_m, bias_s);
    }
}

/* rownorm_apply: rownorm_forward's y alone, from the row statistics it saved (mean, invstd (R)): the same
 * arithmetic (vcc_rownorm_y), so y is bit-identical; passes/remat.c's recomputation.
 *   x, y (R, D), y may == x; scale (scale_m), bias (bias_m) or NULL */
VCC_CPU_FN void rownorm_apply(VccRt *rt, int64_t R, int64_t D, const float *x, const float *scale, int64_t scale_m,
                              int64_t scale_s, const float *bias, int64_t bias_m, int64_t bias_s, const float *mean,
                              const float *invstd, float *y)
{
    const int64_t n = R * D;
    int64_t i;
    (void)rt;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (i = 0; i < n; i++)
        y[i] = vcc_rownorm_y(i, x[i], mean[i / D], invstd[i / D], scale, scale_m, scale_s, bias, bias_m, bias_s);
}

/* vcc__rownorm_param_grad: out[p] (p < m) = sum, over the elements i of x, dy (R, D) that read parameter
 * p (vcc_norm_pidx(i, m, s) == p), of dy*xhat (with_xhat: the scale's gradient) or dy (the bias's), in
 * double; mean, invstd (R) from the forward. The elements of p are i = (q*m + p)*s + t, t < s. */
VCC_CPU_FN void vcc__rownorm_param_grad(int64_t R, int64_t D, const float *x, const float *dy, const float *mean,
                                        const float *invstd, int64_t m, int64_t s, int with_xhat, float *out)
{
    const int64_t nq = R * D / (m * s);
    int64_t p;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (p = 0; p < m; p++) {
        double acc = 0.0;
        int64_t q, t;
        for (q = 0; q < nq; q++)
            for (t = 0; t < s; t++) {
                const int64_t i = (q * m + p) * s + t, r = i / D;
                acc += vcc_norm_pgrad(x[i], dy[i], mean[r], invstd[r], with_xhat);
            }
        out[p] = (float)acc;
    }
}

/* rownorm_backward: gradients of rownorm_forward (the row statistics depend on x: PyTorch's
 * layer_norm / group_norm backward).
 *   x, dy, dx (R, D); dx OVERWRITTEN, may be NULL (not wanted); scale (scale_m); mean, invstd (R)
 *   dx = vcc_norm_dx(...) = invstd*(g - mean_row(g) - xhat*mean_row(g*xhat)), g = dy*scale[p]
 *   dscale (scale_m) = sum dy*xhat, dbias (bias_m) = sum dy over the elements reading each entry
 *   (double sums; either may be NULL). Reads all of dy before writing dx. */
VCC_CPU_FN void rownorm_backward(VccRt *rt, int64_t R, int64_t D, const float *x, const float *dy,
                                 const float *scale, int64_t scale_m, int64_t scale_s, const float *mean,
                                 const float *invstd, float *dx, float *dscale, int64_t bias_m, int64_t bias_s,
                                 float *dbias)
{
    const float inv_d = D > 0 ? (float)(1.0 / (double)D) : 0.0f;
    int64_t r;
    (void)rt;
    if (dscale) vcc__rownorm_param_grad(R, D, x, dy, mean, invstd, scale_m, scale_s, 1, dscale);
    if (dbias) vcc__rownorm_param_grad(R, D, x, dy, mean, invstd, bias_m, bias_s, 0, dbias);
    if (!dx) return;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (r = 0; r < R; r++) {
        const float mu = mean[r], is = invstd[r];
        double sg = 0.0, sgx = 0.0;
        float sum_g, sum_g_xhat;
        int64_t j;
        for (j = 0; j < D; j++) {
            const int64_t i = r * D + j;
            const float g = dy[i] * scale[vcc_norm_pidx(i, scale_m, scale_s)];
            sg += (double)g;
            sgx += (double)g * ((double)x[i] - (double)mu);
        }
        sum_g = (float)sg;
        sum_g_xhat = (float)(sgx * (double)is);
        for (j = 0; j < D; j++) {
            const int64_t i = r * D + j;
            dx[i] = vcc_norm_dx(x[i], dy[i], scale[vcc_norm_pidx(i, scale_m, scale_s)], mu, is, sum_g, sum_g_xhat,
                                inv_d);
        }
    }
}

#define VCC_KERNEL VCC_KERNEL_CHECK
#include "../proto/norm.h"
#undef VCC_KERNEL

#endif /* VCC_CPU_NORM_H */
