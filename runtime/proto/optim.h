/*
 * proto/optim.h - the optim family's kernels (SGD with momentum, AdamW, the gradient norm of
 * --clip-grad-norm): the one signature list both
 * targets define (cpu/optim.h, cuda/optim.cuh). Included twice by each: before the definitions with
 * VCC_KERNEL = VCC_KERNEL_DECLARE, after them with VCC_KERNEL = VCC_KERNEL_CHECK, so a definition whose
 * signature drifts from this list is a compile error on both targets (runtime/cpu/base.h,
 * runtime/cuda/base.cuh). No include guard, on purpose.
 */
VCC_KERNEL(void, sgd_update, (VccRt *rt, int64_t n, float *p, const float *g, float *v, const double *scale, float lr, float momentum, float wd))
VCC_KERNEL(void, adamw_update, (VccRt *rt, int64_t n, float *p, const float *g, float *m, float *v, const double *scale, VccAdamwCoef c))
VCC_KERNEL(void, grad_sumsq, (VccRt *rt, int64_t n, const float *g, double *acc, int first))
VCC_KERNEL(void, grad_clip_scale, (VccRt *rt, double *c, double max_norm))
