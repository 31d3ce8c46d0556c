/*
 * proto/pool.h - the pool family's kernels (MaxPool, AveragePool, GlobalAveragePool and their gradients): the one signature list both
 * targets define (cpu/pool.h, cuda/pool.cuh). Included twice by each: before the definitions with
 * VCC_KERNEL = VCC_KERNEL_DECLARE, after them with VCC_KERNEL = VCC_KERNEL_CHECK, so a definition whose
 * signature drifts from this list is a compile error on both targets (runtime/cpu/base.h,
 * runtime/cuda/base.cuh). No include guard, on purpose.
 */
VCC_KERNEL(void, global_avgpool_forward, (VccRt *rt, int64_t NC, int64_t S, const float *x, float *y))
VCC_KERNEL(void, global_avgpool_backward, (VccRt *rt, int64_t NC, int64_t S, const float *dy, float *dx))
VCC_KERNEL(void, maxpool_forward, (VccRt *rt, const VccPoolDesc *d, const float *x, float *y, int64_t *indices, int storage_order))
VCC_KERNEL(void, maxpool_backward, (VccRt *rt, const VccPoolDesc *d, const float *x, const float *dy, float *dx, int32_t *argmax))
VCC_KERNEL(void, avgpool_forward, (VccRt *rt, const VccPoolDesc *d, const float *x, float *y))
VCC_KERNEL(void, avgpool_backward, (VccRt *rt, const VccPoolDesc *d, const float *dy, float *dx))
