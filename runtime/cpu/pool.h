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

/* The windows of d over every plane: y (NC, out) from x (NC, in) by vcc_pool_window (max or average);
 * the max's flat tap index per output into arg (int32) and/or its ONNX index into indices when given. */
VCC_CPU_FN void vcc__pool_windows(const VccPoolDesc *d, int is_max, const float *x, float *y, int32_t *arg,
                                  int64_t *indices, int storage_order)
{
    const int64_t Si = d->in[0] * d->in[1] * d->in[2], So = d->out[0] * d->out[1] * d->out[2];
    const int64_t n = d->NC * So;
    int64_t k;
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

/* The gradient of d's windows: dx (NC, in) by vcc_pool_dx from dy (NC, out) (OVERWRITTEN); arg: each
 * output's argmax (max pooling) or NULL (average pooling). */
VCC_CPU_FN void vcc__pool_dx(const VccPoolDesc *d, const int32_t *arg, const float *dy, float *dx)
{
    const int64_t Si = d->in[0] * d->in[1] * d->in[2], So = d->out[0] * d->out[1] * d->out[2];
    const int64_t n = d->NC * Si;
    int64_t k;
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
