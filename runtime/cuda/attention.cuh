/*
 * cuda/attention.cuh - the attention family's CUDA kernels: fused scaled dot-product attention and its
 * gradient, tiled: a block of VCC_ATTN_ROWS query rows (or key rows, for dK and dV) stages VCC_ATTN_TILE
 * rows of K and V (or of Q and dO) at a time in shared memory; nothing of size L x L exists in global
 * memory. Each thread computes its row with the arithmetic of elem/attention.h in the CPU kernels' order
 * (cpu/attention.h), so both targets give the same numbers. Signatures: proto/attention.h. Part of the
 * CUDA target's runtime (cuda/base.cuh).
 */
#ifndef VCC_CUDA_ATTENTION_CUH
#define VCC_CUDA_ATTENTION_CUH

#include "base.cuh"
#include "../elem/attention.h"

#define VCC_KERNEL VCC_KERNEL_DECLARE
#include "../proto/attention.h"
#undef VCC_KERNEL

#define VCC_ATTN_ROWS 64 /* threads (rows) per block */
#define VCC_ATTN_TILE 16 /* rows staged in shared memory at a time: 16 * (D + Dv) floats, at most 32 KiB */
#define VCC_ATTN_MAXGRID 65535

/* Rows [r0, r0 + n) of a (rows, w) matrix into shared sh (n, w), K's rows read in either layout
 * (kmat: the matrix is K of batch b; else a plain row-major matrix at src). Every thread calls it. */
static __device__ __forceinline__ void vcc__attn_stage(const VccAttnDesc *d, float *sh, const float *src, int kmat,
                                                        int64_t b, int64_t r0, int64_t n, int64_t w)
{
    int64_t idx;
    for (idx = threadIdx.x; idx < n * w; idx += blockDim.x) {
        const int64_t rr = idx / w, t = idx % w;
        if (kmat) {
            int64_t ks;
            const float *kr = vcc_attn_k(d, src, b, r0 + rr, &ks);
            sh[idx] = kr[t * ks];
        } else {
            sh[idx] = src[(r0 + rr) * w + t];
        }
    }
}

/* The next tile of rows [r0, r0 + n) of two matrices staged in shared memory, n = min(tile, total - r0):
 * rows of a (width wa; K of batch b in either layout when amat) into sa, and of bsrc (width wb) into sb
 * unless sb is NULL. Waits for the previous tile's readers first and for the copies after. Every thread
 * calls it; returns n. */
static __device__ __forceinline__ int64_t vcc__attn_tiles(const VccAttnDesc *d, int64_t b, int64_t r0, int64_t total,
                                                         float *sa, const float *a, int amat, int64_t wa, float *sb,
                                                         const float *bsrc, int64_t wb)
{
    const int64_t n = total - r0 < VCC_ATTN_TILE ? total - r0 : VCC_ATTN_TILE;
    __syncthreads();
    vcc__attn_stage(d, sa, a, amat, b, r0, n, wa);
    if (sb) vcc__attn_stage(d, sb, bsrc, 0, b, r0, n, wb);
    __syncthreads();
    return n;
}

static __global__ void attention_forward_kernel(VccAttnDesc d, uint64_t seed, uint64_t step, const float *q,
                                                const float *k, const float *v, const float *bias, float *o,
                                                float *lse)
{
    extern __shared__ float vcc__attn_sh[];
    float *sk = vcc__attn_sh, *sv = vcc__attn_sh + VCC_ATTN_TILE * d.D;
    const int64_t i = (int64_t)blockIdx.x * VCC_ATTN_ROWS + threadIdx.x;
    const int active = i < d.Lq;
    int64_t b;
    for (b = blockIdx.y; b < d.B; b += gridDim.y) {
        const int64_t r = b * d.Lq + (active ? i : 0);
        const float *qi = q + r * d.D;
        double m = -INFINITY, l = 0.0, L = 0.0, acc[VCC_ATTN_MAXD];
        int pass;
        int64_t j0, jj, t;
        for (pass = 0; pass < 2; pass++) {
            if (pass == 1 && active) {
                lse[r] = (float)(m + log(l));
                L = (double)lse[r];
                for (t = 0; t < d.Dv; t++) acc[t] = 0.0;
            }
            for (j0 = 0; j0 < d.Lk; j0 += VCC_ATTN_TILE) {
                const int64_t n = vcc__attn_tiles(&d, b, j0, d.Lk, sk, k, 1, d.D, pass == 1 ? sv : NULL,
                                                  v + b * d.Lk * d.Dv, d.Dv);
                if (!active) continue;
                for (jj = 0; jj < n; jj++) {
                    const double s = vcc_attn_score(&d, qi, sk + jj * d.D, 1, bias, b, i, j0 + jj);
                    if (pass == 0) {
                        vcc_attn_online(s, &m, &l);
                    } else {
                        const double p = exp(s - L) * vcc_attn_keep(&d, seed, step, b, i, j0 + jj);
                        if (p != 0.0)
                            for (t = 0; t < d.Dv; t++) acc[t] += p * (double)sv[jj * d.Dv + t];
                    }
                }
            }
        }
        if (active)
            for (t = 0; t < d.Dv; t++) o[r * d.Dv + t] = (float)acc[t];
    }
}

static __global__ void attention_delta_kernel(int64_t rows, int64_t Dv, const float *dout, const float *o, float *delta)
{
    VCC_GRID_STRIDE(r, rows) delta[r] = (float)vcc_attn_dot(dout + r * Dv, 1, o + r * Dv, 1, Dv);
}

/* dQ: one thread per query row, K and V staged by tiles */
static __global__ void attention_dq_kernel(VccAttnDesc d, uint64_t seed, uint64_t step, const float *q, const float *k,
                                           const float *v, const float *bias, const float *lse, const float *dout,
                                           const float *delta, float *dq)
{
    extern __shared__ float vcc__attn_sh[];
    float *sk = vcc__attn_sh, *sv = vcc__attn_sh + VCC_ATTN_TILE * d.D;
    const int64_t i = (int64_t)blockIdx.x * VCC_ATTN_ROWS + threadIdx.x;
    const int active = i < d.Lq;
    int64_t b;
    for (b = blockIdx.y; b < d.B; b += gridDim.y) {
        const int64_t r = b * d.Lq + (active ? i : 0);
        double acc[VCC_ATTN_MAXD];
        int64_t j0, jj, t;
        for (t = 0; t < d.D; t++) acc[t] = 0.0;
        for (j0 = 0; j0 < d.Lk; j0 += VCC_ATTN_TILE) {
            const int64_t n = vcc__attn_tiles(&d, b, j0, d.Lk, sk, k, 1, d.D, sv, v + b * d.Lk * d.Dv, d.Dv);
            if (!active) continue;
            for (jj = 0; jj < n; jj++) {
                const int64_t j = j0 + jj;
                const double s = vcc_attn_score(&d, q + r * d.D, sk + jj * d.D, 1, bias, b, i, j);
                const double p = exp(s - (double)lse[r]);
                const double dp = vcc_attn_keep(&d, seed, step, b, i, j) *
                                  vcc_attn_dot(dout + r * d.Dv, 1, sv + jj * d.Dv, 1, d.Dv);
                const double ds = p * (dp - (double)delta[r]);
                for (t = 0; t < d.D; t++) acc[t] += ds * (double)sk[jj * d.D + t];
            }
        }
        if (active)
            for (t = 0; t < d.D; t++) dq[r * d.D + t] = (float)((double)d.scale * acc[t]);
    }
}

/* dK, dV: one thread per key row, Q and dO staged by tiles */
static __global__ void attention_dkv_kernel(VccAttnDesc d, uint64_t seed, uint64_t step, const float *q, const float *k,
                                            const float *v, const float *bias, const float *lse, const float *dout,
                                            const float *delta, float *dk, float *dv)
{
    extern __shared__ float vcc__attn_sh[];
    float *sq = vcc__attn_sh, *sd = vcc__attn_sh + VCC_ATTN_TILE * d.D;
    const int64_t j = (int64_t)blockIdx.x * VCC_ATTN_ROWS + threadIdx.x;
    const int active = j < d.Lk;
    int64_t b;
    for (b = blockIdx.y; b < d.B; b += gridDim.y) {
        const int64_t c = b * d.Lk + (active ? j : 0);
        int64_t ks, i0, ii, t;
        const float *kj = vcc_attn_k(&d, k, b, active ? j : 0, &ks), *vj = v + c * d.Dv;
        double ak[VCC_ATTN_MAXD], av[VCC_ATTN_MAXD];
        for (t = 0; t < d.D; t++) ak[t] = 0.0;
        for (t = 0; t < d.Dv; t++) av[t] = 0.0;
        for (i0 = 0; i0 < d.Lq; i0 += VCC_ATTN_TILE) {
            const int64_t n = vcc__attn_tiles(&d, b, i0, d.Lq, sq, q + b * d.Lq * d.D, 0, d.D, sd,
                                              dout + b * d.Lq * d.Dv, d.Dv);
            if (!active) continue;
            for (ii = 0; ii < n; ii++) {
                const int64_t i = i0 + ii, qr = b * d.Lq + i;
                const double s = vcc_attn_score(&d, sq + ii * d.D, kj, ks, bias, b, i, j);
                const double p = exp(s - (double)lse[qr]);
                const double keep = vcc_attn_keep(&d, seed, step, b, i, j);
                const double dp = keep * vcc_attn_dot(sd + ii * d.Dv, 1, vj, 1, d.Dv);
                const double ds = p * (dp - (double)delta[qr]);
                for (t = 0; t < d.D; t++) ak[t] += ds * (double)sq[ii * d.D + t];
                for (t = 0; t < d.Dv; t++) av[t] += p * keep * (double)sd[ii * d.Dv + t];
            }
        }
        if (!active) continue;
        if (dk)
            for (t = 0; t < d.D; t++)
                dk[d.k_t ? (b * d.D + t) * d.Lk + j : c * d.D + t] = (float)((double)d.scale * ak[t]);
        if (dv)
            for (t = 0; t < d.Dv; t++) dv[c * d.Dv + t] = (float)av[t];
    }
}

static inline dim3 vcc__attn_grid(int64_t rows, int64_t B)
{
    return dim3((unsigned)((rows + VCC_ATTN_ROWS - 1) / VCC_ATTN_ROWS), (unsigned)(B < VCC_ATTN_MAXGRID ? B : VCC_ATTN_MAXGRID));
}

/* attention_forward, attention_backward: as the CPU kernels (cpu/attention.h) */
static inline void attention_forward(VccRt *rt, const VccAttnDesc *d, const float *q, const float *k, const float *v,
                                     const float *bias, float *o, float *lse)
{
    if (d->B * d->Lq <= 0) return;
    attention_forward_kernel<<<vcc__attn_grid(d->Lq, d->B), VCC_ATTN_ROWS,
                               (size_t)VCC_ATTN_TILE * (size_t)(d->D + d->Dv) * sizeof(float)>>>(
        *d, d->own_seed ? d->seed : rt->seed, rt->step, q, k, v, bias, o, lse);
    VCC_CUDA_LAUNCHED();
}

static inline void attention_backward(VccRt *rt, const VccAttnDesc *d, const float *q, const float *k, const float *v,
                                      const float *bias, const float *o, const float *lse, const float *dout, float *dq,
                                      float *dk, float *dv, float *delta)
{
    const uint64_t seed = d->own_seed ? d->seed : rt->seed;
    const size_t sh = (size_t)VCC_ATTN_TILE * (size_t)(d->D + d->Dv) * sizeof(float);
    if (d->B * d->Lq <= 0) return;
    attention_delta_kernel<<<vcc__grid(d->B * d->Lq), VCC_CUDA_THREADS>>>(d->B * d->Lq, d->Dv, dout, o, delta);
    VCC_CUDA_LAUNCHED();
    if (dq) {
        attention_dq_kernel<<<vcc__attn_grid(d->Lq, d->B), VCC_ATTN_ROWS, sh>>>(*d, seed, rt->step, q, k, v, bias, lse,
                                                                               dout, delta, dq);
        VCC_CUDA_LAUNCHED();
    }
    if (dk || dv) {
        attention_dkv_kernel<<<vcc__attn_grid(d->Lk, d->B), VCC_ATTN_ROWS, sh>>>(*d, seed, rt->step, q, k, v, bias,
                                                                                lse, dout, delta, dk, dv);
        VCC_CUDA_LAUNCHED();
    }
}

#define VCC_KERNEL VCC_KERNEL_CHECK
#include "../proto/attention.h"
#undef VCC_KERNEL

#endif /* VCC_CUDA_ATTENTION_CUH */
