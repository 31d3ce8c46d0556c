/*
 * proto/typed.h - the typed kernels (Add, Sub, Mul, Div, Pow, Clip, MaxPool and Pad on data that are not
 * float32: elem/typed.h): the one signature list both targets define (cpu/typed.h, cuda/typed.cuh).
 * Included twice by each: before the definitions with VCC_KERNEL = VCC_KERNEL_DECLARE, after them with
 * VCC_KERNEL = VCC_KERNEL_CHECK, so a definition whose signature drifts from this list is a compile error
 * on both targets (runtime/cpu/base.h, runtime/cuda/base.cuh). No include guard, on purpose.
 */
VCC_KERNEL(void, typed_binary_forward, (VccRt *rt, int op, int ta, int tb, const VccBcast *d, const void *a, const void *b, void *y))
VCC_KERNEL(void, typed_clip_forward, (VccRt *rt, int t, int64_t n, const void *x, const void *lo, const void *hi, void *y))
VCC_KERNEL(void, typed_maxpool_forward, (VccRt *rt, int t, const VccPoolDesc *d, const void *x, void *y))
VCC_KERNEL(void, typed_pad_forward, (VccRt *rt, int t, const VccPadDesc *d, const void *x, int64_t cbits, void *y))
