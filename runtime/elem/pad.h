/*
 * elem/pad.h - the pad family's per-element arithmetic, written once for both targets: the CPU loops
 * (cpu/pad.h) call these directly, the CUDA kernels (cuda/pad.cuh) from device code. Pure C99, no I/O,
 * no state.
 *
 * ONNX Pad (torch.nn.functional.pad) of a tensor of any rank up to 8, per dim: a negative pad crops
 * that many elements at its end of x first (ONNX: "negative pads remove elements"); then the kept part
 * (keep elements, from crop on) gets lo elements before it and out - lo - keep after it, filled by the
 * mode. Output coordinate o reads kept coordinate j = o - lo:
 *   constant  j outside [0, keep): the value
 *   reflect   mirrored at the ends, the end element not repeated (period 2*(keep-1)); torch 'reflect'
 *   edge      clamped to [0, keep-1]; torch 'replicate'
 *   wrap      j mod keep; torch 'circular'
 * The compiler accepts reflect pads up to keep-1 and wrap pads up to keep, as PyTorch (numpy's pad
 * differs past them).
 */
#ifndef VCC_ELEM_PAD_H
#define VCC_ELEM_PAD_H

#include "base.h"

#define VCC_PAD_MAX_RANK 8

enum { VCC_PAD_CONSTANT = 0, VCC_PAD_REFLECT = 1, VCC_PAD_EDGE = 2, VCC_PAD_WRAP = 3 };

/* VccPadDesc: one Pad. x (in[0..rank-1]) -> y (out[0..rank-1]), per dim out = lo + keep + (the end pad),
 * keep = the elements of x from crop on that are kept (keep <= 0 only in constant mode). */
typedef struct VccPadDesc {
    int rank;                         /* 0..8 */
    int mode;                         /* VCC_PAD_* */
    float value;                      /* constant mode's fill */
    int64_t in[VCC_PAD_MAX_RANK], out[VCC_PAD_MAX_RANK];
    int64_t lo[VCC_PAD_MAX_RANK];     /* elements added before the kept part (positive begin pad) */
    int64_t crop[VCC_PAD_MAX_RANK];   /* elements of x cropped at the begin (negative begin pad) */
    int64_t keep[VCC_PAD_MAX_RANK];   /* elements of x kept */
} VccPadDesc;

/* vcc_pad_mod: a mod m in [0, m) for any sign of a (m > 0). */
VCC_HD int64_t vcc_pad_mod(int64_t a, int64_t m)
{
    a %= m;
    return a < 0 ? a + m : a;
}

/* vcc_pad_src: the kept coordinate [0, keep) that kept coordinate j (any integer) reads in mode, or -1 for
 * the constant. */
VCC_HD int64_t vcc_pad_src(int mode, int64_t keep, int64_t j)
{
    int64_t r;
    if (j >= 0 && j < keep) return j;
    switch (mode) {
    case VCC_PAD_EDGE: return j < 0 ? 0 : keep - 1;
    case VCC_PAD_WRAP: return vcc_pad_mod(j, keep);
    case VCC_PAD_REFLECT:
        if (keep == 1) return 0;
        r = vcc_pad_mod(j, 2 * (keep - 1));
        return r < keep ? r : 2 * (keep - 1) - r;
    default: return -1;
    }
}

/* vcc_pad_src_at: the flat index in x (row-major over in) of the element y's flat index k (row-major over
 * out) reads, or -1 where y holds the constant. */
VCC_HD int64_t vcc_pad_src_at(const VccPadDesc *d, int64_t k)
{
    int64_t src = 0, stride = 1;
    int i;
    for (i = d->rank - 1; i >= 0; i--) {
        const int64_t o = k % d->out[i], j = d->keep[i] > 0 ? vcc_pad_src(d->mode, d->keep[i], o - d->lo[i]) : -1;
        if (j < 0) return -1;
        src += (d->crop[i] + j) * stride;
        stride *= d->in[i];
        k /= d->out[i];
    }
    return src;
}

/* vcc_pad_forward_at: y at flat index k (row-major over out): x at the element it reads, or the value. */
VCC_ELEM_IN VCC_HD float vcc_pad_forward_at(const VccPadDesc *d, const VCC_IN *x, int64_t k)
{
    const int64_t src = vcc_pad_src_at(d, k);
    return src < 0 ? d->value : vcc_ld(x, src);
}

/* vcc_pad_next: the first output coordinate after o (o = -1: the first) along dim i that reads kept
 * coordinate t in [0, keep), or -1 when none is left. */
VCC_HD int64_t vcc_pad_next(const VccPadDesc *d, int i, int64_t t, int64_t o)
{
    const int64_t keep = d->keep[i], j = o + 1 - d->lo[i]; /* the first kept coordinate to consider */
    int64_t c, c2;
    if (keep == 1 && d->mode != VCC_PAD_CONSTANT) {
        c = j; /* every coordinate reads the one element */
    } else if (d->mode == VCC_PAD_EDGE && t == 0) {
        if (j > 0) return -1;
        c = j; /* every j <= 0 */
    } else if (d->mode == VCC_PAD_EDGE && t == keep - 1) {
        c = j > t ? j : t; /* every j >= keep-1 */
    } else if (d->mode == VCC_PAD_WRAP) {
        c = j + vcc_pad_mod(t - j, keep);
    } else if (d->mode == VCC_PAD_REFLECT) { /* j = t or j = -t modulo 2*(keep-1) */
        c = j + vcc_pad_mod(t - j, 2 * (keep - 1));
        c2 = j + vcc_pad_mod(-t - j, 2 * (keep - 1));
        if (c2 < c) c = c2;
    } else { /* constant, and edge inside: only j = t */
        if (t < j) return -1;
        c = t;
    }
    return c + d->lo[i] < d->out[i] ? c + d->lo[i] : -1;
}

/* vcc_pad_backward_at: dx at flat index k (row-major over in): the sum of dy over the outputs that read
 * that element (none where it was cropped), in double. */
VCC_ELEM_IN VCC_HD float vcc_pad_backward_at(const VccPadDesc *d, const VCC_IN *dy, int64_t k)
{
    int64_t t[VCC_PAD_MAX_RANK], o[VCC_PAD_MAX_RANK];
    double acc = 0.0;
    int i;
    for (i = d->rank - 1; i >= 0; i--) {
        t[i] = k % d->in[i] - d->crop[i];
        k /= d->in[i];
        if (t[i] < 0 || t[i] >= d->keep[i] || (o[i] = vcc_pad_next(d, i, t[i], -1)) < 0) return 0.0f;
    }
    for (;;) {
        int64_t flat = 0;
        for (i = 0; i < d->rank; i++) flat = flat * d->out[i] + o[i];
        acc += (double)vcc_ld(dy, flat);
        for (i = d->rank - 1; i >= 0; i--) { /* the next combination, last dim fastest */
            o[i] = vcc_pad_next(d, i, t[i], o[i]);
            if (o[i] >= 0) break;
            o[i] = vcc_pad_next(d, i, t[i], -1);
        }
        if (i < 0) return (float)acc;
    }
}

#endif /* VCC_ELEM_PAD_H */
