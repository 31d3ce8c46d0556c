/*
 * elem/loss.h - the loss family's per-element (and per-row) arithmetic, written once for both
 * targets: the CPU loops (cpu/loss.h) call these directly, the CUDA kernels (cuda/loss.cuh) from device
 * code. Pure C99, no I/O, no state.
 */
#ifndef VCC_ELEM_LOSS_H
#define VCC_ELEM_LOSS_H

#include "base.h"

/* vcc_xent_row: one row of softmax cross-entropy.
 *   logits_row (K), prob_row (K) written with softmax(logits_row), computed
 *   max-subtracted; returns -log softmax(logits_row)[label] computed as
 *   logsumexp(logits_row) - logits_row[label] (torch.nn.CrossEntropyLoss per
 *   sample, before the batch mean).
 * Errors: the caller validates labels; a label outside [0, K) (or K <= 0)
 * reads nothing out of bounds and returns NaN. prob_row may not alias logits_row. */
VCC_ELEM_IN VCC_HD float vcc_xent_row(int64_t K, const VCC_IN *logits_row, int64_t label, float *prob_row)
{
    int64_t k;
    float mx, sum = 0.0f, inv;
    if (K <= 0)
        return nanf("");
    mx = vcc_ld(logits_row, 0);
    for (k = 1; k < K; k++)
        if (vcc_ld(logits_row, k) > mx) mx = vcc_ld(logits_row, k);
    for (k = 0; k < K; k++) {
        float e = expf(vcc_ld(logits_row, k) - mx);
        prob_row[k] = e;
        sum += e;
    }
    inv = 1.0f / sum;
    for (k = 0; k < K; k++)
        prob_row[k] *= inv;
    if (label < 0 || label >= K)
        return nanf("");
    return (mx + logf(sum)) - vcc_ld(logits_row, label);
}

/* vcc_xent_bwd: d loss / d logit for one element: (prob - is_label) * scale,
 * where scale = dloss / N for the batch-mean reduction. */
VCC_HD float vcc_xent_bwd(float prob, int is_label, float scale)
{
    return (prob - (is_label ? 1.0f : 0.0f)) * scale;
}

/* vcc_mse_term: one element's (pred - target)^2 in double (the forward sums them in double). */
VCC_HD double vcc_mse_term(float pred, float target)
{
    double d = (double)pred - (double)target;
    return d * d;
}

/* vcc_mse_bwd: d loss / d pred for one element of mean((pred - target)^2): (pred - target) * scale, where
 * scale = 2 / n (torch.nn.MSELoss backward, reduction 'mean'). */
VCC_HD float vcc_mse_bwd(float pred, float target, float scale)
{
    return (pred - target) * scale;
}

#endif /* VCC_ELEM_LOSS_H */
