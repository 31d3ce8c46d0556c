/*
 * cuda/typed.cuh - the typed kernels on the GPU: Add, Sub, Mul, Div, Pow, Clip, MaxPool and Pad on data
 * of any element type vcc has (float64, int8-64, uint8-64, bool). One thread per output element.
 * Signatures: proto/typed.h; per-element bodies shared with the C target: elem/typed.h. Part of the CUDA
 * target's runtime (cuda/base.cuh). A program inlines this file when a node's data are not float32.
 */
#ifndef VCC_CUDA_TYPED_CUH
#define VCC_CUDA_TYPED_CUH

#include "base.cuh"
#include "../elem/typed.h"

#define VCC_KERNEL VCC_KERNEL_DECLARE
#include "../proto/typed.h"
#undef VCC_KERNEL

static __global__ void typed_binary_kernel(int op, int ta, int tb, VccBcast d, const void *a, const void *b, void *y)
{
    VCC_GRID_STRIDE(i, d.n) {
        int64_t ia, ib;
        vcc_bcast_index(&d, i, &ia, &ib);
        vcc_typed_binary(op, ta, tb, a, ia, b, ib, y, i);
    }
}

static __global__ void typed_clip_kernel(int t, int64_t n, const void *x, const void *lo, const void *hi, void *y)
{
    VCC_GRID_STRIDE(i, n) vcc_typed_clip(t, x, lo, hi, y, i);
}

static __global__ void typed_maxpool_kernel(int t, VccPoolDesc d, int64_t S, const void *x, void *y)
{
    VCC_GRID_STRIDE(i, d.NC * S) vcc_typed_maxpool(t, &d, x, y, i / S, i % S);
}

static __global__ void typed_pad_kernel(int t, VccPadDesc d, int64_t n, const void *x, int64_t cbits, void *y)
{
    VCC_GRID_STRIDE(k, n) vcc_typed_pad(t, &d, x, cbits, y, k);
}

/* As cpu/typed.h. */
static inline void typed_binary_forward(VccRt *rt, int op, int ta, int tb, const VccBcast *d, const void *a,
                                        const void *b, void *y)
{
    (void)rt;
    if (d->n <= 0) return;
    typed_binary_kernel<<<vcc__grid(d->n), VCC_CUDA_THREADS>>>(op, ta, tb, *d, a, b, y);
    VCC_CUDA_LAUNCHED();
}

/* As cpu/typed.h; lo and hi (one element each, or NULL) are in device memory (the arena). */
static inline void typed_clip_forward(VccRt *rt, int t, int64_t n, const void *x, const void *lo, const void *hi,
                                      void *y)
{
    (void)rt;
    if (n <= 0) return;
    typed_clip_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(t, n, x, lo, hi, y);
    VCC_CUDA_LAUNCHED();
}

/* As cpu/typed.h. */
static inline void typed_maxpool_forward(VccRt *rt, int t, const VccPoolDesc *d, const void *x, void *y)
{
    const int64_t S = d->out[0] * d->out[1] * d->out[2];
    (void)rt;
    if (d->NC * S <= 0) return;
    typed_maxpool_kernel<<<vcc__grid(d->NC * S), VCC_CUDA_THREADS>>>(t, *d, S, x, y);
    VCC_CUDA_LAUNCHED();
}

/* As cpu/typed.h. */
static inline void typed_pad_forward(VccRt *rt, int t, const VccPadDesc *d, const void *x, int64_t cbits, void *y)
{
    int64_t n = 1;
    (void)rt;
    for (int i = 0; i < d->rank; i++) n *= d->out[i];
    if (n <= 0) return;
    typed_pad_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(t, *d, n, x, cbits, y);
    VCC_CUDA_LAUNCHED();
}

#define VCC_KERNEL VCC_KERNEL_CHECK
#include "../proto/typed.h"
#undef VCC_KERNEL

#endif /* VCC_CUDA_TYPED_CUH */
