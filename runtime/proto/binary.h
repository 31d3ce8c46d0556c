/*
 * proto/binary.h - the binary family's kernels (Add, Sub, Mul, Div, Pow with broadcasting, Pow's
 * gradient, GradAccumulate): the one signature list both targets define (cpu/binary.h,
 * cuda/binary.cuh). Included twice by each: before the definitions with VCC_KERNEL = VCC_KERNEL_DECLARE,
 * after them with VCC_KERNEL = VCC_KERNEL_CHECK, so a definition whose signature drifts from this list
 * is a compile error on both targets (runtime/cpu/base.h, runtime/cuda/base.cuh). No include guard, on
 * purpose.
 */
VCC_KERNEL(void, add_forward, (VccRt *rt, int64_t n, const float *a, const float *b, float *y))
VCC_KERNEL(void, binary_forward, (VccRt *rt, int op, const VccBcast *d, const float *a, const float *b, float *y))
VCC_KERNEL(void, pow_backward, (VccRt *rt, const VccBcast *d, const float *a, const float *b, const float *y, const float *dy, float *da, float *db))
