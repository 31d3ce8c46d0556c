/*
 * cpu/reduce.h - the reduce family's CPU kernels: ReduceSum, ReduceMean, ReduceMax, ReduceMin, their
 * gradients, and ReduceToShape (the sum of a broadcast operand's gradient back to its shape).
 * Signatures: proto/reduce.h; the arithmetic shared with the CUDA target: elem/reduce.h. Part of the C
 * target's runtime (cpu/base.h).
 */
#ifndef VCC_CPU_REDUCE_H
#define VCC_CPU_REDUCE_H

#include "base.h"
#include "../elem/reduce.h"

#define VCC_KERNEL VCC_KERNEL_DECLARE
#include "../proto/reduce.h"
#undef VCC_KERNEL

/* The reduction of all of Y element o's elements, as vcc_reduce_span(kind, d, x, base, 0, 1) gives it
 * (the same elements in the same order), with the last reduced dim walked as rows: no index arithmetic
 * per element. */
VCC_CPU_FN double vcc__reduce_rows(int kind, const VccReduce *d, const float *x, int64_t base)
{
    const int64_t L = d->rdims[d->nr - 1], s = d->rstride[d->nr - 1], rows = d->nred / L;
    double acc = vcc_reduce_identity(kind);
    int64_t q, j;
    for (q = 0; q < rows; q++) {
        const float *p = x + base + vcc_reduce_offset(d->nr - 1, d->rdims, d->rstride, q);
        for (j = 0; j < L; j++) acc = vcc_reduce_step(kind, acc, (double)p[j * s]);
    }
    return acc;
}

/* reduce_forward: y[o] = the reduction of Y element o's elements of x (elem/reduce.h, VccReduce), in
 * double, in ascending order, rounded once: kind VCC_RED_SUM (scale * sum: ONNX ReduceSum with scale 1,
 * ReduceToShape), VCC_RED_MEAN (scale * sum / nred: ReduceMean), VCC_RED_MAX / VCC_RED_MIN (ReduceMax /
 * ReduceMin, NaN propagating; scale 1). x (the dims d describes), y (d->nout). */
VCC_CPU_FN void reduce_forward(VccRt *rt, int kind, const VccReduce *d, float scale, const float *x, float *y)
{
    int64_t o;
    (void)rt;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (o = 0; o < d->nout; o++)
        y[o] = vcc_reduce_result(kind, d, vcc__reduce_rows(kind, d, x, vcc_reduce_base(d, o)), scale);
}

/* reduce_backward: dx (X's shape, OVERWRITTEN) from dy (d->nout): every element of Y element o gets
 * vcc_reduce_scatter's share of dy[o] (SUM: dy * scale; MEAN: dy / nred; MAX, MIN: dy split evenly
 * among the elements equal to y[o], 0 elsewhere). x and y are read for MAX and MIN only (NULL
 * otherwise). */
VCC_CPU_FN void reduce_backward(VccRt *rt, int kind, const VccReduce *d, float scale, const float *x, const float *y,
                                const float *dy, float *dx)
{
    int64_t o;
    const int ext = kind == VCC_RED_MAX || kind == VCC_RED_MIN;
    (void)rt;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (o = 0; o < d->nout; o++) {
        const int64_t base = vcc_reduce_base(d, o);
        const float yo = ext ? y[o] : 0.0f;
        const int64_t ties = ext ? vcc_reduce_ties(d, x, base, yo, 0, 1) : 0;
        vcc_reduce_scatter(kind, d, x, yo, ties, dy[o], scale, base, 0, 1, dx);
    }
}

#define VCC_KERNEL VCC_KERNEL_CHECK
#include "../proto/reduce.h"
#undef VCC_KERNEL

#endif /* VCC_CPU_REDUCE_H */
