/*
 * cpu/typed.h - the typed kernels' CPU loops: Add, Sub, Mul, Div, Pow, Clip, MaxPool and Pad on data of
 * any element type vcc has (float64, int8-64, uint8-64, bool; the forward forms ONNX defines on them).
 * Signatures: proto/typed.h; per-element bodies shared with the CUDA target: elem/typed.h. Part of the C
 * target's runtime (cpu/base.h). A program inlines this file when a node's data are not float32.
 */
#ifndef VCC_CPU_TYPED_H
#define VCC_CPU_TYPED_H

#include "base.h"
#include "../elem/typed.h"

#define VCC_KERNEL VCC_KERNEL_DECLARE
#include "../proto/typed.h"
#undef VCC_KERNEL

/* typed_binary_forward: y (d->n elements, type ta) = op(a (ta), b (tb)) with broadcasting (ONNX Add, Sub,
 * Mul, Div, Pow; elem/typed.h for the arithmetic, elem/binary.h for d). y may == a when a has Y's shape. */
VCC_CPU_FN void typed_binary_forward(VccRt *rt, int op, int ta, int tb, const VccBcast *d, const void *a,
                                     const void *b, void *y)
{
    int64_t i, ia, ib;
    (void)rt;
    for (i = 0; i < d->n; i++) {
        vcc_bcast_index(d, i, &ia, &ib);
        vcc_typed_binary(op, ta, tb, a, ia, b, ib, y, i);
    }
}

/* typed_clip_forward: y (n, type t) = x clamped to [lo[0], hi[0]] (ONNX Clip-11+; lo or hi NULL: no
 * bound). y may == x. */
VCC_CPU_FN void typed_clip_forward(VccRt *rt, int t, int64_t n, const void *x, const void *lo, const void *hi,
                                   void *y)
{
    int64_t i;
    (void)rt;
    for (i = 0; i < n; i++) vcc_typed_clip(t, x, lo, hi, y, i);
}

/* typed_maxpool_forward: y (N, C, out..., type t) = the max of each window of x (N, C, in...) (ONNX
 * MaxPool on integer and float64 data; no Indices output). */
VCC_CPU_FN void typed_maxpool_forward(VccRt *rt, int t, const VccPoolDesc *d, const void *x, void *y)
{
    const int64_t S = d->out[0] * d->out[1] * d->out[2];
    int64_t p, o;
    (void)rt;
    for (p = 0; p < d->NC; p++)
        for (o = 0; o < S; o++) vcc_typed_maxpool(t, d, x, y, p, o);
}

/* typed_pad_forward: y (out..., type t) = x (in...) cropped and padded in d's mode (ONNX Pad), cbits the
 * constant mode's value as bits of type t (elem/typed.h, vcc_typed_pad). */
VCC_CPU_FN void typed_pad_forward(VccRt *rt, int t, const VccPadDesc *d, const void *x, int64_t cbits, void *y)
{
    int64_t n = 1, k;
    int i;
    (void)rt;
    for (i = 0; i < d->rank; i++) n *= d->out[i];
    for (k = 0; k < n; k++) vcc_typed_pad(t, d, x, cbits, y, k);
}

#define VCC_KERNEL VCC_KERNEL_CHECK
#include "../proto/typed.h"
#undef VCC_KERNEL

#endif /* VCC_CPU_TYPED_H */
