/*
 * proto/softmax.h - the softmax family's kernels (Softmax, LogSoftmax and their gradients): the one
 * signature list both targets define (cpu/softmax.h, cuda/softmax.cuh). The tensors are viewed as
 * (outer, D, inner) and each of the outer * inner rows of D elements (stride inner) is normalized on its
 * own (elem/softmax.h); lg = 1 for LogSoftmax. Included twice by each: before the definitions with
 * VCC_KERNEL = VCC_KERNEL_DECLARE, after them with VCC_KERNEL = VCC_KERNEL_CHECK, so a definition whose
 * signature drifts from this list is a compile error on both targets (runtime/cpu/base.h,
 * runtime/cuda/base.cuh). No include guard, on purpose.
 */
VCC_KERNEL(void, softmax_forward, (VccRt *rt, int lg, int64_t outer, int64_t D, int64_t inner, const float *x, float *y))
VCC_KERNEL(void, softmax_backward, (VccRt *rt, int lg, int64_t outer, int64_t D, int64_t inner, const float *y, const float *dy, float *dx))
