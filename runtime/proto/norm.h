/*
 * proto/norm.h - the norm family's kernels (BatchNormalization (training and inference forms) and its gradients;
 * the row normalizations InstanceNormalization, GroupNormalization, LayerNormalization and their gradient): the one signature list both
 * targets define (cpu/norm.h, cuda/norm.cuh). Included twice by each: before the definitions with
 * VCC_KERNEL = VCC_KERNEL_DECLARE, after them with VCC_KERNEL = VCC_KERNEL_CHECK, so a definition whose
 * signature drifts from this list is a compile error on both targets (runtime/cpu/base.h,
 * runtime/cuda/base.cuh). No include guard, on purpose.
 */
VCC_KERNEL(void, batchnorm_forward_train, (VccRt *rt, int64_t N, int64_t C, int64_t S, const float *x, const float *gamma, const float *beta, float *running_mean, float *running_var, float momentum, float eps, int unbiased, float *y, float *save_mean, float *save_invstd))
VCC_KERNEL(void, batchnorm_forward_infer, (VccRt *rt, int64_t N, int64_t C, int64_t S, const float *x, const float *gamma, const float *beta, const float *mean, const float *var, float eps, float *y))
VCC_KERNEL(void, batchnorm_apply, (VccRt *rt, int64_t N, int64_t C, int64_t S, const float *x, const float *gamma, const float *beta, const float *save_mean, const float *save_invstd, float *y))
VCC_KERNEL(void, batchnorm_backward, (VccRt *rt, int64_t N, int64_t C, int64_t S, const float *x, const float *dy, const float *gamma, const float *save_mean, const float *save_invstd, float *dx, float *dgamma, float *dbeta))
VCC_KERNEL(void, batchnorm_backward_infer, (VccRt *rt, int64_t N, int64_t C, int64_t S, const float *x, const float *dy, const float *gamma, const float *mean, const float *var, float eps, float *dx, float *dgamma, float *dbeta))
VCC_KERNEL(void, rownorm_forward, (VccRt *rt, int64_t R, int64_t D, const float *x, const float *scale, int64_t scale_m, int64_t scale_s, const float *bias, int64_t bias_m, int64_t bias_s, float eps, float *y, float *mean, float *invstd))
VCC_KERNEL(void, rownorm_apply, (VccRt *rt, int64_t R, int64_t D, const float *x, const float *scale, int64_t scale_m, int64_t scale_s, const float *bias, int64_t bias_m, int64_t bias_s, const float *mean, const float *invstd, float *y))
VCC_KERNEL(void, rownorm_backward, (VccRt *rt, int64_t R, int64_t D, const float *x, const float *dy, const float *scale, int64_t scale_m, int64_t scale_s, const float *mean, const float *invstd, float *dx, float *dscale, int64_t bias_m, int64_t bias_s, float *dbias))
