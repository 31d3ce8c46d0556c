/*
 * cpu/loss.h - the loss family's CPU kernels: softmax cross-entropy and its gradient.
 * Signatures: proto/loss.h; per-element bodies shared with the CUDA target: elem/loss.h. Part of the C target's runtime (cpu/base.h).
 */
#ifndef VCC_CPU_LOSS_H
#define VCC_CPU_LOSS_H

#include "base.h"
#include "../elem/loss.h"

#define VCC_KERNEL VCC_KERNEL_DECLARE
#include "../proto/loss.h"
#undef VCC_KERNEL

/* softmax_xent_forward: loss[0] = mean over rows of -log softmax(logits)[label]
 * (rows summed in float in row order, then divided by N).
 *   logits (N, K)   labels (N) int64 in [0, K) (out of range gives NaN)
 *   loss (1)   prob (N, K) = softmax(logits), saved for the backward. */
VCC_CPU_FN void softmax_xent_forward(VccRt *rt, int64_t N, int64_t K, const float *logits, const int64_t *labels,
                                        float *loss, float *prob)
{
    int64_t i;
    float total = 0.0f;
    (void)rt;
    for (i = 0; i < N; i++) total += vcc_xent_row(K, logits + i * K, labels[i], prob + i * K);
    loss[0] = N > 0 ? total / (float)N : 0.0f;
}

/* softmax_xent_backward: dlogits = (prob - onehot(label)) * dloss[0] / N.
 *   prob, dlogits (N, K) (dlogits may == prob)   labels (N)   dloss (1) */
VCC_CPU_FN void softmax_xent_backward(VccRt *rt, int64_t N, int64_t K, const float *prob, const int64_t *labels,
                                         const float *dloss, float *dlogits)
{
    int64_t i, k;
    const float scale = N > 0 ? dloss[0] / (float)N : 0.0f;
    (void)rt;
    for (i = 0; i < N; i++)
        for (k = 0; k < K; k++)
            dlogits[i * K + k] = vcc_xent_bwd(prob[i * K + k], k == labels[i], scale);
}

/* mse_forward: loss[0] = mean over the n elements of (pred - target)^2 (torch.nn.MSELoss(), reduction
 * 'mean'), summed in double in element order. pred, target (n); loss (1). */
VCC_CPU_FN void mse_forward(VccRt *rt, int64_t n, const float *pred, const float *target, float *loss)
{
    double acc = 0.0;
    int64_t i;
    (void)rt;
    for (i = 0; i < n; i++) acc += vcc_mse_term(pred[i], target[i]);
    loss[0] = n > 0 ? (float)(acc / (double)n) : 0.0f;
}

/* mse_backward: dpred = 2 (pred - target) / n. pred, target, dpred (n); dpred may == pred. */
VCC_CPU_FN void mse_backward(VccRt *rt, int64_t n, const float *pred, const float *target, float *dpred)
{
    const float scale = n > 0 ? (float)(2.0 / (double)n) : 0.0f;
    int64_t i;
    (void)rt;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (i = 0; i < n; i++) dpred[i] = vcc_mse_bwd(pred[i], target[i], scale);
}

#define VCC_KERNEL VCC_KERNEL_CHECK
#include "../proto/loss.h"
#undef VCC_KERNEL

#endif /* VCC_CPU_LOSS_H */
