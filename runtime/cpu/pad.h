/*
 * cpu/pad.h - the pad family's CPU kernels: Pad and its gradient.
 * Signatures: proto/pad.h; per-element bodies shared with the CUDA target: elem/pad.h. Part of the C
 * target's runtime (cpu/base.h).
 */
#ifndef VCC_CPU_PAD_H
#define VCC_CPU_PAD_H

#include "base.h"
#include "../elem/pad.h"

#define VCC_KERNEL VCC_KERNEL_DECLARE
#include "../proto/pad.h"
#undef VCC_KERNEL

/* pad_forward: y (out...) = x (in...) cropped by the negative pads and padded by the positive ones in
 * d's mode (ONNX Pad, opsets 1-25: constant, reflect, edge, wrap; torch.nn.functional.pad constant,
 * reflect, replicate, circular). */
VCC_CPU_FN void pad_forward(VccRt *rt, const VccPadDesc *d, const float *x, float *y)
{
    int64_t n = 1, k;
    int i;
    (void)rt;
    for (i = 0; i < d->rank; i++) n *= d->out[i];
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (k = 0; k < n; k++) y[k] = vcc_pad_forward_at(d, x, k);
}

/* pad_backward: dx (in...) = the sum of dy (out...) over the outputs that read each element of x, 0 where
 * it was cropped (OVERWRITTEN; the adjoint of pad_forward, torch's pad backward). */
VCC_CPU_FN void pad_backward(VccRt *rt, const VccPadDesc *d, const float *dy, float *dx)
{
    int64_t n = 1, k;
    int i;
    (void)rt;
    for (i = 0; i < d->rank; i++) n *= d->in[i];
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (k = 0; k < n; k++) dx[k] = vcc_pad_backward_at(d, dy, k);
}

#define VCC_KERNEL VCC_KERNEL_CHECK
#include "../proto/pad.h"
#undef VCC_KERNEL

#endif /* VCC_CPU_PAD_H */
