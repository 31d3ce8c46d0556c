/*
 * cuda/binary.cuh - the binary family's CUDA kernels: Add, Sub, Mul, Div and Pow with broadcasting,
 * Pow's gradient, GradAccumulate.
 * Signatures: proto/binary.h; per-element bodies shared with the C target: elem/binary.h. Part of the
 * CUDA target's runtime (cuda/base.cuh).
 */
#ifndef VCC_CUDA_BINARY_CUH
#define VCC_CUDA_BINARY_CUH

#include "base.cuh"
#include "../elem/binary.h"

#define VCC_KERNEL VCC_KERNEL_DECLARE
#include "../proto/binary.h"
#undef VCC_KERNEL

/* The kernels are templates over their tensors' element types (float, or __nv_bfloat16 for the bfloat16
 * values of vcc --precision bf16; vcc_ld / vcc_st, elem/base.h), the arithmetic float32 either way. */
template <class TA, class TB, class TY>
static __global__ void add_forward_kernel(int64_t n, const TA *a, const TB *b, TY *y)
{
    VCC_GRID_STRIDE(i, n) vcc_st(y, i, vcc_ld(a, i) + vcc_ld(b, i));
}

/* y (d.n) = op(a, b) with broadcasting; the equal-shape form (rank 1, unit strides) needs no index map */
template <class TA, class TB, class TY>
static __global__ void binary_forward_kernel(int op, VccBcast d, const TA *a, const TB *b, TY *y)
{
    if (d.rank == 1 && d.sa[0] == 1 && d.sb[0] == 1) {
        VCC_GRID_STRIDE(i, d.n) vcc_st(y, i, vcc_binary_fwd(op, vcc_ld(a, i), vcc_ld(b, i)));
        return;
    }
    VCC_GRID_STRIDE(i, d.n) {
        int64_t ia, ib;
        vcc_bcast_index(&d, i, &ia, &ib);
        vcc_st(y, i, vcc_binary_fwd(op, vcc_ld(a, ia), vcc_ld(b, ib)));
    }
}

static __global__ void pow_backward_kernel(VccBcast d, const float *a, const float *b, const float *y,
                                           const float *dy, float *da, float *db)
{
    VCC_GRID_STRIDE(i, d.n) {
        int64_t ia, ib;
        vcc_bcast_index(&d, i, &ia, &ib);
        const float av = a[ia], bv = b[ib], g = dy[i];
        if (db) db[i] = vcc_pow_dexp(av, bv, y[i], g);
        if (da) da[i] = vcc_pow_dbase(av, bv, g);
    }
}

/* y may == a or b */
template <class TA, class TB, class TY>
static inline void add_forward(VccRt *rt, int64_t n, const TA *a, const TB *b, TY *y)
{
    (void)rt;
    if (n <= 0) return;
    add_forward_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(n, a, b, y);
    VCC_CUDA_LAUNCHED();
}

/* y may == a or b when that operand has Y's shape */
template <class TA, class TB, class TY>
static inline void binary_forward(VccRt *rt, int op, const VccBcast *d, const TA *a, const TB *b, TY *y)
{
    (void)rt;
    if (d->n <= 0) return;
    binary_forward_kernel<<<vcc__grid(d->n), VCC_CUDA_THREADS>>>(op, *d, a, b, y);
    VCC_CUDA_LAUNCHED();
}

/* da, db: NULL when not wanted; y is read for db only (float32 only: Pow is on autocast's float32 list) */
static inline void pow_backward(VccRt *rt, const VccBcast *d, const float *a, const float *b, const float *y,
                                const float *dy, float *da, float *db)
{
    (void)rt;
    if (d->n <= 0) return;
    pow_backward_kernel<<<vcc__grid(d->n), VCC_CUDA_THREADS>>>(*d, a, b, y, dy, da, db);
    VCC_CUDA_LAUNCHED();
}

#define VCC_KERNEL VCC_KERNEL_CHECK
#include "../proto/binary.h"
#undef VCC_KERNEL

#endif /* VCC_CUDA_BINARY_CUH */
