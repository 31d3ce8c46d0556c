/*
 * proto/attention.h - the attention family's kernels (the fused scaled dot-product attention and its
 * gradient): the one signature list both targets define (cpu/attention.h, cuda/attention.cuh). Included
 * twice by each: before the definitions with VCC_KERNEL = VCC_KERNEL_DECLARE, after them with
 * VCC_KERNEL = VCC_KERNEL_CHECK, so a definition whose signature drifts from this list is a compile error
 * on both targets (runtime/cpu/base.h, runtime/cuda/base.cuh). No include guard, on purpose.
 */
VCC_KERNEL(void, attention_forward, (VccRt *rt, const VccAttnDesc *d, const float *q, const float *k, const float *v, const float *bias, float *o, float *lse))
VCC_KERNEL(void, attention_backward, (VccRt *rt, const VccAttnDesc *d, const float *q, const float *k, const float *v, const float *bias, const float *o, const float *lse, const float *dout, float *dq, float *dk, float *dv, float *delta))
