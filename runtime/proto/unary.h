/*
 * proto/unary.h - the unary family's kernels: the one signature list both targets define (cpu/unary.h,
 * cuda/unary.cuh). <op>_forward(a, b, x -> y) and <op>_backward(a, b, v, dy -> dx) apply the bodies
 * vcc_<op>_fwd / vcc_<op>_bwd of elem/unary.h to n elements (a, b: the op's attributes; v: x or y, as
 * the op's gradient reads). Included twice by each: before the definitions with
 * VCC_KERNEL = VCC_KERNEL_DECLARE, after them with VCC_KERNEL = VCC_KERNEL_CHECK, so a definition whose
 * signature drifts from this list is a compile error on both targets (runtime/cpu/base.h,
 * runtime/cuda/base.cuh). No include guard, on purpose.
 */
VCC_KERNEL(void, relu_forward, (VccRt *rt, int64_t n, const float *x, float *y))
VCC_KERNEL(void, relu_backward, (VccRt *rt, int64_t n, const float *y, const float *dy, float *dx))
VCC_KERNEL(void, sigmoid_forward, (VccRt *rt, int64_t n, float a, float b, const float *x, float *y))
VCC_KERNEL(void, hardsigmoid_forward, (VccRt *rt, int64_t n, float a, float b, const float *x, float *y))
VCC_KERNEL(void, hardswish_forward, (VccRt *rt, int64_t n, float a, float b, const float *x, float *y))
VCC_KERNEL(void, tanh_forward, (VccRt *rt, int64_t n, float a, float b, const float *x, float *y))
VCC_KERNEL(void, leakyrelu_forward, (VccRt *rt, int64_t n, float a, float b, const float *x, float *y))
VCC_KERNEL(void, clip_forward, (VccRt *rt, int64_t n, float a, float b, const float *x, float *y))
VCC_KERNEL(void, softplus_forward, (VccRt *rt, int64_t n, float a, float b, const float *x, float *y))
VCC_KERNEL(void, elu_forward, (VccRt *rt, int64_t n, float a, float b, const float *x, float *y))
VCC_KERNEL(void, neg_forward, (VccRt *rt, int64_t n, float a, float b, const float *x, float *y))
VCC_KERNEL(void, exp_forward, (VccRt *rt, int64_t n, float a, float b, const float *x, float *y))
VCC_KERNEL(void, log_forward, (VccRt *rt, int64_t n, float a, float b, const float *x, float *y))
VCC_KERNEL(void, sqrt_forward, (VccRt *rt, int64_t n, float a, float b, const float *x, float *y))
VCC_KERNEL(void, sin_forward, (VccRt *rt, int64_t n, float a, float b, const float *x, float *y))
VCC_KERNEL(void, cos_forward, (VccRt *rt, int64_t n, float a, float b, const float *x, float *y))
VCC_KERNEL(void, abs_forward, (VccRt *rt, int64_t n, float a, float b, const float *x, float *y))
VCC_KERNEL(void, floor_forward, (VccRt *rt, int64_t n, float a, float b, const float *x, float *y))
VCC_KERNEL(void, reciprocal_forward, (VccRt *rt, int64_t n, float a, float b, const float *x, float *y))
VCC_KERNEL(void, erf_forward, (VccRt *rt, int64_t n, float a, float b, const float *x, float *y))
VCC_KERNEL(void, gelu_forward, (VccRt *rt, int64_t n, float a, float b, const float *x, float *y))
VCC_KERNEL(void, swish_forward, (VccRt *rt, int64_t n, float a, float b, const float *x, float *y))
VCC_KERNEL(void, sigmoid_backward, (VccRt *rt, int64_t n, float a, float b, const float *v, const float *dy, float *dx))
VCC_KERNEL(void, hardsigmoid_backward, (VccRt *rt, int64_t n, float a, float b, const float *v, const float *dy, float *dx))
VCC_KERNEL(void, hardswish_backward, (VccRt *rt, int64_t n, float a, float b, const float *v, const float *dy, float *dx))
VCC_KERNEL(void, tanh_backward, (VccRt *rt, int64_t n, float a, float b, const float *v, const float *dy, float *dx))
VCC_KERNEL(void, leakyrelu_backward, (VccRt *rt, int64_t n, float a, float b, const float *v, const float *dy, float *dx))
VCC_KERNEL(void, clip_backward, (VccRt *rt, int64_t n, float a, float b, const float *v, const float *dy, float *dx))
VCC_KERNEL(void, softplus_backward, (VccRt *rt, int64_t n, float a, float b, const float *v, const float *dy, float *dx))
VCC_KERNEL(void, elu_backward, (VccRt *rt, int64_t n, float a, float b, const float *v, const float *dy, float *dx))
VCC_KERNEL(void, exp_backward, (VccRt *rt, int64_t n, float a, float b, const float *v, const float *dy, float *dx))
VCC_KERNEL(void, log_backward, (VccRt *rt, int64_t n, float a, float b, const float *v, const float *dy, float *dx))
VCC_KERNEL(void, sqrt_backward, (VccRt *rt, int64_t n, float a, float b, const float *v, const float *dy, float *dx))
VCC_KERNEL(void, sin_backward, (VccRt *rt, int64_t n, float a, float b, const float *v, const float *dy, float *dx))
VCC_KERNEL(void, cos_backward, (VccRt *rt, int64_t n, float a, float b, const float *v, const float *dy, float *dx))
VCC_KERNEL(void, abs_backward, (VccRt *rt, int64_t n, float a, float b, const float *v, const float *dy, float *dx))
VCC_KERNEL(void, reciprocal_backward, (VccRt *rt, int64_t n, float a, float b, const float *v, const float *dy, float *dx))
VCC_KERNEL(void, erf_backward, (VccRt *rt, int64_t n, float a, float b, const float *v, const float *dy, float *dx))
VCC_KERNEL(void, gelu_backward, (VccRt *rt, int64_t n, float a, float b, const float *v, const float *dy, float *dx))
VCC_KERNEL(void, swish_backward, (VccRt *rt, int64_t n, float a, float b, const float *v, const float *dy, float *dx))
