/*
 * cpu/binary.h - the binary family's CPU kernels: Add, Sub, Mul, Div and Pow with broadcasting, Pow's
 * gradient, GradAccumulate.
 * Signatures: proto/binary.h; per-element bodies shared with the CUDA target: elem/binary.h. Part of the
 * C target's runtime (cpu/base.h).
 */
#ifndef VCC_CPU_BINARY_H
#define VCC_CPU_BINARY_H

#include "base.h"
#include "../elem/binary.h"

#define VCC_KERNEL VCC_KERNEL_DECLARE
#include "../proto/binary.h"
#undef VCC_KERNEL

/* add_forward: y = a + b elementwise (ONNX Add, same shape; GradAccumulate). a, b, y (n);
 * y may == a or b. */
VCC_CPU_FN void add_forward(VccRt *rt, int64_t n, const float *a, const float *b, float *y)
{
    int64_t i;
    (void)rt;
    VCC_CPU_PARALLEL_MAP
    for (i = 0; i < n; i++) y[i] = a[i] + b[i];
}

/* The rows of a broadcast: Y as (n / L, L) with L = d->dims[rank-1]; within a row A and B advance by
 * their last strides. The body (the variadic arguments) computes Y's element i from A's element ia and
 * B's ib. */
#define VCC__BCAST_ROWS(d, ...)                                                    \
    do {                                                                          \
        const int64_t L_ = (d)->dims[(d)->rank - 1], rows_ = (d)->n / L_;         \
        const int64_t sa_ = (d)->sa[(d)->rank - 1], sb_ = (d)->sb[(d)->rank - 1]; \
        int64_t r_;                                                               \
        VCC__OMP_FOR                                                              \
        for (r_ = 0; r_ < rows_; r_++) {                                          \
            int64_t a0_, b0_, j_;                                                 \
            vcc_bcast_index((d), r_ * L_, &a0_, &b0_);                            \
            for (j_ = 0; j_ < L_; j_++) {                                         \
                const int64_t i = r_ * L_ + j_, ia = a0_ + j_ * sa_, ib = b0_ + j_ * sb_; \
                __VA_ARGS__;                                                      \
            }                                                                     \
        }                                                                         \
    } while (0)
#ifdef _OPENMP
#define VCC__OMP_FOR _Pragma("omp parallel for schedule(static)")
#else
#define VCC__OMP_FOR
#endif

/* One op's loop: the element-for-element form (equal shapes), B a scalar, or the broadcast rows. */
#define VCC__BINARY_LOOP(d, OPC)                                                           \
    do {                                                                                   \
        int64_t i_;                                                                        \
        if ((d)->rank == 1 && (d)->sa[0] == 1 && (d)->sb[0] == 1) {                        \
            VCC_CPU_PARALLEL_MAP                                                           \
            for (i_ = 0; i_ < (d)->n; i_++) y[i_] = vcc_binary_fwd(OPC, a[i_], b[i_]);     \
        } else if ((d)->rank == 1 && (d)->sa[0] == 1 && (d)->sb[0] == 0) {                 \
            const float b0_ = b[0];                                                        \
            VCC_CPU_PARALLEL_MAP                                                           \
            for (i_ = 0; i_ < (d)->n; i_++) y[i_] = vcc_binary_fwd(OPC, a[i_], b0_);       \
        } else {                                                                           \
            VCC__BCAST_ROWS(d, y[i] = vcc_binary_fwd(OPC, a[ia], b[ib]));                  \
        }                                                                                  \
    } while (0)

/* binary_forward: y = op(a, b) with broadcasting, op one of VCC_BIN_ADD, _SUB, _MUL, _DIV, _POW
 * (ONNX Add, Sub, Mul, Div, Pow; torch +, -, *, /, **: elem/binary.h). d describes Y (d->n elements)
 * and where each operand's element of a Y index is (elem/binary.h, VccBcast). y may == a or b when
 * that operand has Y's shape. */
VCC_CPU_FN void binary_forward(VccRt *rt, int op, const VccBcast *d, const float *a, const float *b, float *y)
{
    (void)rt;
    if (d->n <= 0) return;
    /* the op is chosen outside the loops: each loop inlines one op's arithmetic */
    switch (op) {
    case VCC_BIN_ADD: VCC__BINARY_LOOP(d, VCC_BIN_ADD); break;
    case VCC_BIN_SUB: VCC__BINARY_LOOP(d, VCC_BIN_SUB); break;
    case VCC_BIN_MUL: VCC__BINARY_LOOP(d, VCC_BIN_MUL); break;
    case VCC_BIN_DIV: VCC__BINARY_LOOP(d, VCC_BIN_DIV); break;
    default: VCC__BINARY_LOOP(d, VCC_BIN_POW); break;
    }
}

/* pow_backward: the gradients of y = a ** b (binary_forward VCC_BIN_POW with the same d) at Y's shape,
 * before the reduction to each operand's shape: da = dy * b * a ** (b - 1) (0 where b == 0), db = dy *
 * y * log(a) (0 where a == 0 and b >= 0), PyTorch pow_backward_self / pow_backward_exponent
 * (elem/binary.h). y, dy, da, db (d->n); da or db NULL: not wanted; y is read for db only (NULL
 * without it). da, db never share dy's bytes. */
VCC_CPU_FN void pow_backward(VccRt *rt, const VccBcast *d, const float *a, const float *b, const float *y,
                             const float *dy, float *da, float *db)
{
    (void)rt;
    if (d->n <= 0) return;
    VCC__BCAST_ROWS(d, {
        const float av = a[ia], bv = b[ib], g = dy[i];
        if (db) db[i] = vcc_pow_dexp(av, bv, y[i], g);
        if (da) da[i] = vcc_pow_dbase(av, bv, g);
    });
}

#undef VCC__BINARY_LOOP
#undef VCC__BCAST_ROWS
#undef VCC__OMP_FOR

#define VCC_KERNEL VCC_KERNEL_CHECK
#include "../proto/binary.h"
#undef VCC_KERNEL

#endif /* VCC_CPU_BINARY_H */
