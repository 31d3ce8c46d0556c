/*
 * cpu/attention.h - the attention family's CPU kernels: fused scaled dot-product attention and its
 * gradient, one query row (forward, dQ) or key row (dK, dV) per loop iteration, no L x L buffer.
 * Signatures: proto/attention.h; the arithmetic, shared with the CUDA target: elem/attention.h. Part of
 * the C target's runtime (cpu/base.h).
 */
#ifndef VCC_CPU_ATTENTION_H
#define VCC_CPU_ATTENTION_H

#include "base.h"
#include "../elem/attention.h"

#define VCC_KERNEL VCC_KERNEL_DECLARE
#include "../proto/attention.h"
#undef VCC_KERNEL

/* The score s_ij of query row q_i (D contiguous floats) against key row j of batch b. */
VCC_CPU_FN double vcc__attn_s(const VccAttnDesc *d, const float *qi, const float *k, const float *bias, int64_t b,
                              int64_t i, int64_t j)
{
    int64_t ks;
    const float *kj = vcc_attn_k(d, k, b, j, &ks);
    return vcc_attn_score(d, qi, kj, ks, bias, b, i, j);
}

/* attention_forward: o (B, Lq, Dv) = softmax(scale * q k^T + bias) v, with attention dropout when
 * d->threshold, and lse (B, Lq) = each row's log-sum-exp of the scores (elem/attention.h). q (B, Lq, D),
 * k (B, Lk, D) or (B, D, Lk) with d->k_t, v (B, Lk, Dv), bias as d describes or NULL. */
VCC_CPU_FN void attention_forward(VccRt *rt, const VccAttnDesc *d, const float *q, const float *k, const float *v,
                                  const float *bias, float *o, float *lse)
{
    const uint64_t seed = d->own_seed ? d->seed : rt->seed;
    int64_t r;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (r = 0; r < d->B * d->Lq; r++) {
        const int64_t b = r / d->Lq, i = r % d->Lq;
        const float *qi = q + r * d->D;
        double m = -INFINITY, l = 0.0, acc[VCC_ATTN_MAXD], L;
        int64_t j, t;
        for (j = 0; j < d->Lk; j++) vcc_attn_online(vcc__attn_s(d, qi, k, bias, b, i, j), &m, &l);
        lse[r] = (float)(m + log(l));
        L = (double)lse[r];
        for (t = 0; t < d->Dv; t++) acc[t] = 0.0;
        for (j = 0; j < d->Lk; j++) {
            const double p = exp(vcc__attn_s(d, qi, k, bias, b, i, j) - L) * vcc_attn_keep(d, seed, rt->step, b, i, j);
            const float *vj = v + (b * d->Lk + j) * d->Dv;
            if (p != 0.0)
                for (t = 0; t < d->Dv; t++) acc[t] += p * (double)vj[t];
        }
        for (t = 0; t < d->Dv; t++) o[r * d->Dv + t] = (float)acc[t];
    }
}

/* dS_ij and the kept, scaled probability p_ij * keep_ij of (b, i, j) (elem/attention.h), from the
 * forward's lse and delta_i. */
VCC_CPU_FN double vcc__attn_ds(const VccAttnDesc *d, uint64_t seed, uint64_t step, const float *q, const float *k,
                               const float *v, const float *bias, const float *lse, const float *dout,
                               const float *delta, int64_t b, int64_t i, int64_t j, double *pk)
{
    const int64_t r = b * d->Lq + i;
    const double p = exp(vcc__attn_s(d, q + r * d->D, k, bias, b, i, j) - (double)lse[r]);
    const double keep = vcc_attn_keep(d, seed, step, b, i, j);
    const double dp = keep * vcc_attn_dot(dout + r * d->Dv, 1, v + (b * d->Lk + j) * d->Dv, 1, d->Dv);
    *pk = p * keep;
    return p * (dp - (double)delta[r]);
}

/* attention_backward: dq, dk, dv (each NULL when not wanted; dk in k's layout) from dout (B, Lq, Dv),
 * the forward's o and lse, recomputing the probabilities (no L x L buffer). delta (B*Lq floats,
 * scratch) receives dout_i . o_i. */
VCC_CPU_FN void attention_backward(VccRt *rt, const VccAttnDesc *d, const float *q, const float *k, const float *v,
                                   const float *bias, const float *o, const float *lse, const float *dout, float *dq,
                                   float *dk, float *dv, float *delta)
{
    const uint64_t seed = d->own_seed ? d->seed : rt->seed;
    int64_t r;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (r = 0; r < d->B * d->Lq; r++) delta[r] = (float)vcc_attn_dot(dout + r * d->Dv, 1, o + r * d->Dv, 1, d->Dv);
    if (dq) {
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
        for (r = 0; r < d->B * d->Lq; r++) {
            const int64_t b = r / d->Lq, i = r % d->Lq;
            double acc[VCC_ATTN_MAXD], pk;
            int64_t j, t, ks;
            for (t = 0; t < d->D; t++) acc[t] = 0.0;
            for (j = 0; j < d->Lk; j++) {
                const double ds = vcc__attn_ds(d, seed, rt->step, q, k, v, bias, lse, dout, delta, b, i, j, &pk);
                const float *kj = vcc_attn_k(d, k, b, j, &ks);
                for (t = 0; t < d->D; t++) acc[t] += ds * (double)kj[t * ks];
            }
            for (t = 0; t < d->D; t++) dq[r * d->D + t] = (float)((double)d->scale * acc[t]);
        }
    }
    if (dk || dv) {
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
        for (r = 0; r < d->B * d->Lk; r++) {
            const int64_t b = r / d->Lk, j = r % d->Lk;
            double ak[VCC_ATTN_MAXD], av[VCC_ATTN_MAXD], pk;
            int64_t i, t;
            for (t = 0; t < d->D; t++) ak[t] = 0.0;
            for (t = 0; t < d->Dv; t++) av[t] = 0.0;
            for (i = 0; i < d->Lq; i++) {
                const int64_t qr = b * d->Lq + i;
                const double ds = vcc__attn_ds(d, seed, rt->step, q, k, v, bias, lse, dout, delta, b, i, j, &pk);
                for (t = 0; t < d->D; t++) ak[t] += ds * (double)q[qr * d->D + t];
                for (t = 0; t < d->Dv; t++) av[t] += pk * (double)dout[qr * d->Dv + t];
            }
            if (dk)
                for (t = 0; t < d->D; t++)
                    dk[d->k_t ? (b * d->D + t) * d->Lk + j : r * d->D + t] = (float)((double)d->scale * ak[t]);
            if (dv)
                for (t = 0; t < d->Dv; t++) dv[r * d->Dv + t] = (float)av[t];
        }
    }
}

#define VCC_KERNEL VCC_KERNEL_CHECK
#include "../proto/attention.h"
#undef VCC_KERNEL

#endif /* VCC_CPU_ATTENTION_H */
