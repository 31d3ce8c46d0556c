/*
 * cuda/loss.cuh - the loss family's CUDA kernels: softmax cross-entropy and its gradient.
 * Signatures: proto/loss.h; per-element bodies shared with the C target: elem/loss.h. Part of the CUDA target's runtime (cuda/base.cuh).
 */
#ifndef VCC_CUDA_LOSS_CUH
#define VCC_CUDA_LOSS_CUH

#include "base.cuh"
#include "../elem/loss.h"

#define VCC_KERNEL VCC_KERNEL_DECLARE
#include "../proto/loss.h"
#undef VCC_KERNEL

/* One block. Rows go in chunks of VCC_CUDA_THREADS, one row per thread
 * (vcc_xent_row); thread 0 then adds the chunk's row losses in row order into
 * a float total, so the sum is the CPU's sequential one; loss[0] = total / N. */
template <class TL>
static __global__ void softmax_xent_forward_kernel(int64_t N, int64_t K, const TL *logits,
                                                   const int64_t *labels, float *loss, float *prob)
{
    __shared__ float row_loss[VCC_CUDA_THREADS];
    float total = 0.0f;
    for (int64_t r0 = 0; r0 < N; r0 += VCC_CUDA_THREADS) {
        const int64_t r = r0 + threadIdx.x;
        const int64_t cnt = N - r0 < VCC_CUDA_THREADS ? N - r0 : VCC_CUDA_THREADS;
        if (r < N) row_loss[threadIdx.x] = vcc_xent_row(K, logits + r * K, labels[r], prob + r * K);
        __syncthreads();
        if (threadIdx.x == 0)
            for (int64_t i = 0; i < cnt; i++) total += row_loss[i];
        __syncthreads();
    }
    if (threadIdx.x == 0) loss[0] = total / (float)N;
}

template <class TG>
static __global__ void softmax_xent_backward_kernel(int64_t N, int64_t K, const float *prob, const int64_t *labels,
                                                    const float *dloss, TG *dlogits)
{
    const float scale = dloss[0] / (float)N;
    VCC_GRID_STRIDE(i, N * K) {
        int64_t r = i / K;
        vcc_st(dlogits, i, vcc_xent_bwd(prob[i], labels[r] == i - r * K, scale));
    }
}

/* logits, prob (N, K); labels (N) int64; loss (1). logits float or bfloat16 (vcc --precision bf16: the
 * classifier's output), the rest float32. */
template <class TL>
static inline void softmax_xent_forward(VccRt *rt, int64_t N, int64_t K, const TL *logits, const int64_t *labels,
                                        float *loss, float *prob)
{
    (void)rt;
    if (N <= 0 || K <= 0) return;
    softmax_xent_forward_kernel<<<1, VCC_CUDA_THREADS>>>(N, K, logits, labels, loss, prob);
    VCC_CUDA_LAUNCHED();
}

/* dlogits (N, K) = (prob - onehot(label)) * dloss / N, stored as float or bfloat16 */
template <class TG>
static inline void softmax_xent_backward(VccRt *rt, int64_t N, int64_t K, const float *prob, const int64_t *labels,
                                         const float *dloss, TG *dlogits)
{
    (void)rt;
    if (N <= 0 || K <= 0) return;
    softmax_xent_backward_kernel<<<vcc__grid(N * K), VCC_CUDA_THREADS>>>(N, K, prob, labels, dloss, dlogits);
    VCC_CUDA_LAUNCHED();
}

/* One block: loss[0] = mean of (pred - target)^2, a fixed-order sum in double. */
static __global__ void mse_forward_kernel(int64_t n, const float *pred, const float *target, float *loss)
{
    __shared__ double sh[VCC_CUDA_THREADS];
    double acc = 0.0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) acc += vcc_mse_term(pred[i], target[i]);
    acc = vcc__block_sum(acc, sh);
    if (threadIdx.x == 0) loss[0] = n > 0 ? (float)(acc / (double)n) : 0.0f;
}

static __global__ void mse_backward_kernel(int64_t n, const float *pred, const float *target, float scale, float *dpred)
{
    VCC_GRID_STRIDE(i, n) dpred[i] = vcc_mse_bwd(pred[i], target[i], scale);
}

/* pred, target (n); loss (1) */
static inline void mse_forward(VccRt *rt, int64_t n, const float *pred, const float *target, float *loss)
{
    (void)rt;
    mse_forward_kernel<<<1, VCC_CUDA_THREADS>>>(n, pred, target, loss);
    VCC_CUDA_LAUNCHED();
}

/* dpred (n) = 2 (pred - target) / n; dpred may == pred */
static inline void mse_backward(VccRt *rt, int64_t n, const float *pred, const float *target, float *dpred)
{
    (void)rt;
    if (n <= 0) return;
    mse_backward_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(n, pred, target, (float)(2.0 / (double)n), dpred);
    VCC_CUDA_LAUNCHED();
}

#define VCC_KERNEL VCC_KERNEL_CHECK
#include "../proto/loss.h"
#undef VCC_KERNEL

#endif /* VCC_CUDA_LOSS_CUH */
