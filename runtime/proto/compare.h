/*
 * proto/compare.h - the compare family's kernels (Equal, Less, LessOrEqual, Greater, GreaterOrEqual,
 * And, Or, Xor with broadcasting, Not, Where and its gradient): the one signature list both targets
 * define (cpu/compare.h, cuda/compare.cuh). Included twice by each: before the definitions with
 * VCC_KERNEL = VCC_KERNEL_DECLARE, after them with VCC_KERNEL = VCC_KERNEL_CHECK, so a definition whose
 * signature drifts from this list is a compile error on both targets (runtime/cpu/base.h,
 * runtime/cuda/base.cuh). No include guard, on purpose.
 */
VCC_KERNEL(void, compare_forward, (VccRt *rt, int op, int t, const VccBcast *d, const void *a, const void *b, uint8_t *y))
VCC_KERNEL(void, not_forward, (VccRt *rt, int64_t n, const uint8_t *x, uint8_t *y))
VCC_KERNEL(void, where_forward, (VccRt *rt, int t, const VccWhereDesc *d, const uint8_t *c, const void *x, const void *y, void *out))
VCC_KERNEL(void, where_backward, (VccRt *rt, const VccBcast *d, const uint8_t *c, const float *dout, float *dx, float *dy))
