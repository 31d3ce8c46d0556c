/*
 * elem/reduce.h - the reduce family's arithmetic (ReduceSum, ReduceMean, ReduceMax, ReduceMin, the
 * gradients' scatter back over the reduced elements, and the sum to a broadcast operand's shape),
 * written once for both targets: the CPU loops (cpu/reduce.h) call these directly over all of an
 * output's elements, the CUDA kernels (cuda/reduce.cuh) over a thread's share of them. Accumulation is
 * in double. Pure C99, no I/O, no state.
 *
 * Layout: X's dims are split into kept and reduced ones (the compiler drops size-1 dims and merges
 * neighbours of the same kind, so there are few). Y's element o (row-major over the kept dims, which
 * is Y's own layout whether or not Y keeps the reduced dims as 1) gathers the elements of X at
 * base(o) + off(r) for r < nred.
 */
#ifndef VCC_ELEM_REDUCE_H
#define VCC_ELEM_REDUCE_H

#include "base.h"

#define VCC_REDUCE_RANK 8

/* VccReduce: X (kept and reduced dims interleaved in any order) -> Y (nout = product of kdims).
 * kdims/kstride: the kept dims of X in order and their strides in X (elements); rdims/rstride: the
 * reduced ones; nred = product of rdims, the elements each Y element gathers. nk, nr >= 1 (a dim of
 * size 1 stands in for none). */
typedef struct VccReduce {
    int nk, nr;
    int64_t nout, nred;
    int64_t kdims[VCC_REDUCE_RANK], kstride[VCC_REDUCE_RANK];
    int64_t rdims[VCC_REDUCE_RANK], rstride[VCC_REDUCE_RANK];
} VccReduce;

/* The reductions (the `kind` argument of reduce_forward / reduce_backward). */
enum { VCC_RED_SUM = 0, VCC_RED_MEAN = 1, VCC_RED_MAX = 2, VCC_RED_MIN = 3 };

/* vcc_reduce_offset: the offset in X of row-major index i over n dims of sizes dims at strides stride. */
VCC_HD int64_t vcc_reduce_offset(int n, const int64_t *dims, const int64_t *stride, int64_t i)
{
    int64_t off = 0;
    int k;
    if (n == 1) return i * stride[0];
    for (k = n - 1; k >= 0; k--) {
        off += (i % dims[k]) * stride[k];
        i /= dims[k];
    }
    return off;
}

/* vcc_reduce_base: the offset in X of Y element o's first element. */
VCC_HD int64_t vcc_reduce_base(const VccReduce *d, int64_t o)
{
    return vcc_reduce_offset(d->nk, d->kdims, d->kstride, o);
}

/* vcc_reduce_step: acc combined with v: the sum (SUM, MEAN), the larger (MAX) or smaller (MIN), a NaN
 * winning over everything (torch.amax / torch.amin, ONNX ReduceMax / ReduceMin propagate NaN). */
VCC_HD double vcc_reduce_step(int kind, double acc, double v)
{
    if (kind == VCC_RED_MAX) return (v != v || v > acc) ? v : acc;
    if (kind == VCC_RED_MIN) return (v != v || v < acc) ? v : acc;
    return acc + v;
}

/* vcc_reduce_identity: where a reduction starts: 0 (SUM, MEAN), -inf (MAX), +inf (MIN). */
VCC_HD double vcc_reduce_identity(int kind)
{
    return kind == VCC_RED_MAX ? -(double)INFINITY : kind == VCC_RED_MIN ? (double)INFINITY : 0.0;
}

/* vcc_reduce_span: the reduction of Y element o's elements r = r0, r0 + step, ... < nred of X
 * (base = vcc_reduce_base(d, o)), from vcc_reduce_identity, in that order. */
VCC_ELEM_IN VCC_HD double vcc_reduce_span(int kind, const VccReduce *d, const VCC_IN *x, int64_t base, int64_t r0,
                                           int64_t step)
{
    double acc = vcc_reduce_identity(kind);
    int64_t r;
    for (r = r0; r < d->nred; r += step)
        acc = vcc_reduce_step(kind, acc, (double)vcc_ld(x, base + vcc_reduce_offset(d->nr, d->rdims, d->rstride, r)));
    return acc;
}

/* vcc_reduce_result: Y's value from the whole reduction acc of nred elements: scale * acc, the mean
 * acc / nred (MEAN; torch.mean / ONNX ReduceMean), rounded to float once. */
VCC_HD float vcc_reduce_result(int kind, const VccReduce *d, double acc, float scale)
{
    return (float)((kind == VCC_RED_MEAN ? acc / (double)d->nred : acc) * (double)scale);
}

/* vcc_reduce_tie: X value v is one of the extremes y of its Y element (y itself, or both NaN). */
VCC_HD int vcc_reduce_tie(float v, float y)
{
    return v == y || (v != v && y != y);
}

/* vcc_reduce_ties: how many of Y element o's elements r = r0, r0 + step, ... of X tie with its value y. */
VCC_ELEM_IN VCC_HD int64_t vcc_reduce_ties(const VccReduce *d, const VCC_IN *x, int64_t base, float y, int64_t r0,
                                            int64_t step)
{
    int64_t r, c = 0;
    for (r = r0; r < d->nred; r += step)
        c += vcc_reduce_tie(vcc_ld(x, base + vcc_reduce_offset(d->nr, d->rdims, d->rstride, r)), y);
    return c;
}

/* vcc_reduce_scatter: the gradient dx of Y element o's elements r = r0, r0 + step, ... from its dy
 * (PyTorch's formulas):
 *   SUM   dx = dy * scale                      (sum_backward: dy broadcast back; scale 1)
 *   MEAN  dx = dy / nred                       (mean_backward)
 *   MAX, MIN  dx = dy / ties where x ties with y, else 0 (evenly_distribute_backward: the gradient of
 *         torch.amax / amin and of a full max() / min() splits evenly among the extremes)
 * x, y (Y element o's value) and ties (vcc_reduce_ties over all its elements) are read for MAX, MIN. */
VCC_ELEM_IO VCC_HD void vcc_reduce_scatter(int kind, const VccReduce *d, const VCC_IN *x, float y, int64_t ties,
                                           float dy, float scale, int64_t base, int64_t r0, int64_t step, VCC_OUT *dx)
{
    int64_t r;
    const int ext = kind == VCC_RED_MAX || kind == VCC_RED_MIN;
    const float v = ext ? dy / (float)ties : kind == VCC_RED_MEAN ? dy / (float)d->nred : dy * scale;
    for (r = r0; r < d->nred; r += step) {
        const int64_t i = base + vcc_reduce_offset(d->nr, d->rdims, d->rstride, r);
        vcc_st(dx, i, ext ? (vcc_reduce_tie(vcc_ld(x, i), y) ? v : 0.0f) : v);
    }
}

#endif /* VCC_ELEM_REDUCE_H */
