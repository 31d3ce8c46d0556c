/*
 * proto/dropout.h - the dropout family's kernels (Dropout, DropoutGrad, RandomUniformLike, RandomNormalLike): the one signature list both
 * targets define (cpu/dropout.h, cuda/dropout.cuh). Included twice by each: before the definitions with
 * VCC_KERNEL = VCC_KERNEL_DECLARE, after them with VCC_KERNEL = VCC_KERNEL_CHECK, so a definition whose
 * signature drifts from this list is a compile error on both targets (runtime/cpu/base.h,
 * runtime/cuda/base.cuh). No include guard, on purpose.
 */
VCC_KERNEL(void, dropout_forward, (VccRt *rt, int64_t n, const VccDropoutDesc *d, const float *x, float *y, unsigned char *mask, float *mask_f32))
VCC_KERNEL(void, dropout_backward, (VccRt *rt, int64_t n, const VccDropoutDesc *d, const float *dy, float *dx))
VCC_KERNEL(void, random_like_forward, (VccRt *rt, int64_t n, const VccRandomDesc *d, float *y))
