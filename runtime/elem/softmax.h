/*
 * elem/softmax.h - the softmax family's arithmetic (Softmax, LogSoftmax and their gradients), written
 * once for both targets: the CPU loop over rows (cpu/softmax.h) calls vcc_softmax_row and
 * vcc_softmax_bwd_row, the CUDA kernels (cuda/softmax.cuh) the per-element bodies from device code with
 * their own reductions. Pure C99, no I/O, no state.
 *
 * The input is viewed as (outer, D, inner): a row is the D elements x[o * D * inner + j * inner + i],
 * j = 0..D-1, for each (o, i); every row is normalized on its own. ONNX Softmax/LogSoftmax 1-12 (input
 * coerced to 2-D at axis) are inner = 1, D = prod(dims[axis:]); 13+ are D = dims[axis], inner =
 * prod(dims[axis+1:]). `lg` (1) selects LogSoftmax. Numerically stable as PyTorch's kernels: the row max m
 * is subtracted before exp; the sums are accumulated in double.
 */
#ifndef VCC_ELEM_SOFTMAX_H
#define VCC_ELEM_SOFTMAX_H

#include "base.h"

/* vcc_softmax_out: y of one element x of a row with max m and sum = sum_j exp(x_j - m):
 * softmax exp(x - m) / sum, log-softmax (x - m) - log(sum). */
VCC_HD float vcc_softmax_out(int lg, float x, float m, double sum)
{
    return lg ? (float)((double)(x - m) - log(sum)) : (float)((double)expf(x - m) / sum);
}

/* vcc_softmax_dot: one term of the row sum the gradient needs: dy * y (softmax), dy (log-softmax). */
VCC_HD double vcc_softmax_dot(int lg, float y, float dy)
{
    return lg ? (double)dy : (double)dy * (double)y;
}

/* vcc_softmax_bwd: dx of one element given the row's sum s of vcc_softmax_dot terms (PyTorch's
 * _softmax_backward_data / _log_softmax_backward_data): softmax y * (dy - s), log-softmax
 * dy - exp(y) * s. */
VCC_HD float vcc_softmax_bwd(int lg, float y, float dy, double s)
{
    return lg ? (float)((double)dy - (double)expf(y) * s) : (float)((double)y * ((double)dy - s));
}

/* vcc_softmax_row: y of one row of D elements at stride `stride` (x and y alike). */
VCC_HD void vcc_softmax_row(int lg, int64_t D, int64_t stride, const float *x, float *y)
{
    float m = -INFINITY;
    double sum = 0.0;
    int64_t j;
    for (j = 0; j < D; j++)
        if (x[j * stride] > m) m = x[j * stride];
    for (j = 0; j < D; j++) sum += (double)expf(x[j * stride] - m);
    for (j = 0; j < D; j++) y[j * stride] = vcc_softmax_out(lg, x[j * stride], m, sum);
}

/* vcc_softmax_bwd_row: dx of one row of D elements at stride `stride` from the forward output y and dy. */
VCC_HD void vcc_softmax_bwd_row(int lg, int64_t D, int64_t stride, const float *y, const float *dy, float *dx)
{
    double s = 0.0;
    int64_t j;
    for (j = 0; j < D; j++) s += vcc_softmax_dot(lg, y[j * stride], dy[j * stride]);
    for (j = 0; j < D; j++) dx[j * stride] = vcc_softmax_bwd(lg, y[j * stride], dy[j * stride], s);
}

#endif /* VCC_ELEM_SOFTMAX_H */
