/*
 * proto/layout.h - the layout family's kernels (the strided copy of Concat, Split, Slice, Transpose,
 * Expand, Tile and SliceGrad; ExpandGrad; Resize and ResizeGrad; Cast; Gather and GatherGrad): the one signature list both
 * targets define (cpu/layout.h, cuda/layout.cuh). Included twice by each: before the definitions with
 * VCC_KERNEL = VCC_KERNEL_DECLARE, after them with VCC_KERNEL = VCC_KERNEL_CHECK, so a definition whose
 * signature drifts from this list is a compile error on both targets (runtime/cpu/base.h,
 * runtime/cuda/base.cuh). No include guard, on purpose.
 */
VCC_KERNEL(void, strided_copy_forward, (VccRt *rt, const VccStrided *d, const float *x, float *y))
VCC_KERNEL(void, expand_backward, (VccRt *rt, int64_t n, const VccSumTo *d, const float *dy, float *dx))
VCC_KERNEL(void, resize_forward, (VccRt *rt, const VccResize *d, const float *x, float *y))
VCC_KERNEL(void, resize_backward, (VccRt *rt, const VccResize *d, const float *dy, float *dx))
VCC_KERNEL(void, cast_f32_int_forward, (VccRt *rt, int64_t n, int64_t lo, int64_t hi, const float *x, int64_t *y))
VCC_KERNEL(void, cast_i64_f32_forward, (VccRt *rt, int64_t n, const int64_t *x, float *y))
VCC_KERNEL(void, cast_i64_i32_forward, (VccRt *rt, int64_t n, const int64_t *x, int64_t *y))
VCC_KERNEL(void, gather_forward, (VccRt *rt, int64_t outer, int64_t len, int64_t inner, int64_t nidx, const int64_t *idx, const float *x, float *y))
VCC_KERNEL(void, gather_backward, (VccRt *rt, int64_t outer, int64_t len, int64_t inner, int64_t nidx, const int64_t *idx, const float *dy, float *dx))
