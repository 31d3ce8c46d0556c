/*
 * proto/scatter.h - the scatter family's kernels (ScatterND, ScatterElements and their gradients): the
 * one signature list both targets define (cpu/scatter.h, cuda/scatter.cuh). d (elem/scatter.h) says
 * where each update lands; idx are the int64 indices (a constant of the program). Included twice by
 * each: before the definitions with VCC_KERNEL = VCC_KERNEL_DECLARE, after them with VCC_KERNEL =
 * VCC_KERNEL_CHECK, so a definition whose signature drifts from this list is a compile error on both
 * targets (runtime/cpu/base.h, runtime/cuda/base.cuh). No include guard, on purpose.
 */
VCC_KERNEL(void, scatter_forward, (VccRt *rt, const VccScatter *d, int add, int serial, const int64_t *idx, const float *upd, float *y))
VCC_KERNEL(void, scatter_backward_data, (VccRt *rt, const VccScatter *d, const int64_t *idx, float *dx))
VCC_KERNEL(void, scatter_backward_updates, (VccRt *rt, const VccScatter *d, const int64_t *idx, const float *dy, float *dupd))
