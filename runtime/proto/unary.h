/*
 * proto/unary.h - the unary family's kernels (Relu and ReluGrad): the one signature list both
 * targets define (cpu/unary.h, cuda/unary.cuh). Included twice by each: before the definitions with
 * VCC_KERNEL = VCC_KERNEL_DECLARE, after them with VCC_KERNEL = VCC_KERNEL_CHECK, so a definition whose
 * signature drifts from this list is a compile error on both targets (runtime/cpu/base.h,
 * runtime/cuda/base.cuh). No include guard, on purpose.
 */
VCC_KERNEL(void, relu_forward, (VccRt *rt, int64_t n, const float *x, float *y))
VCC_KERNEL(void, relu_backward, (VccRt *rt, int64_t n, const float *y, const float *dy, float *dx))
