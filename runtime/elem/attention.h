/*
 * elem/attention.h - the attention family's arithmetic, written once for both targets: scaled
 * dot-product attention fused into one op that never holds the L x L matrices (runtime/cpu/attention.h
 * loops over rows, runtime/cuda/attention.cuh stages K and V in shared memory; both call these).
 *
 * For each batch b (the product of the leading dims) and query row i, over the key rows j:
 *     s_ij  = scale * (q_i . k_j) + bias_ij                     (dot products in double)
 *     lse_i = log sum_j exp(s_ij)                                (online: running max m and sum l)
 *     p_ij  = exp(s_ij - lse_i)                                  (softmax along j)
 *     o_i   = sum_j p_ij * keep_ij / (1 - ratio) * v_j           (attention dropout: keep_ij drawn)
 * Forward saves O and lse only. Backward (FlashAttention-2's recomputation, Dao 2023) with
 * delta_i = dO_i . O_i:
 *     dP_ij = keep_ij / (1 - ratio) * (dO_i . v_j)
 *     dS_ij = p_ij * (dP_ij - delta_i)
 *     dQ_i  = scale * sum_j dS_ij k_j,   dK_j = scale * sum_i dS_ij q_i,   dV_j = sum_i p_ij keep_ij / (1 - ratio) dO_i
 * Sums run in double, in ascending j (forward, dQ) or i (dK, dV), on both targets. The dropout draw of
 * (b, i, j) is the one the unfused graph's Dropout draws for element (b*Lq + i)*Lk + j of P, with that
 * node's stream (runtime/elem/dropout.h), so fused and unfused programs drop the same elements.
 */
#ifndef VCC_ELEM_ATTENTION_H
#define VCC_ELEM_ATTENTION_H

#include "base.h"
#include "dropout.h"

#define VCC_ATTN_MAXD 256 /* the largest head dim (D, Dv) the kernels take */
#define VCC_ATTN_MAXB 6   /* leading (batch) dims of the bias' broadcast */

/* VccAttnDesc: one fused attention node.
 *   Q (B, Lq, D), K (B, Lk, D) or, with k_t, K^T (B, D, Lk), V (B, Lk, Dv), O (B, Lq, Dv), lse (B, Lq);
 *   B = prod(bdims[0..nb-1]), the leading dims.
 *   bias (optional): element (b, i, j) at sum_a bc(b, a) * bias_sb[a] + i * bias_si + j * bias_sj, with
 *     bc(b, a) the coordinate of b along leading dim a (0 strides on broadcast dims).
 *   threshold, dscale, stream, own_seed, seed: attention dropout (threshold 0: none), as VccDropoutDesc. */
typedef struct VccAttnDesc {
    int64_t B, Lq, Lk, D, Dv;
    float scale;
    int k_t, nb;
    int64_t bdims[VCC_ATTN_MAXB], bias_sb[VCC_ATTN_MAXB], bias_si, bias_sj;
    uint32_t threshold, stream;
    float dscale;
    int own_seed;
    uint64_t seed;
} VccAttnDesc;

/* vcc_attn_bias: bias element (b, i, j), 0 without a bias. */
VCC_HD double vcc_attn_bias(const VccAttnDesc *d, const float *bias, int64_t b, int64_t i, int64_t j)
{
    int64_t off = i * d->bias_si + j * d->bias_sj;
    int a;
    if (!bias) return 0.0;
    for (a = d->nb - 1; a >= 0; a--) {
        off += (b % d->bdims[a]) * d->bias_sb[a];
        b /= d->bdims[a];
    }
    return (double)bias[off];
}

/* vcc_attn_dot: sum over n of x[t * xs] * y[t * ys], in double. */
VCC_HD double vcc_attn_dot(const float *x, int64_t xs, const float *y, int64_t ys, int64_t n)
{
    double s = 0.0;
    int64_t t;
    for (t = 0; t < n; t++) s += (double)x[t * xs] * (double)y[t * ys];
    return s;
}

/* vcc_attn_online: fold score s into the running max *m and sum *l of exp(s - *m). */
VCC_HD void vcc_attn_online(double s, double *m, double *l)
{
    if (s > *m) {
        *l = *l * exp(*m - s) + 1.0;
        *m = s;
    } else {
        *l += exp(s - *m);
    }
}

/* vcc_attn_score: s_ij = scale * (q_i . k_j) + bias_ij for query row qi (D contiguous floats) and key
 * row kj (elements ks apart), in double: the one score both targets compute, in every kernel. */
VCC_HD double vcc_attn_score(const VccAttnDesc *d, const float *qi, const float *kj, int64_t ks, const float *bias,
                             int64_t b, int64_t i, int64_t j)
{
    return (double)d->scale * vcc_attn_dot(qi, 1, kj, ks, d->D) + vcc_attn_bias(d, bias, b, i, j);
}

/* vcc_attn_keep: the attention-dropout factor of (b, i, j) at step: 0 (dropped) or dscale (kept);
 * 1 without dropout. */
VCC_HD double vcc_attn_keep(const VccAttnDesc *d, uint64_t seed, uint64_t step, int64_t b, int64_t i, int64_t j)
{
    if (!d->threshold) return 1.0;
    return vcc_dropout_draw(seed, d->stream, step, (uint64_t)((b * d->Lq + i) * d->Lk + j)) >= d->threshold
               ? (double)d->dscale
               : 0.0;
}

/* vcc_attn_k: row j of K in batch b and the stride of its elements (k_t: a column of K^T). */
VCC_HD const float *vcc_attn_k(const VccAttnDesc *d, const float *k, int64_t b, int64_t j, int64_t *ks)
{
    *ks = d->k_t ? d->Lk : 1;
    return d->k_t ? k + b * d->D * d->Lk + j : k + (b * d->Lk + j) * d->D;
}

#endif /* VCC_ELEM_ATTENTION_H */
