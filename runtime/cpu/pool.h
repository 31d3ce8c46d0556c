/*
 * cpu/pool.h - the pool family's CPU kernels: GlobalAveragePool and its gradient.
 * Signatures: proto/pool.h. Part of the C target's runtime (cpu/base.h).
 */
#ifndef VCC_CPU_POOL_H
#define VCC_CPU_POOL_H

#include "base.h"

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

#define VCC_KERNEL VCC_KERNEL_CHECK
#include "../proto/pool.h"
#undef VCC_KERNEL

#endif /* VCC_CPU_POOL_H */
