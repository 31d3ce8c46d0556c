/*
 * cpu/compare.h - the compare family's CPU loops: comparisons and logic ops with broadcasting (Equal,
 * Less, LessOrEqual, Greater, GreaterOrEqual, And, Or, Xor), Not, Where and Where's gradient, on data of
 * any element type vcc has. Signatures: proto/compare.h; per-element bodies shared with the CUDA target:
 * elem/compare.h. Part of the C target's runtime (cpu/base.h). A program inlines this file when it
 * schedules one of these ops (a mask computed from data at run time).
 */
#ifndef VCC_CPU_COMPARE_H
#define VCC_CPU_COMPARE_H

#include "base.h"
#include "../elem/compare.h"

#define VCC_KERNEL VCC_KERNEL_DECLARE
#include "../proto/compare.h"
#undef VCC_KERNEL

/* compare_forward: y (d->n bools) = op(a, b) (VCC_CMP_*, elem/compare.h) with broadcasting (d:
 * elem/binary.h), a and b of element type t. */
VCC_CPU_FN void compare_forward(VccRt *rt, int op, int t, const VccBcast *d, const void *a, const void *b, uint8_t *y)
{
    int64_t i, ia, ib;
    (void)rt;
    for (i = 0; i < d->n; i++) {
        vcc_bcast_index(d, i, &ia, &ib);
        y[i] = (uint8_t)vcc_compare(op, t, a, ia, b, ib);
    }
}

/* not_forward: y (n bools) = the negation of x (ONNX Not). y may == x. */
VCC_CPU_FN void not_forward(VccRt *rt, int64_t n, const uint8_t *x, uint8_t *y)
{
    int64_t i;
    (void)rt;
    for (i = 0; i < n; i++) y[i] = !x[i];
}

/* where_forward: out (d->n elements of type t) = x where c else y, c (bool), x and y (type t) broadcast
 * as d says (ONNX Where). */
VCC_CPU_FN void where_forward(VccRt *rt, int t, const VccWhereDesc *d, const uint8_t *c, const void *x, const void *y,
                              void *out)
{
    int64_t i;
    (void)rt;
    for (i = 0; i < d->n; i++) vcc_where(t, d, c, x, y, out, i);
}

/* where_backward: dx, dy (d->n floats each, out's shape; either NULL) = dout where c, dout where not c
 * (zero elsewhere); c broadcast as d's A says. */
VCC_CPU_FN void where_backward(VccRt *rt, const VccBcast *d, const uint8_t *c, const float *dout, float *dx, float *dy)
{
    int64_t i;
    (void)rt;
    for (i = 0; i < d->n; i++) vcc_where_grad(d, c, dout, dx, dy, i);
}

#define VCC_KERNEL VCC_KERNEL_CHECK
#include "../proto/compare.h"
#undef VCC_KERNEL

#endif /* VCC_CPU_COMPARE_H */
