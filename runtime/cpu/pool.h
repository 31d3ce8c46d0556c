/*
 * cpu/pool.h - the pool family's CPU kernels: MaxPool, AveragePool (and GlobalMaxPool, a MaxPool whose
 * window is the whole plane), GlobalAveragePool, and their gradients.
 * Signatures: proto/pool.h; per-window bodies shared with the CUDA target: elem/pool.h. Part of the C
 * target's runtime (cpu/base.h).
 */
#ifndef VCC_CPU_POOL_H
#define VCC_CPU_POOL_H

#include "base.h"
#include "../elem/pool.h"

#define VCC_KERNEL VCC_KERNEL_DECLARE
#include "../proto/pool.h"
#undef VCC_KERNEL

/* global_avgpool_forward: y[i] = mean of x[i, 0..S-1] (double sum), i.e.
 * ONNX GlobalAveragePool / torch adaptive_avg_pool3d(x, 1).
 *   x (N*C, S) with S = T*H*W   y (N*C) */
VCC_CPU_FN void global_avgpool_forward(VccRt *rt, int64_t NC, int64_t S, const float *x, float *y)
{
    int64_t i;
    (void)rt;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (i = 0; i < NC; i++) {
        y[i] = S > 0 ? (float)(vcc_sum_f64(x + i * S, S) / (double)S) : 0.0f;
    }
}

/* global_avgpool_backward: dx[i, s] = dy[i] / S (OVERWRITTEN).
 *   dy (N*C)   dx (N*C, S) */
VCC_CPU_FN void global_avgpool_backward(VccRt *rt, int64_t NC, int64_t S, const float *dy, float *dx)
{
    int64_t i;
    (void)rt;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (i = 0; i < NC; i++) {
        const float v = dy[i] / (float)S;
        float *r = dx + i * S;
        int64_t s;
        for (s = 0; s < S; s++) r[s] = v;
    }
}

/* vcc__pool_span: the taps j in [*lo, *hi) of a window starting at s (dilation 1, kernel k) that lie in
 * [0, in). */
VCC_CPU_FN void vcc__pool_span(int64_t s, int64_t k, int64_t in, int64_t *lo, int64_t *hi)
{
    *lo = s < 0 ? -s : 0;
    *hi = s + k > in ? in - s : k;
    if (*hi < *lo) *hi = *lo;
}

/* vcc__pool_max_lanes: the max (and its flat tap index) of the windows o2 in [q0, q1) (q1 - q0 <= 256) of
 * one output row whose taps along dim 2 all lie inside the input: the taps along dims 0 and 1 are
 * [a0, a1) x [b0, b1) (not empty) of a window starting at (s0, s1). (vcc__pool_same_planes passes a
 * plane's flat output indices as o2, with stride 1: tap (a, b, c) is then read at a fixed flat offset.) Every window runs vcc_pool_window's
 * scan, a, b, c ascending, the first tap taken and a later one where it is larger or NaN, in its own
 * SIMD lane (`omp simd` under -fopenmp): the same comparisons in the same order as the scalar loop,
 * so the same bits. mb (and ab when want_arg) receive q1 - q0 values. */
VCC_CPU_FN void vcc__pool_max_lanes(const VccPoolDesc *d, const float *xp, int64_t s0, int64_t s1, int64_t a0,
                                    int64_t a1, int64_t b0, int64_t b1, int64_t q0, int64_t q1, int want_arg,
                                    float *mb, int32_t *ab)
{
    const int64_t I1 = d->in[1], I2 = d->in[2], st = d->stride[2], pb = d->pad_begin[2], kk = d->kernel[2];
    const int64_t nq = q1 - q0;
    int first = 1;
    int64_t a, b, c, j;
    for (a = a0; a < a1; a++)
        for (b = b0; b < b1; b++) {
            const int64_t base = ((s0 + a) * I1 + s1 + b) * I2 + q0 * st - pb;
            const float *row = xp + base;
            for (c = 0; c < kk; c++) {
                if (first) {
                    VCC_CPU_SIMD
                    for (j = 0; j < nq; j++) {
                        mb[j] = row[j * st + c];
                        ab[j] = (int32_t)(base + j * st + c);
                    }
                    first = 0;
                } else if (want_arg) {
                    VCC_CPU_SIMD
                    for (j = 0; j < nq; j++) {
                        const float v = row[j * st + c];
                        const int take = v > mb[j] || v != v;
                        mb[j] = take ? v : mb[j];
                        ab[j] = take ? (int32_t)(base + j * st + c) : ab[j];
                    }
                } else {
                    VCC_CPU_SIMD
                    for (j = 0; j < nq; j++) {
                        const float v = row[j * st + c];
                        mb[j] = v > mb[j] || v != v ? v : mb[j];
                    }
                }
            }
        }
}

/* vcc__pool_row: output row r (plane, o0, o1 flattened) of vcc__pool_windows for a geometry without
 * dilation: the window's taps along dims 0 and 1 found once, along dim 2 once per output, so no tap is
 * bounds-checked; max pooling's windows whose taps along dim 2 all lie inside run in SIMD lanes
 * (vcc__pool_max_lanes) unless edges_only, which computes only the other outputs of the row (the ones
 * vcc__pool_same_planes' flat lanes get wrong). The taps are visited in vcc_pool_window's order (a, b, c
 * ascending) and combined the same way, so every output, argmax and average is the generic loop's. */
VCC_CPU_FN void vcc__pool_row(const VccPoolDesc *d, int is_max, const float *x, float *y, int32_t *arg,
                              int64_t *indices, int storage_order, int64_t r, int edges_only)
{
    const int64_t I1 = d->in[1], I2 = d->in[2], O1 = d->out[1], O2 = d->out[2];
    const int64_t Si = d->in[0] * I1 * I2, So = d->out[0] * O1 * O2;
    const int64_t p = r / (d->out[0] * O1), o0 = r / O1 % d->out[0], o1 = r % O1;
    const int64_t s0 = o0 * d->stride[0] - d->pad_begin[0], s1 = o1 * d->stride[1] - d->pad_begin[1];
    const float *xp = x + p * Si;
    int64_t a0, a1, b0, b1, o2;
    int64_t lo = 0, hi = 0;
    vcc__pool_span(s0, d->kernel[0], d->in[0], &a0, &a1);
    vcc__pool_span(s1, d->kernel[1], I1, &b0, &b1);
    if (is_max && !indices && a1 > a0 && b1 > b0) { /* the interior along dim 2, in lanes */
        const int64_t st = d->stride[2], pb = d->pad_begin[2], last = I2 - d->kernel[2] + pb;
        const int64_t k0 = p * So + (o0 * O1 + o1) * O2;
        int64_t q0, j;
        lo = (pb + st - 1) / st;
        hi = last >= 0 ? last / st + 1 : 0;
        if (hi > O2) hi = O2;
        if (lo > hi) lo = hi;
        for (q0 = lo; q0 < hi && !edges_only; q0 += 256) {
            const int64_t q1 = hi - q0 < 256 ? hi : q0 + 256;
            float mb[256];
            int32_t ab[256];
            vcc__pool_max_lanes(d, xp, s0, s1, a0, a1, b0, b1, q0, q1, arg != NULL, mb, ab);
            for (j = 0; j < q1 - q0; j++) {
                if (y) y[k0 + q0 + j] = mb[j];
                if (arg) arg[k0 + q0 + j] = ab[j];
            }
        }
    }
    for (o2 = 0; o2 < O2; o2++) {
        const int64_t s2 = o2 * d->stride[2] - d->pad_begin[2], k = p * So + (o0 * O1 + o1) * O2 + o2;
        int64_t c0, c1, a, b, c, am = -1;
        float m = -INFINITY;
        double acc = 0.0;
        if (o2 >= lo && o2 < hi) continue; /* done in lanes */
        vcc__pool_span(s2, d->kernel[2], I2, &c0, &c1);
        for (a = a0; a < a1; a++)
            for (b = b0; b < b1; b++) {
                const int64_t base = ((s0 + a) * I1 + s1 + b) * I2 + s2;
                const float *row = xp + base;
                if (!is_max) {
                    for (c = c0; c < c1; c++) acc += (double)row[c];
                    continue;
                }
                for (c = c0; c < c1; c++) {
                    const float v = row[c];
                    if (am < 0 || v > m || v != v) {
                        m = v;
                        am = base + c;
                    }
                }
            }
        if (is_max) {
            if (y) y[k] = m;
            if (arg) arg[k] = (int32_t)am;
            if (indices) indices[k] = am < 0 ? -1 : vcc_maxpool_onnx_index(d, p, am, storage_order);
        } else if (y) {
            const int64_t oc[3] = {o0, o1, o2}, cnt = vcc_avgpool_count(d, oc);
            y[k] = cnt > 0 ? (float)(acc / (double)cnt) : 0.0f;
        }
    }
}

/* vcc__pool_same: whether d is max pooling's "same" geometry along dims 1 and 2 (stride 1, no dilation,
 * out = in there, the padding splitting kernel - 1), as the 3x3x3 pools of S3D's and Inception's branches:
 * then an output's taps sit at a fixed offset from its own flat index within the plane, the same for
 * every output whose window lies inside along dims 1 and 2. */
VCC_CPU_FN int vcc__pool_same(const VccPoolDesc *d)
{
    return d->stride[1] == 1 && d->stride[2] == 1 && d->dilation[0] == 1 && d->dilation[1] == 1 &&
           d->dilation[2] == 1 && d->out[1] == d->in[1] && d->out[2] == d->in[2] && d->kernel[1] <= d->in[1] &&
           d->kernel[2] <= d->in[2] && d->pad_begin[1] < d->kernel[1] && d->pad_begin[2] < d->kernel[2];
}

/* vcc__pool_same_planes: max pooling (y and/or arg, no ONNX indices) for a vcc__pool_same geometry, one
 * output plane (plane, o0) at a time: its rows whose windows lie inside along dim 1, taken as one flat
 * run of outputs (from the first output inside along dim 2 to the last), 256 SIMD lanes at a time by
 * vcc__pool_max_lanes (vcc_pool_window's scan per lane, over taps at fixed flat offsets); then the
 * outputs of those rows whose windows cross the edge along dim 2 (which the flat run wrapped to the
 * neighbouring row), and the other rows, by vcc__pool_row. Every output and argmax is the generic loop's. */
VCC_CPU_FN void vcc__pool_same_planes(const VccPoolDesc *d, const float *x, float *y, int32_t *arg)
{
    const int64_t I1 = d->in[1], I2 = d->in[2], O0 = d->out[0];
    const int64_t Si = d->in[0] * I1 * I2, So = O0 * I1 * I2;
    const int64_t pb1 = d->pad_begin[1], pb2 = d->pad_begin[2], k1 = d->kernel[1], k2 = d->kernel[2];
    const int64_t r0 = pb1, r1 = I1 - k1 + pb1 + 1; /* rows whose windows lie inside along dim 1 */
    /* the flat run: from the first inside output of row r0 to the last of row r1 - 1, so every tap it
     * reads lies in the plane (the edge outputs between wrap to the neighbouring rows, and are redone) */
    const int64_t f_lo = r0 * I2 + pb2, f_hi = (r1 - 1) * I2 + (I2 - k2 + pb2 + 1);
    const int64_t planes = d->NC * O0;
    int64_t t;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (t = 0; t < planes; t++) {
        const int64_t p = t / O0, o0 = t % O0, s0 = o0 * d->stride[0] - d->pad_begin[0];
        const float *xp = x + p * Si;
        const int64_t kp = p * So + o0 * I1 * I2; /* the output plane's first flat index */
        int64_t a0, a1, o1, f0;
        vcc__pool_span(s0, d->kernel[0], d->in[0], &a0, &a1);
        for (o1 = 0; o1 < I1; o1++) /* the rows along the edges of dim 1, and all of a plane without taps */
            if (o1 < r0 || o1 >= r1 || a1 <= a0) vcc__pool_row(d, 1, x, y, arg, NULL, 0, t * I1 + o1, 0);
        if (a1 <= a0) continue;
        for (f0 = f_lo; f0 < f_hi; f0 += 256) {
            /* flat output f of the plane is "row" -pb1's window f0.., whose taps along dims 1 and 2 lie
             * at flat offsets (b - pb1) * I2 + (c - pb2) from f */
            const int64_t nq = f_hi - f0 < 256 ? f_hi - f0 : 256;
            float mb[256];
            int32_t ab[256];
            int64_t j;
            vcc__pool_max_lanes(d, xp, s0, -pb1, a0, a1, 0, k1, f0, f0 + nq, arg != NULL, mb, ab);
            for (j = 0; j < nq; j++) {
                if (y) y[kp + f0 + j] = mb[j];
                if (arg) arg[kp + f0 + j] = ab[j];
            }
        }
        if (pb2 > 0 || k2 - 1 - pb2 > 0) /* the outputs of those rows whose windows cross dim 2's edges */
            for (o1 = r0; o1 < r1; o1++) vcc__pool_row(d, 1, x, y, arg, NULL, 0, t * I1 + o1, 1);
    }
}

/* vcc__pool_windows_rows: vcc__pool_windows for a geometry without dilation, one output row (plane,
 * o0, o1) at a time (vcc__pool_row), or for max pooling's "same" geometry one output plane at a time
 * (vcc__pool_same_planes). */
VCC_CPU_FN void vcc__pool_windows_rows(const VccPoolDesc *d, int is_max, const float *x, float *y, int32_t *arg,
                                       int64_t *indices, int storage_order)
{
    const int64_t rows = d->NC * d->out[0] * d->out[1];
    int64_t r;
    if (is_max && !indices && vcc__pool_same(d)) {
        vcc__pool_same_planes(d, x, y, arg);
        return;
    }
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (r = 0; r < rows; r++) vcc__pool_row(d, is_max, x, y, arg, indices, storage_order, r, 0);
}

/* The windows of d over every plane: y (NC, out) from x (NC, in) by vcc_pool_window (max or average);
 * the max's flat tap index per output into arg (int32) and/or its ONNX index into indices when given.
 * Without dilation, vcc__pool_windows_rows computes the same row by row. */
VCC_CPU_FN void vcc__pool_windows(const VccPoolDesc *d, int is_max, const float *x, float *y, int32_t *arg,
                                  int64_t *indices, int storage_order)
{
    const int64_t Si = d->in[0] * d->in[1] * d->in[2], So = d->out[0] * d->out[1] * d->out[2];
    const int64_t n = d->NC * So;
    int64_t k;
    if (d->dilation[0] == 1 && d->dilation[1] == 1 && d->dilation[2] == 1) {
        vcc__pool_windows_rows(d, is_max, x, y, arg, indices, storage_order);
        return;
    }
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (k = 0; k < n; k++) {
        const int64_t p = k / So;
        float v;
        const int64_t a = vcc_pool_window(d, x + p * Si, k % So, is_max, &v);
        if (y) y[k] = v;
        if (arg) arg[k] = (int32_t)a;
        if (indices) indices[k] = a < 0 ? -1 : vcc_maxpool_onnx_index(d, p, a, storage_order);
    }
}

/* vcc__pool_reach: the output indices [*lo, *hi) along one dim whose window (dilation 1) has a tap at
 * input coordinate i: o * stride - pad_begin <= i <= o * stride - pad_begin + kernel - 1, 0 <= o < out. */
VCC_CPU_FN void vcc__pool_reach(const VccPoolDesc *d, int dim, int64_t i, int64_t *lo, int64_t *hi)
{
    const int64_t s = d->stride[dim], top = i + d->pad_begin[dim]; /* o * s <= top */
    *lo = vcc_pool_first(d, dim, i);
    *hi = top < 0 ? 0 : top / s + 1;
    if (*hi > d->out[dim]) *hi = d->out[dim];
    if (*hi < *lo) *hi = *lo;
}

/* vcc__pool_dx_hits: max pooling's vcc__pool_dx_rows for the elements q0 + [0, nq) (nq <= 256) of one
 * input row, dxr[0, nq): the windows reaching the row along dims 0 and 1 are [a0, a1) x [b0, b1); for
 * each of them in order, the outputs along dim 2 that can reach the elements, in order, each adding its
 * dy (in double) to the element that is its argmax (ap, plane offsets; i_row the row's first flat
 * index) when that is one of them. Every element so receives the dy of exactly the windows with a tap
 * at it and their argmax there, in vcc_pool_dx's order (oc ascending, dim 0 first): the generic loop's
 * sum, bit for bit, from one pass over the outputs instead of one per element and window. */
VCC_CPU_FN void vcc__pool_dx_hits(const VccPoolDesc *d, const int32_t *ap, const float *dyp, int64_t a0, int64_t a1,
                                  int64_t b0, int64_t b1, int64_t i_row, int64_t q0, int64_t nq, float *dxr)
{
    const int64_t O1 = d->out[1], O2 = d->out[2];
    const int32_t first = (int32_t)(i_row + q0);
    double acc[256];
    int64_t j, a, b, c0, c1, e0, e1, o2;
    vcc__pool_reach(d, 2, q0, &c0, &e0);          /* the outputs along dim 2 reaching q0 ... */
    vcc__pool_reach(d, 2, q0 + nq - 1, &e1, &c1); /* ... through q0 + nq - 1 */
    for (j = 0; j < nq; j++) acc[j] = 0.0;
    for (a = a0; a < a1; a++)
        for (b = b0; b < b1; b++) {
            const int32_t *arow = ap + (a * O1 + b) * O2;
            const float *drow = dyp + (a * O1 + b) * O2;
            for (o2 = c0; o2 < c1; o2++) {
                const uint32_t k = (uint32_t)(arow[o2] - first);
                if (k < (uint32_t)nq) acc[k] += (double)drow[o2];
            }
        }
    for (j = 0; j < nq; j++) dxr[j] = (float)acc[j];
}

/* vcc__pool_dx_rows: vcc__pool_dx for a geometry without dilation, one input row (plane, i0, i1) at a
 * time: the windows reaching it along dims 0 and 1 found once per row, along dim 2 once per element
 * (max pooling: 256 elements at a time from one pass over the outputs, vcc__pool_dx_hits). The windows are visited in
 * vcc_pool_dx's order (oc ascending, dim 0 first) and summed the same way in double, so every element
 * is the generic loop's. */
VCC_CPU_FN void vcc__pool_dx_rows(const VccPoolDesc *d, const int32_t *arg, const float *dy, float *dx)
{
    const int64_t I1 = d->in[1], I2 = d->in[2], O1 = d->out[1], O2 = d->out[2];
    const int64_t Si = d->in[0] * I1 * I2, So = d->out[0] * O1 * O2;
    const int64_t rows = d->NC * d->in[0] * I1;
    int64_t r;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (r = 0; r < rows; r++) {
        const int64_t p = r / (d->in[0] * I1), i0 = r / I1 % d->in[0], i1 = r % I1;
        const float *dyp = dy + p * So;
        const int32_t *ap = arg ? arg + p * So : NULL;
        float *dxr = dx + p * Si + (i0 * I1 + i1) * I2;
        int64_t a0, a1, b0, b1, i2;
        vcc__pool_reach(d, 0, i0, &a0, &a1);
        vcc__pool_reach(d, 1, i1, &b0, &b1);
        if (ap) {
            int64_t q0;
            for (q0 = 0; q0 < I2; q0 += 256)
                vcc__pool_dx_hits(d, ap, dyp, a0, a1, b0, b1, (i0 * I1 + i1) * I2, q0, I2 - q0 < 256 ? I2 - q0 : 256,
                                   dxr + q0);
            continue;
        }
        for (i2 = 0; i2 < I2; i2++) {
            const int64_t i = (i0 * I1 + i1) * I2 + i2;
            int64_t c0, c1, oc[3];
            double acc = 0.0;
            vcc__pool_reach(d, 2, i2, &c0, &c1);
            for (oc[0] = a0; oc[0] < a1; oc[0]++)
                for (oc[1] = b0; oc[1] < b1; oc[1]++) {
                    const int64_t o01 = (oc[0] * O1 + oc[1]) * O2;
                    for (oc[2] = c0; oc[2] < c1; oc[2]++) {
                        const int64_t o = o01 + oc[2];
                        if (!ap) acc += (double)dyp[o] / (double)vcc_avgpool_count(d, oc);
                        else if (ap[o] == i) acc += (double)dyp[o];
                    }
                }
            dxr[i2] = (float)acc;
        }
    }
}

/* The gradient of d's windows: dx (NC, in) by vcc_pool_dx from dy (NC, out) (OVERWRITTEN); arg: each
 * output's argmax (max pooling) or NULL (average pooling). Without dilation, vcc__pool_dx_rows computes
 * the same row by row. */
VCC_CPU_FN void vcc__pool_dx(const VccPoolDesc *d, const int32_t *arg, const float *dy, float *dx)
{
    const int64_t Si = d->in[0] * d->in[1] * d->in[2], So = d->out[0] * d->out[1] * d->out[2];
    const int64_t n = d->NC * Si;
    int64_t k;
    if (d->dilation[0] == 1 && d->dilation[1] == 1 && d->dilation[2] == 1) {
        vcc__pool_dx_rows(d, arg, dy, dx);
        return;
    }
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (k = 0; k < n; k++) {
        const int64_t p = k / Si;
        dx[k] = vcc_pool_dx(d, arg ? arg + p * So : NULL, dy + p * So, k % Si);
    }
}

/* maxpool_forward: y (N, C, out...) = the max of each window of x (N, C, in...) (ONNX MaxPool, opsets
 * 1-22; torch max_pool{1,2,3}d, ceil_mode and dilation included; GlobalMaxPool with the whole plane as
 * the window). indices (N, C, out...) int64, when not NULL: ONNX's Indices output, each max's offset in
 * x, spatial part row-major (storage_order 0) or column-major (1). */
VCC_CPU_FN void maxpool_forward(VccRt *rt, const VccPoolDesc *d, const float *x, float *y, int64_t *indices,
                                int storage_order)
{
    (void)rt;
    vcc__pool_windows(d, 1, x, y, NULL, indices, storage_order);
}

/* maxpool_backward: dx (N, C, in...) = dy (N, C, out...) routed to each window's argmax in x, summed where
 * windows share it (OVERWRITTEN; torch max_pool backward). argmax (N*C*prod(out) int32) is scratch:
 * the windows' argmax is found again from x, then gathered per input element (no atomics, fixed order). */
VCC_CPU_FN void maxpool_backward(VccRt *rt, const VccPoolDesc *d, const float *x, const float *dy, float *dx,
                                 int32_t *argmax)
{
    (void)rt;
    vcc__pool_windows(d, 1, x, NULL, argmax, NULL, 0);
    vcc__pool_dx(d, argmax, dy, dx);
}

/* avgpool_forward: y (N, C, out...) = the mean of each window of x (N, C, in...) (ONNX AveragePool,
 * opsets 1-22; torch avg_pool{1,2,3}d with ceil_mode and count_include_pad; dilations from opset 19). */
VCC_CPU_FN void avgpool_forward(VccRt *rt, const VccPoolDesc *d, const float *x, float *y)
{
    (void)rt;
    vcc__pool_windows(d, 0, x, y, NULL, NULL, 0);
}

/* avgpool_backward: dx (N, C, in...) = sum over the windows holding each element of dy / divisor
 * (OVERWRITTEN; torch avg_pool backward). */
VCC_CPU_FN void avgpool_backward(VccRt *rt, const VccPoolDesc *d, const float *dy, float *dx)
{
    (void)rt;
    vcc__pool_dx(d, NULL, dy, dx);
}

#define VCC_KERNEL VCC_KERNEL_CHECK
#include "../proto/pool.h"
#undef VCC_KERNEL

#endif /* VCC_CPU_POOL_H */
