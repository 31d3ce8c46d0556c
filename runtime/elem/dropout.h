/*
 * elem/dropout.h - the dropout family's arithmetic, written once for both targets: the counter-based
 * random draw and the per-element keep decision. The CPU loops (cpu/dropout.h) call these directly, the
 * CUDA kernels (cuda/dropout.cuh) from device code. Pure C99, no I/O, no state.
 *
 * The draw: Philox4x32-10 (J. K. Salmon, M. A. Moraes, R. O. Dror, D. E. Shaw, "Parallel random
 * numbers: as easy as 1, 2, 3", SC 2011; the Random123 library's philox4x32 with 10 rounds). The 32-bit
 * draw of element i of dropout node j at training step s under seed S is a pure function of
 * (S, j, s, i):
 *
 *     key     = (S mod 2^32, S div 2^32)
 *     counter = (q mod 2^32, q div 2^32, j, s mod 2^32)     q = i div 4
 *     draw    = word (i mod 4) of philox4x32_10(counter, key)
 *
 * so a step's masks depend on nothing but the run's seed, the node, the step and the element index:
 * the same on the CPU and the GPU, in any thread order, in forward and backward, and after a resume.
 * Element i is dropped when its draw is below the node's threshold round(ratio * 2^32), so
 * P(dropped) = threshold / 2^32, within 2^-33 of ratio. Steps 2^32 apart draw the same masks.
 */
#ifndef VCC_ELEM_DROPOUT_H
#define VCC_ELEM_DROPOUT_H

#include "base.h"

/* VccDropoutDesc: one Dropout node in training mode, as the generated program holds it.
 *   stream     the node's j in the counter (its index in the model's graph)
 *   threshold  elements whose draw is below it are dropped: round(ratio * 2^32), at most 2^32 - 1
 *   scale      what a kept element is multiplied by: 1 / (1 - ratio), computed as PyTorch does in float
 *              (1.0f / (float)(1.0 - ratio))
 *   own_seed   1: seed below keys the draw (the node's ONNX seed attribute); 0: the run's --seed
 *              (VccRt.seed) */
typedef struct VccDropoutDesc {
    uint32_t stream, threshold;
    float scale;
    int own_seed;
    uint64_t seed;
} VccDropoutDesc;

/* vcc_philox4x32_10: the four 32-bit words of Philox4x32-10 for counter c (4 words) and key k (2 words)
 * into out: ten rounds of two 32x32 -> 64-bit multiplications (0xD2511F53, 0xCD9E8D57), the key bumped
 * by the Weyl constants (0x9E3779B9, 0xBB67AE85) between rounds. Random123's known answers:
 * c = 0, k = 0 gives 6627e8d5 e169c58d bc57ac4c 9b00dbd8. */
VCC_HD void vcc_philox4x32_10(const uint32_t c[4], const uint32_t k[2], uint32_t out[4])
{
    uint32_t c0 = c[0], c1 = c[1], c2 = c[2], c3 = c[3], k0 = k[0], k1 = k[1];
    int r;
    for (r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/* vcc_dropout_draws: the draws of elements 4q .. 4q+3 of the node with stream j at step s under seed
 * (see the top of this file) into out. */
VCC_HD void vcc_dropout_draws(uint64_t seed, uint32_t j, uint64_t s, uint64_t q, uint32_t out[4])
{
    uint32_t c[4], k[2];
    c[0] = (uint32_t)q;
    c[1] = (uint32_t)(q >> 32);
    c[2] = j;
    c[3] = (uint32_t)s;
    k[0] = (uint32_t)seed;
    k[1] = (uint32_t)(seed >> 32);
    vcc_philox4x32_10(c, k, out);
}

/* vcc_dropout_draw: the draw of element i alone (the definition; the kernels draw four at a time). */
VCC_HD uint32_t vcc_dropout_draw(uint64_t seed, uint32_t j, uint64_t s, uint64_t i)
{
    uint32_t w[4];
    vcc_dropout_draws(seed, j, s, i >> 2, w);
    return w[i & 3];
}

/* vcc_dropout_fwd: the output of an element of x with draw r: x * scale when kept, else 0 (PyTorch's
 * dropout: input * mask / (1 - p), the mask divided first). *keep receives 1 or 0. */
VCC_HD float vcc_dropout_fwd(float x, uint32_t r, uint32_t threshold, float scale, int *keep)
{
    *keep = r >= threshold;
    return *keep ? x * scale : 0.0f;
}

/* vcc_dropout_bwd: the gradient of an element with draw r from dy: dy * scale when kept, else 0
 * (PyTorch: grad * mask * scale). */
VCC_HD float vcc_dropout_bwd(float dy, uint32_t r, uint32_t threshold, float scale)
{
    return r >= threshold ? dy * scale : 0.0f;
}

/* vcc_dropout_block_fwd: elements 4q .. min(4q+3, n-1) of a Dropout forward: y = vcc_dropout_fwd of x
 * with the draws of (seed, j, s), the mask (1 kept, 0 dropped) into mask (bytes) and mask_f32 (floats)
 * where not NULL. threshold 0 keeps every element without drawing. x, y, mask, mask_f32 (n); y may == x. */
VCC_ELEM_IO VCC_HD void vcc_dropout_block_fwd(uint64_t seed, uint32_t j, uint64_t s, uint32_t threshold, float scale,
                                              int64_t q, int64_t n, const VCC_IN *x, VCC_OUT *y, unsigned char *mask,
                                              float *mask_f32)
{
    uint32_t r[4] = {0, 0, 0, 0};
    int l, keep;
    if (threshold) vcc_dropout_draws(seed, j, s, (uint64_t)q, r);
    for (l = 0; l < 4 && 4 * q + l < n; l++) {
        const int64_t i = 4 * q + l;
        vcc_st(y, i, vcc_dropout_fwd(vcc_ld(x, i), r[l], threshold, scale, &keep));
        if (mask) mask[i] = (unsigned char)keep;
        if (mask_f32) mask_f32[i] = (float)keep;
    }
}

/* vcc_dropout_block_bwd: elements 4q .. min(4q+3, n-1) of DropoutGrad: dx = vcc_dropout_bwd of dy with
 * the same draws. dy, dx (n); dx may == dy. */
VCC_ELEM_IO VCC_HD void vcc_dropout_block_bwd(uint64_t seed, uint32_t j, uint64_t s, uint32_t threshold, float scale,
                                              int64_t q, int64_t n, const VCC_IN *dy, VCC_OUT *dx)
{
    uint32_t r[4] = {0, 0, 0, 0};
    int l;
    if (threshold) vcc_dropout_draws(seed, j, s, (uint64_t)q, r);
    for (l = 0; l < 4 && 4 * q + l < n; l++)
        vcc_st(dx, 4 * q + l, vcc_dropout_bwd(vcc_ld(dy, 4 * q + l), r[l], threshold, scale));
}

/* VccRandomDesc: one RandomUniformLike or RandomNormalLike node, as the generated program holds it.
 *   stream     the node's j in the counter (its index in the model's graph), as a Dropout's
 *   normal     0: uniform, low + (high - low) * u with u in [0, 1); 1: normal, mean + scale * z
 *   a, b       low and high - low (uniform), or mean and scale (normal)
 *   own_seed   1: seed below keys the draw (the node's ONNX seed attribute); 0: the run's --seed */
typedef struct VccRandomDesc {
    uint32_t stream;
    int normal;
    float a, b;
    int own_seed;
    uint64_t seed;
} VccRandomDesc;

/* vcc_random_value: element i of a random node at step s under seed: uniform from the element's draw r,
 * u = (r >> 8) * 2^-24 (24 random bits, in [0, 1)), y = low + (high - low) * u rounded once to float; normal by Box-Muller from the draws of
 * elements 2i and 2i+1 of the node's counter, z = sqrt(-2 ln u1) cos(2 pi u2) with u1 in (0, 1], in
 * double, then the float mean + scale * z. A pure function of (seed, stream, s, i), like Dropout's masks. */
VCC_HD float vcc_random_value(const VccRandomDesc *d, uint64_t seed, uint64_t s, int64_t i)
{
    if (!d->normal) {
        /* low + (high - low) * u in double, rounded once to float: the product of two floats is exact in
         * double, so a fused multiply-add (nvcc contracts by default, C compilers at -ffp-contract=fast)
         * and a separate multiply and add give the same bits on both targets */
        const double u = (double)(vcc_dropout_draw(seed, d->stream, s, (uint64_t)i) >> 8) * 5.9604644775390625e-8;
        return (float)((double)d->a + (double)d->b * u);
    } else {
        const double u1 = ((double)(vcc_dropout_draw(seed, d->stream, s, 2 * (uint64_t)i) >> 8) + 1.0) * 5.9604644775390625e-8;
        const double u2 = (double)(vcc_dropout_draw(seed, d->stream, s, 2 * (uint64_t)i + 1) >> 8) * 5.9604644775390625e-8;
        const double z = sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
        return (float)((double)d->a + (double)d->b * z);
    }
}

#endif /* VCC_ELEM_DROPOUT_H */
