/*
 * proto/pad.h - the pad family's kernels (Pad and its gradient): the one signature list both
 * targets define (cpu/pad.h, cuda/pad.cuh). Included twice by each: before the definitions with
 * VCC_KERNEL = VCC_KERNEL_DECLARE, after them with VCC_KERNEL = VCC_KERNEL_CHECK, so a definition whose
 * signature drifts from this list is a compile error on both targets (runtime/cpu/base.h,
 * runtime/cuda/base.cuh). No include guard, on purpose.
 */
VCC_KERNEL(void, pad_forward, (VccRt *rt, const VccPadDesc *d, const float *x, float *y))
VCC_KERNEL(void, pad_backward, (VccRt *rt, const VccPadDesc *d, const float *dy, float *dx))
