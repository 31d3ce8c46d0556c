/*
 * vcc_elem.h - per-element and per-row arithmetic shared by the CPU kernels
 * (vcc_cpu.h) and the CUDA kernels (vcc_cuda.cuh), plus the convolution
 * descriptor both backends read.
 *
 * One arithmetic, two targets: every hand-written kernel body lives here once.
 * The CPU loops call these functions directly; the CUDA kernels call them from
 * device code (VCC_HD is __host__ __device__ under nvcc). Pure C99, no libc
 * I/O, no global state. Inlined verbatim into generated trainers.
 *
 * Shape legend:
 *   N  batch            C  input channels     K  output channels (filters)
 *   T  time (frames)    H  height             W  width
 *   G  groups           S  prod(spatial dims) = T*H*W for 3-D tensors
 * Layout is row-major N, C, spatial (NCDHW for 3-D).
 */
#ifndef VCC_ELEM_H
#define VCC_ELEM_H

#include <stddef.h>
#include <stdint.h>
#include <math.h>

/* VCC_UNUSED: silences "declared but never referenced" for helpers a given
 * trainer does not call (nvcc's front end warns about unused static inline
 * functions in the main file, which is where the inlined runtime lands). */
#if defined(__GNUC__) || defined(__clang__) || defined(__CUDACC__)
#define VCC_UNUSED __attribute__((unused))
#else
#define VCC_UNUSED
#endif

#if defined(__CUDACC__)
#define VCC_HD __host__ __device__ __forceinline__
#else
#define VCC_HD static inline VCC_UNUSED
#endif

/* ------------------------------------------------------------------------ */
/* ReLU                                                                     */
/* ------------------------------------------------------------------------ */

/* vcc_relu_fwd: max(x, 0) as torch.relu / ONNX Relu. NaN propagates
 * (relu(NaN) = NaN, as PyTorch); -0.0 and negatives give +0.0. */
VCC_HD float vcc_relu_fwd(float x)
{
    return (x > 0.0f || x != x) ? x : 0.0f;
}

/* vcc_relu_bwd: gradient of ReLU given its OUTPUT y and upstream dy:
 * y > 0 ? dy : 0. (A NaN y passes dy through, as PyTorch's
 * threshold_backward, which zeroes where y <= 0.) */
VCC_HD float vcc_relu_bwd(float y, float dy)
{
    return (y <= 0.0f) ? 0.0f : dy;
}

/* ------------------------------------------------------------------------ */
/* Batch normalization (training mode)                                      */
/* ------------------------------------------------------------------------ */

/* vcc_bn_norm: y = gamma * (x - mean) * invstd + beta, with invstd =
 * 1/sqrt(var + eps) of the channel (torch.nn.functional.batch_norm,
 * ONNX BatchNormalization). */
VCC_HD float vcc_bn_norm(float x, float mean, float invstd, float gamma, float beta)
{
    return (x - mean) * invstd * gamma + beta;
}

/* vcc_bn_invstd: 1/sqrt(var + eps) in double, rounded to float once (the
 * inference form's per-channel scale; PyTorch's CPU batch_norm also works in
 * double for float inputs). */
VCC_HD float vcc_bn_invstd(float var, float eps)
{
    return (float)(1.0 / sqrt((double)var + (double)eps));
}

/* vcc_bn_dx: input gradient of training-mode batch norm for one element.
 *   xhat = (x - mean) * invstd
 *   dx   = gamma * invstd * (dy - sum_dy * inv_m - xhat * sum_dy_xhat * inv_m)
 * sum_dy = sum of dy over the channel's m = N*S elements, sum_dy_xhat = sum
 * of dy*xhat over the same elements, inv_m = 1/m. Matches PyTorch's
 * batch_norm backward with biased batch variance. */
VCC_HD float vcc_bn_dx(float x, float dy, float mean, float invstd, float gamma,
                       float sum_dy, float sum_dy_xhat, float inv_m)
{
    float xhat = (x - mean) * invstd;
    return gamma * invstd * (dy - sum_dy * inv_m - xhat * sum_dy_xhat * inv_m);
}

/* ------------------------------------------------------------------------ */
/* SGD                                                                      */
/* ------------------------------------------------------------------------ */

/* vcc_sgd: one element of torch.optim.SGD (dampening 0, nesterov off):
 *   g += wd * p;  v = momentum * v + g;  p -= lr * v
 * v must start at 0 (then the first step gives v = g, as PyTorch's clone).
 * With momentum 0 this is plain p -= lr * (g + wd*p). */
VCC_HD void vcc_sgd(float *p, float g, float *v, float lr, float momentum, float wd)
{
    float pv = *p;
    float vv;
    g += wd * pv;
    vv = momentum * (*v) + g;
    *v = vv;
    *p = pv - lr * vv;
}

/* ------------------------------------------------------------------------ */
/* Softmax cross-entropy                                                    */
/* ------------------------------------------------------------------------ */

/* vcc_xent_row: one row of softmax cross-entropy.
 *   logits_row (K), prob_row (K) written with softmax(logits_row), computed
 *   max-subtracted; returns -log softmax(logits_row)[label] computed as
 *   logsumexp(logits_row) - logits_row[label] (torch.nn.CrossEntropyLoss per
 *   sample, before the batch mean).
 * Errors: the caller validates labels; a label outside [0, K) (or K <= 0)
 * reads nothing out of bounds and returns NaN. prob_row may not alias logits_row. */
VCC_HD float vcc_xent_row(int64_t K, const float *logits_row, int64_t label, float *prob_row)
{
    int64_t k;
    float mx, sum = 0.0f, inv;
    if (K <= 0)
        return nanf("");
    mx = logits_row[0];
    for (k = 1; k < K; k++)
        if (logits_row[k] > mx) mx = logits_row[k];
    for (k = 0; k < K; k++) {
        float e = expf(logits_row[k] - mx);
        prob_row[k] = e;
        sum += e;
    }
    inv = 1.0f / sum;
    for (k = 0; k < K; k++)
        prob_row[k] *= inv;
    if (label < 0 || label >= K)
        return nanf("");
    return (mx + logf(sum)) - logits_row[label];
}

/* vcc_xent_bwd: d loss / d logit for one element: (prob - is_label) * scale,
 * where scale = dloss / N for the batch-mean reduction. */
VCC_HD float vcc_xent_bwd(float prob, int is_label, float scale)
{
    return (prob - (is_label ? 1.0f : 0.0f)) * scale;
}

/* ------------------------------------------------------------------------ */
/* Convolution descriptor                                                   */
/* ------------------------------------------------------------------------ */

/* VccConvDesc: one ONNX Conv (cross-correlation) with nsp spatial dims.
 *   x (N, C, in[0..nsp-1])   w (K, C/G, kernel[0..nsp-1])   b (K)
 *   y (N, K, out[0..nsp-1]), out = floor((in + pb + pe - dil*(k-1) - 1)/stride) + 1
 * Entries past nsp are ignored (generated code sets them to 1 / 0).
 * backend: target-private cache (cuDNN descriptors and algorithms); NULL
 * initially, owned by the backend. */
typedef struct VccConvDesc {
    int nsp;                          /* spatial rank, 1..3 */
    int64_t N, C, K, G;               /* batch, in channels, out channels (filters), groups */
    int64_t in[3], out[3], kernel[3], stride[3], dilation[3], pad_begin[3], pad_end[3];
    void *backend;                    /* target-private cache; NULL initially */
} VccConvDesc;

/* vcc_conv_col_elems: floats in the im2col buffer for ONE sample and ONE
 * group: (C/G) * prod(kernel) * prod(out). */
static inline VCC_UNUSED int64_t vcc_conv_col_elems(const VccConvDesc *d)
{
    int64_t n = d->C / d->G;
    int i;
    for (i = 0; i < d->nsp; i++)
        n *= d->kernel[i] * d->out[i];
    return n;
}

#endif /* VCC_ELEM_H */
