/*
 * proto/loss.h - the loss family's kernels (softmax cross-entropy, mean squared error and their gradients): the one signature list both
 * targets define (cpu/loss.h, cuda/loss.cuh). Included twice by each: before the definitions with
 * VCC_KERNEL = VCC_KERNEL_DECLARE, after them with VCC_KERNEL = VCC_KERNEL_CHECK, so a definition whose
 * signature drifts from this list is a compile error on both targets (runtime/cpu/base.h,
 * runtime/cuda/base.cuh). No include guard, on purpose.
 */
VCC_KERNEL(void, softmax_xent_forward, (VccRt *rt, int64_t N, int64_t K, const float *logits, const int64_t *labels, float *loss, float *prob))
VCC_KERNEL(void, softmax_xent_backward, (VccRt *rt, int64_t N, int64_t K, const float *prob, const int64_t *labels, const float *dloss, float *dlogits))
VCC_KERNEL(void, mse_forward, (VccRt *rt, int64_t n, const float *pred, const float *target, float *loss))
VCC_KERNEL(void, mse_backward, (VccRt *rt, int64_t n, const float *pred, const float *target, float *dpred))
