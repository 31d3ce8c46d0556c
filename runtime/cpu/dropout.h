/*
 * cpu/dropout.h - the dropout family's CPU kernels: Dropout in training mode and its gradient, and the
 * random ops (RandomUniformLike, RandomNormalLike) on the same draws.
 * Signatures: proto/dropout.h; the draw and the per-element bodies, shared with the CUDA target:
 * elem/dropout.h. Part of the C target's runtime (cpu/base.h).
 */
#ifndef VCC_CPU_DROPOUT_H
#define VCC_CPU_DROPOUT_H

#include "base.h"
#include "../elem/dropout.h"

#define VCC_KERNEL VCC_KERNEL_DECLARE
#include "../proto/dropout.h"
#undef VCC_KERNEL

/* dropout_forward: y = x * scale where element i's draw is kept, else 0 (ONNX Dropout in training mode,
 * PyTorch dropout); the draws are those of node d->stream at step rt->step under seed rt->seed (or
 * d->seed), four elements per Philox call (vcc_dropout_block_fwd). x, y (n), any shape (N, C, T, H, W);
 * y may == x. mask (n bytes, 1 kept / 0 dropped) and mask_f32 (n floats, 1 / 0) receive the mask when not
 * NULL. A threshold of 0 keeps every element without drawing. */
VCC_CPU_FN void dropout_forward(VccRt *rt, int64_t n, const VccDropoutDesc *d, const float *x, float *y,
                                unsigned char *mask, float *mask_f32)
{
    const uint64_t seed = d->own_seed ? d->seed : rt->seed;
    int64_t q;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (q = 0; q < (n + 3) / 4; q++)
        vcc_dropout_block_fwd(seed, d->stream, rt->step, d->threshold, d->scale, q, n, x, y, mask, mask_f32);
}

/* dropout_backward: dx = dy * scale where the forward kept the element, else 0, the mask drawn again
 * from the same counter (nothing saved). dy, dx (n); dx may == dy. */
VCC_CPU_FN void dropout_backward(VccRt *rt, int64_t n, const VccDropoutDesc *d, const float *dy, float *dx)
{
    const uint64_t seed = d->own_seed ? d->seed : rt->seed;
    int64_t q;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (q = 0; q < (n + 3) / 4; q++) vcc_dropout_block_bwd(seed, d->stream, rt->step, d->threshold, d->scale, q, n, dy, dx);
}

/* random_like_forward: y[i] = vcc_random_value(d, seed, rt->step, i) for i < n (ONNX RandomUniformLike,
 * RandomNormalLike: a fresh draw at every training step, the same on both targets); seed is d->seed when
 * the node has its own, else the run's --seed. */
VCC_CPU_FN void random_like_forward(VccRt *rt, int64_t n, const VccRandomDesc *d, float *y)
{
    const uint64_t seed = d->own_seed ? d->seed : rt->seed;
    int64_t i;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (i = 0; i < n; i++) y[i] = vcc_random_value(d, seed, rt->step, i);
}

#define VCC_KERNEL VCC_KERNEL_CHECK
#include "../proto/dropout.h"
#undef VCC_KERNEL

#endif /* VCC_CPU_DROPOUT_H */
