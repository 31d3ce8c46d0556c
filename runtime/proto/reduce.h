/*
 * proto/reduce.h - the reduce family's kernels (ReduceSum, ReduceMean, ReduceMax, ReduceMin, their
 * gradients, ReduceToShape): the one signature list both targets define (cpu/reduce.h,
 * cuda/reduce.cuh). Included twice by each: before the definitions with VCC_KERNEL = VCC_KERNEL_DECLARE,
 * after them with VCC_KERNEL = VCC_KERNEL_CHECK, so a definition whose signature drifts from this list
 * is a compile error on both targets (runtime/cpu/base.h, runtime/cuda/base.cuh). No include guard, on
 * purpose.
 */
VCC_KERNEL(void, reduce_forward, (VccRt *rt, int kind, const VccReduce *d, float scale, const float *x, float *y))
VCC_KERNEL(void, reduce_backward, (VccRt *rt, int kind, const VccReduce *d, float scale, const float *x, const float *y, const float *dy, float *dx))
