/*
 * elem/unary.h - the unary family's per-element (and per-row) arithmetic, written once for both
 * targets: the CPU loops (cpu/unary.h) call these directly, the CUDA kernels (cuda/unary.cuh) from device
 * code. Pure C99, no I/O, no state.
 */
#ifndef VCC_ELEM_UNARY_H
#define VCC_ELEM_UNARY_H

#include "base.h"

/* vcc_relu_fwd: max(x, 0) as torch.relu / ONNX Relu. NaN propagates
 * (relu(NaN) = NaN, as PyTorch); -0.0 and negatives give +0.0. */
VCC_HD float vcc_relu_fwd(float x)
{
    return (x > 0.0f || x != x) ? x : 0.0f;
}

/* vcc_relu_bwd: gradient of ReLU given its OUTPUT y and upstream dy:
 * y > 0 ? dy : 0. (A NaN y passes dy through, as PyTorch's
 * threshold_backward, which zeroes where y <= 0.) */
VCC_HD float vcc_relu_bwd(float y, float dy)
{
    return (y <= 0.0f) ? 0.0f : dy;
}

#endif /* VCC_ELEM_UNARY_H */
