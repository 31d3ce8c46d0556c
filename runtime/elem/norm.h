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

#endif /* VCC_ELEM_NORM_H */
