/*
 * cuda/compare.cuh - the compare family on the GPU: comparisons and logic ops with broadcasting (Equal,
 * Less, LessOrEqual, Greater, GreaterOrEqual, And, Or, Xor), Not, Where and Where's gradient, on data of
 * any element type vcc has. One thread per output element. Signatures: proto/compare.h; per-element
 * bodies shared with the C target: elem/compare.h. Part of the CUDA target's runtime (cuda/base.cuh).
 */
#ifndef VCC_CUDA_COMPARE_CUH
#define VCC_CUDA_COMPARE_CUH

#include "base.cuh"
#include "../elem/compare.h"

#define VCC_KERNEL VCC_KERNEL_DECLARE
#include "../proto/compare.h"
#undef VCC_KERNEL

static __global__ void compare_kernel(int op, int t, VccBcast d, const void *a, const void *b, uint8_t *y)
{
    VCC_GRID_STRIDE(i, d.n) {
        int64_t ia, ib;
        vcc_bcast_index(&d, i, &ia, &ib);
        y[i] = (uint8_t)vcc_compare(op, t, a, ia, b, ib);
    }
}

static __global__ void not_kernel(int64_t n, const uint8_t *x, uint8_t *y)
{
    VCC_GRID_STRIDE(i, n) y[i] = !x[i];
}

static __global__ void where_kernel(int t, VccWhereDesc d, const uint8_t *c, const void *x, const void *y, void *out)
{
    VCC_GRID_STRIDE(i, d.n) vcc_where(t, &d, c, x, y, out, i);
}

static __global__ void where_backward_kernel(VccBcast d, const uint8_t *c, const float *dout, float *dx, float *dy)
{
    VCC_GRID_STRIDE(i, d.n) vcc_where_grad(&d, c, dout, dx, dy, i);
}

/* As cpu/compare.h. */
static inline void compare_forward(VccRt *rt, int op, int t, const VccBcast *d, const void *a, const void *b, uint8_t *y)
{
    (void)rt;
    if (d->n <= 0) return;
    compare_kernel<<<vcc__grid(d->n), VCC_CUDA_THREADS>>>(op, t, *d, a, b, y);
    VCC_CUDA_LAUNCHED();
}

/* As cpu/compare.h. */
static inline void not_forward(VccRt *rt, int64_t n, const uint8_t *x, uint8_t *y)
{
    (void)rt;
    if (n <= 0) return;
    not_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(n, x, y);
    VCC_CUDA_LAUNCHED();
}

/* As cpu/compare.h. */
static inline void where_forward(VccRt *rt, int t, const VccWhereDesc *d, const uint8_t *c, const void *x,
                                 const void *y, void *out)
{
    (void)rt;
    if (d->n <= 0) return;
    where_kernel<<<vcc__grid(d->n), VCC_CUDA_THREADS>>>(t, *d, c, x, y, out);
    VCC_CUDA_LAUNCHED();
}

/* As cpu/compare.h. */
static inline void where_backward(VccRt *rt, const VccBcast *d, const uint8_t *c, const float *dout, float *dx,
                                  float *dy)
{
    (void)rt;
    if (d->n <= 0) return;
    where_backward_kernel<<<vcc__grid(d->n), VCC_CUDA_THREADS>>>(*d, c, dout, dx, dy);
    VCC_CUDA_LAUNCHED();
}

#define VCC_KERNEL VCC_KERNEL_CHECK
#include "../proto/compare.h"
#undef VCC_KERNEL

#endif /* VCC_CUDA_COMPARE_CUH */
