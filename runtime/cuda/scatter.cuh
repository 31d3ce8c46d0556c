/*
 * cuda/scatter.cuh - the scatter family's CUDA kernels: ScatterND and ScatterElements (reduction none
 * and add) and their gradients. Signatures: proto/scatter.h; the index arithmetic shared with the C
 * target: elem/scatter.h. Part of the CUDA target's runtime (cuda/base.cuh).
 */
#ifndef VCC_CUDA_SCATTER_CUH
#define VCC_CUDA_SCATTER_CUH

#include "base.cuh"
#include "../elem/scatter.h"

#define VCC_KERNEL VCC_KERNEL_DECLARE
#include "../proto/scatter.h"
#undef VCC_KERNEL

/* one thread per update: every element of y gets at most one */
static __global__ void scatter_forward_kernel(VccScatter d, int add, const int64_t *idx, const float *upd, float *y)
{
    VCC_GRID_STRIDE(u, d.n) {
        const int64_t o = vcc_scatter_offset(&d, idx, u);
        if (o >= 0) y[o] = add ? y[o] + upd[u] : upd[u];
    }
}

/* one thread per column (elem/scatter.h): the updates that land on one element share a column and are
 * added in u order, as on the CPU (no atomics: the sums are the CPU's, bit for bit) */
static __global__ void scatter_forward_serial_kernel(VccScatter d, int add, const int64_t *idx, const float *upd,
                                                     float *y)
{
    VCC_GRID_STRIDE(c, d.outer * d.inner_run) {
        int64_t j;
        for (j = 0; j < d.m; j++) {
            const int64_t u = vcc_scatter_column_element(&d, c, j), o = vcc_scatter_offset(&d, idx, u);
            if (o >= 0) y[o] = add ? y[o] + upd[u] : upd[u];
        }
    }
}

static __global__ void scatter_backward_data_kernel(VccScatter d, const int64_t *idx, float *dx)
{
    VCC_GRID_STRIDE(u, d.n) {
        const int64_t o = vcc_scatter_offset(&d, idx, u);
        if (o >= 0) dx[o] = 0.0f;
    }
}

static __global__ void scatter_backward_updates_kernel(VccScatter d, const int64_t *idx, const float *dy, float *dupd)
{
    VCC_GRID_STRIDE(u, d.n) {
        const int64_t o = vcc_scatter_offset(&d, idx, u);
        dupd[u] = o < 0 ? 0.0f : dy[o];
    }
}

/* scatter_forward, scatter_backward_data, scatter_backward_updates: as the CPU kernels (cpu/scatter.h) */
static inline void scatter_forward(VccRt *rt, const VccScatter *d, int add, int serial, const int64_t *idx,
                                   const float *upd, float *y)
{
    (void)rt;
    if (d->n <= 0) return;
    if (serial)
        scatter_forward_serial_kernel<<<vcc__grid(d->outer * d->inner_run), VCC_CUDA_THREADS>>>(*d, add, idx, upd, y);
    else
        scatter_forward_kernel<<<vcc__grid(d->n), VCC_CUDA_THREADS>>>(*d, add, idx, upd, y);
    VCC_CUDA_LAUNCHED();
}

static inline void scatter_backward_data(VccRt *rt, const VccScatter *d, const int64_t *idx, float *dx)
{
    (void)rt;
    if (d->n <= 0) return;
    scatter_backward_data_kernel<<<vcc__grid(d->n), VCC_CUDA_THREADS>>>(*d, idx, dx);
    VCC_CUDA_LAUNCHED();
}

static inline void scatter_backward_updates(VccRt *rt, const VccScatter *d, const int64_t *idx, const float *dy,
                                            float *dupd)
{
    (void)rt;
    if (d->n <= 0) return;
    scatter_backward_updates_kernel<<<vcc__grid(d->n), VCC_CUDA_THREADS>>>(*d, idx, dy, dupd);
    VCC_CUDA_LAUNCHED();
}

#define VCC_KERNEL VCC_KERNEL_CHECK
#include "../proto/scatter.h"
#undef VCC_KERNEL

#endif /* VCC_CUDA_SCATTER_CUH */
