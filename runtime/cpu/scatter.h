/*
 * cpu/scatter.h - the scatter family's CPU kernels: ScatterND and ScatterElements (reduction none and
 * add) and their gradients. Signatures: proto/scatter.h; the index arithmetic shared with the CUDA
 * target: elem/scatter.h. Part of the C target's runtime (cpu/base.h).
 */
#ifndef VCC_CPU_SCATTER_H
#define VCC_CPU_SCATTER_H

#include "base.h"
#include "../elem/scatter.h"

#define VCC_KERNEL VCC_KERNEL_DECLARE
#include "../proto/scatter.h"
#undef VCC_KERNEL

/* scatter_forward: y (a copy of data already: copy_forward) gets each update at its element:
 * y[o] = upd[u] (add 0: ONNX reduction none) or y[o] += upd[u] (add 1), u ascending (ONNX's order:
 * duplicates under add sum in it, as torch's scatter_add and index_put(accumulate=True) on the CPU).
 * serial: some element gets several updates (then the loop stays on one thread). */
VCC_CPU_FN void scatter_forward(VccRt *rt, const VccScatter *d, int add, int serial, const int64_t *idx,
                                const float *upd, float *y)
{
    int64_t u;
    (void)rt;
    (void)serial;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (!serial)
#endif
    for (u = 0; u < d->n; u++) {
        const int64_t o = vcc_scatter_offset(d, idx, u);
        if (o < 0) continue;
        y[o] = add ? y[o] + upd[u] : upd[u];
    }
}

/* The gradient loops: dy NULL: out[o] = 0 at the element o of every update; else out[u] = dy[o]. */
VCC_CPU_FN void vcc__scatter_backward(const VccScatter *d, const int64_t *idx, const float *dy, float *out)
{
    int64_t u;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (u = 0; u < d->n; u++) {
        const int64_t o = vcc_scatter_offset(d, idx, u);
        if (!dy && o >= 0) out[o] = 0.0f;
        if (dy) out[u] = o < 0 ? 0.0f : dy[o];
    }
}

/* scatter_backward_data: dx (a copy of dy already) with the elements updates overwrote zeroed (the
 * gradient of data under reduction none: those elements of y do not depend on it). */
VCC_CPU_FN void scatter_backward_data(VccRt *rt, const VccScatter *d, const int64_t *idx, float *dx)
{
    (void)rt;
    vcc__scatter_backward(d, idx, NULL, dx);
}

/* scatter_backward_updates: dupd[u] = dy at the element update u landed on (the gradient of the
 * updates, none and add alike); OVERWRITTEN. */
VCC_CPU_FN void scatter_backward_updates(VccRt *rt, const VccScatter *d, const int64_t *idx, const float *dy,
                                         float *dupd)
{
    (void)rt;
    vcc__scatter_backward(d, idx, dy, dupd);
}

#define VCC_KERNEL VCC_KERNEL_CHECK
#include "../proto/scatter.h"
#undef VCC_KERNEL

#endif /* VCC_CPU_SCATTER_H */
