/*
 * elem/binary.h - the binary family's per-element arithmetic (Add, Sub, Mul, Div, Pow and Pow's
 * gradient) and the broadcast index map, written once for both targets: the CPU loops (cpu/binary.h)
 * call these directly, the CUDA kernels (cuda/binary.cuh) from device code. Pure C99, no I/O, no state.
 *
 * Broadcasting (ONNX "Broadcasting", numpy rules): Y has the broadcast shape; an operand broadcast along
 * a dim reads the same element for every index of that dim (stride 0). The compiler collapses the shapes
 * first (size-1 dims of Y dropped, neighbouring dims that both operands read alike merged), so rank is
 * small: (N, C, T, H, W) * (N, C, 1, 1, 1) is Y (N*C, S) with A strides (S, 1) and B strides (1, 0).
 */
#ifndef VCC_ELEM_BINARY_H
#define VCC_ELEM_BINARY_H

#include "base.h"

#define VCC_BCAST_RANK 8

/* VccBcast: Y (dims[0..rank-1]) = op(A, B) with A's element of Y's index i at sum(idx_k * sa[k]) and
 * B's at sum(idx_k * sb[k]) (strides in elements, 0 along a broadcast dim); n = Y's element count. */
typedef struct VccBcast {
    int rank;
    int64_t n;
    int64_t dims[VCC_BCAST_RANK];
    int64_t sa[VCC_BCAST_RANK], sb[VCC_BCAST_RANK];
} VccBcast;

/* The binary ops (the `op` argument of binary_forward). */
enum { VCC_BIN_ADD = 0, VCC_BIN_SUB = 1, VCC_BIN_MUL = 2, VCC_BIN_DIV = 3, VCC_BIN_POW = 4 };

/* vcc_bcast_index: the offsets *ia, *ib in A and B of Y's flat index i. */
VCC_HD void vcc_bcast_index(const VccBcast *d, int64_t i, int64_t *ia, int64_t *ib)
{
    int64_t a = 0, b = 0;
    int k;
    for (k = d->rank - 1; k >= 0; k--) {
        int64_t c = i % d->dims[k];
        i /= d->dims[k];
        a += c * d->sa[k];
        b += c * d->sb[k];
    }
    *ia = a;
    *ib = b;
}

/* vcc_pow_fwd: a ** b as torch.pow for float32 / ONNX Pow: powf, except b == 2 gives a * a exactly
 * (PyTorch's kernel squares for exponent 2). A negative base with a non-integer exponent gives NaN. */
VCC_HD float vcc_pow_fwd(float a, float b)
{
    return b == 2.0f ? a * a : powf(a, b);
}

/* vcc_binary_fwd: op(a, b) for op VCC_BIN_*: a + b, a - b, a * b, a / b (IEEE true division, as
 * torch.div and ONNX Div on floats), vcc_pow_fwd(a, b). */
VCC_HD float vcc_binary_fwd(int op, float a, float b)
{
    switch (op) {
    case VCC_BIN_ADD: return a + b;
    case VCC_BIN_SUB: return a - b;
    case VCC_BIN_MUL: return a * b;
    case VCC_BIN_DIV: return a / b;
    default: return vcc_pow_fwd(a, b);
    }
}

/* vcc_pow_dbase: the gradient of y = a ** b with respect to the base, given dy (PyTorch
 * pow_backward_self): 0 where b == 0, else dy * (b * a ** (b - 1)). */
VCC_HD float vcc_pow_dbase(float a, float b, float dy)
{
    return b == 0.0f ? 0.0f : dy * (b * vcc_pow_fwd(a, b - 1.0f));
}

/* vcc_pow_dexp: the gradient of y = a ** b with respect to the exponent, given y and dy (PyTorch
 * pow_backward_exponent): 0 where b >= 0 and a == 0, else dy * (y * log(a)) (NaN for a < 0). */
VCC_HD float vcc_pow_dexp(float a, float b, float y, float dy)
{
    return (b >= 0.0f && a == 0.0f) ? 0.0f : dy * (y * logf(a));
}

#endif /* VCC_ELEM_BINARY_H */
