/*
 * elem/norm.h - the norm family's per-element (and per-row) arithmetic, written once for both
 * targets: the CPU loops (cpu/norm.h) call these directly, the CUDA kernels (cuda/norm.cuh) from device
 * code. Pure C99, no I/O, no state.
 */
#ifndef VCC_ELEM_NORM_H
#define VCC_ELEM_NORM_H

#include "base.h"

/* vcc_bn_norm: y = gamma * (x - mean) * invstd + beta, with invstd =
 * 1/sqrt(var + eps) of the channel (torch.nn.functional.batch_norm,
 * ONNX BatchNormalization). */
VCC_HD float vcc_bn_norm(float x, float mean, float invstd, float gamma, float beta)
{
    return (x - mean) * invstd * gamma + beta;
}

/* vcc_bn_invstd: 1/sqrt(var + eps) in double, rounded to float once (the
 * inference form's per-channel scale; PyTorch's CPU batch_norm also works in
 * double for float inputs). */
VCC_HD float vcc_bn_invstd(float var, float eps)
{
    return (float)(1.0 / sqrt((double)var + (double)eps));
}

/* vcc_bn_dx: input gradient of training-mode batch norm for one element.
 *   xhat = (x - mean) * invstd
 *   dx   = gamma * invstd * (dy - sum_dy * inv_m - xhat * sum_dy_xhat * inv_m)
 * sum_dy = sum of dy over the channel's m = N*S elements, sum_dy_xhat = sum
 * of dy*xhat over the same elements, inv_m = 1/m. Matches PyTorch's
 * batch_norm backward with biased batch variance. */
VCC_HD float vcc_bn_dx(float x, float dy, float mean, float invstd, float gamma,
                       float sum_dy, float sum_dy_xhat, float inv_m)
{
    float xhat = (x - mean) * invstd;
    return gamma * invstd * (dy - sum_dy * inv_m - xhat * sum_dy_xhat * inv_m);
}

/* vcc_bn_dx_frozen: input gradient of inference-mode batch norm (statistics
 * given, not computed from the batch: torch.nn.functional.batch_norm with
 * training=False): dx = gamma * invstd * dy. */
VCC_HD float vcc_bn_dx_frozen(float dy, float invstd, float gamma)
{
    return gamma * invstd * dy;
}

/* vcc_norm_invstd: 1/sqrt(var + eps) of a variance computed in double,
 * rounded to float once (the row normalizations' saved InvStdDev). */
VCC_HD float vcc_norm_invstd(double var, float eps)
{
    return (float)(1.0 / sqrt(var + (double)eps));
}

/* vcc_norm_pidx: which element of a scale or bias an element of x reads in
 * the row normalizations (InstanceNormalization, GroupNormalization,
 * LayerNormalization). i is the element's flat (row-major) index in x; the
 * parameter has m elements laid along consecutive dims of x, and s is the
 * product of x's dims after them: p = (i / s) % m. InstanceNormalization and
 * opset-21 GroupNormalization: m = C, s = S; opset-18 GroupNormalization:
 * m = G, s = (C/G)*S; LayerNormalization: m = the product of Scale's dims,
 * s = the product of X's dims after them (1 for a Scale of the normalized
 * shape). */
VCC_HD int64_t vcc_norm_pidx(int64_t i, int64_t m, int64_t s)
{
    return (i / s) % m;
}

/* vcc_rownorm_y: element i (flat index in x) of a row normalization's output, x_i its input, with its
 * row's mean and invstd: vcc_bn_norm with the scale and bias entries it reads (bias NULL: 0). The
 * forward and the recomputation from saved statistics (rownorm_apply) both compute y this way. */
VCC_HD float vcc_rownorm_y(int64_t i, float x_i, float mean, float invstd, const float *scale, int64_t scale_m,
                           int64_t scale_s, const float *bias, int64_t bias_m, int64_t bias_s)
{
    return vcc_bn_norm(x_i, mean, invstd, scale[vcc_norm_pidx(i, scale_m, scale_s)],
                       bias ? bias[vcc_norm_pidx(i, bias_m, bias_s)] : 0.0f);
}

/* vcc_norm_dx: input gradient of a row normalization for one element, with a
 * per-element scale gamma (PyTorch's layer_norm / group_norm backward):
 *   g = dy * gamma, xhat = (x - mean) * invstd
 *   dx = invstd * (g - sum_g * inv_d - xhat * sum_g_xhat * inv_d)
 * sum_g = sum of g over the row's d elements, sum_g_xhat = sum of g*xhat over
 * them, inv_d = 1/d. vcc_bn_dx with gamma folded into dy. */
VCC_HD float vcc_norm_dx(float x, float dy, float gamma, float mean, float invstd,
                         float sum_g, float sum_g_xhat, float inv_d)
{
    return vcc_bn_dx(x, dy * gamma, mean, invstd, 1.0f, sum_g, sum_g_xhat, inv_d);
}

/* vcc_norm_pgrad: one element's term of a row normalization's parameter
 * gradient, in double: dy * xhat for the scale (with_xhat), dy for the bias. */
VCC_HD double vcc_norm_pgrad(float x, float dy, float mean, float invstd, int with_xhat)
{
    return with_xhat ? (double)dy * (((double)x - (double)mean) * (double)invstd) : (double)dy;
}

#endif /* VCC_ELEM_NORM_H */
