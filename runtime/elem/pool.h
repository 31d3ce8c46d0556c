/*
 * elem/pool.h - the pool family's per-window and per-element arithmetic, written once for both targets:
 * the CPU loops (cpu/pool.h) call these directly, the CUDA kernels (cuda/pool.cuh) from device code.
 * Pure C99, no I/O, no state.
 *
 * A pooling window (ONNX MaxPool / AveragePool, torch.nn.functional.max_pool{1,2,3}d / avg_pool{1,2,3}d)
 * over one plane x (D0, D1, D2) of an (N, C, D0, D1, D2) tensor: output position o = (o0, o1, o2) reads the
 * taps p_i = o_i * stride_i - pad_begin_i + j_i * dilation_i, j_i = 0 .. kernel_i - 1; taps outside
 * [0, in_i) are padding. 1-D and 2-D pools are 3-D ones with trailing dims of size 1 (kernel, stride,
 * dilation 1, pads 0). Flat indices within a plane are row-major: (p0 * in1 + p1) * in2 + p2.
 */
#ifndef VCC_ELEM_POOL_H
#define VCC_ELEM_POOL_H

#include "base.h"

/* VccPoolDesc: one pooling geometry. x (NC, in[0..2]) -> y (NC, out[0..2]); entries past nsp are 1
 * (in, out, kernel, stride, dilation) and 0 (pads). The output sizes already follow ceil_mode: a window
 * that would start in the end padding is not there (PyTorch and ONNX). count_include_pad: an average's
 * divisor counts the taps inside the declared pads [-pad_begin, in + pad_end), else only those in
 * [0, in). */
typedef struct VccPoolDesc {
    int nsp;                /* spatial dims, 1..3 */
    int count_include_pad;  /* AveragePool: divisor counts the declared padding (0 or 1) */
    int64_t NC;             /* planes: batch * channels */
    int64_t in[3], out[3], kernel[3], stride[3], dilation[3], pad_begin[3], pad_end[3];
} VccPoolDesc;

/* vcc_pool_coords: the coordinates c[0..2] of flat index i over dims n[0..2] (row-major). */
VCC_HD void vcc_pool_coords(const int64_t *n, int64_t i, int64_t *c)
{
    c[2] = i % n[2];
    i /= n[2];
    c[1] = i % n[1];
    c[0] = i / n[1];
}

/* vcc_pool_taps: how many taps start + j * dil (j = 0 .. k-1) lie in [lo, hi). */
VCC_HD int64_t vcc_pool_taps(int64_t start, int64_t k, int64_t dil, int64_t lo, int64_t hi)
{
    int64_t j, n = 0;
    for (j = 0; j < k; j++) n += start + j * dil >= lo && start + j * dil < hi;
    return n;
}

/* vcc_pool_first: the first output index o >= 0 whose window along one dim can reach input coordinate p
 * (o * stride - pad_begin + (kernel - 1) * dilation >= p). */
VCC_HD int64_t vcc_pool_first(const VccPoolDesc *d, int i, int64_t p)
{
    int64_t num = p + d->pad_begin[i] - (d->kernel[i] - 1) * d->dilation[i];
    return num <= 0 ? 0 : (num + d->stride[i] - 1) / d->stride[i];
}

/* vcc_pool_hits: whether the window of output index o along dim i has a tap at input coordinate p. */
VCC_HD int vcc_pool_hits(const VccPoolDesc *d, int i, int64_t o, int64_t p)
{
    int64_t off = p + d->pad_begin[i] - o * d->stride[i];
    return off >= 0 && off % d->dilation[i] == 0 && off / d->dilation[i] < d->kernel[i];
}

/* vcc_avgpool_count: the divisor of the average of the window at output coordinates oc: its taps in
 * [-pad_begin, in + pad_end) with count_include_pad, else in [0, in) (torch avg_pool's divisor). */
VCC_HD int64_t vcc_avgpool_count(const VccPoolDesc *d, const int64_t *oc)
{
    int64_t n = 1;
    int i;
    for (i = 0; i < 3; i++) {
        const int64_t s = oc[i] * d->stride[i] - d->pad_begin[i];
        n *= d->count_include_pad ? vcc_pool_taps(s, d->kernel[i], d->dilation[i], -d->pad_begin[i],
                                                  d->in[i] + d->pad_end[i])
                                  : vcc_pool_taps(s, d->kernel[i], d->dilation[i], 0, d->in[i]);
    }
    return n;
}

/* vcc_pool_tap: the flat input index of tap j (row-major over the kernel, j < prod(kernel)) of the window
 * starting at s[0..2] (output coordinate * stride - pad_begin), or -1 when the tap lies in the padding. */
VCC_HD int64_t vcc_pool_tap(const VccPoolDesc *d, const int64_t *s, int64_t j)
{
    const int64_t c = j % d->kernel[2], b = j / d->kernel[2] % d->kernel[1], a = j / (d->kernel[2] * d->kernel[1]);
    const int64_t p0 = s[0] + a * d->dilation[0], p1 = s[1] + b * d->dilation[1], p2 = s[2] + c * d->dilation[2];
    if (p0 < 0 || p0 >= d->in[0] || p1 < 0 || p1 >= d->in[1] || p2 < 0 || p2 >= d->in[2]) return -1;
    return (p0 * d->in[1] + p1) * d->in[2] + p2;
}

/* vcc_pool_window: output o of plane x (in[0..2]) into *y: the max of its taps in the input (is_max),
 * else their sum (in double) over vcc_avgpool_count (0 when the divisor is 0). Returns the max's flat tap
 * index, -1 when no tap lies in the input (*y = -inf) or for an average. Max ties keep the first tap in
 * window order and a NaN wins, the last NaN in window order (PyTorch's max_pool: `val > max ||
 * isnan(val)`). */
VCC_ELEM_IN VCC_HD int64_t vcc_pool_window(const VccPoolDesc *d, const VCC_IN *x, int64_t o, int is_max, float *y)
{
    int64_t oc[3], s[3], a, b, c, n, arg = -1;
    float m = -INFINITY;
    double acc = 0.0;
    vcc_pool_coords(d->out, o, oc);
    for (a = 0; a < 3; a++) s[a] = oc[a] * d->stride[a] - d->pad_begin[a];
    for (a = 0; a < d->kernel[0]; a++) {
        const int64_t p0 = s[0] + a * d->dilation[0];
        if (p0 < 0 || p0 >= d->in[0]) continue;
        for (b = 0; b < d->kernel[1]; b++) {
            const int64_t p1 = s[1] + b * d->dilation[1];
            if (p1 < 0 || p1 >= d->in[1]) continue;
            for (c = 0; c < d->kernel[2]; c++) {
                const int64_t p2 = s[2] + c * d->dilation[2], idx = (p0 * d->in[1] + p1) * d->in[2] + p2;
                float v;
                if (p2 < 0 || p2 >= d->in[2]) continue;
                v = vcc_ld(x, idx);
                if (!is_max) {
                    acc += (double)v;
                } else if (arg < 0 || v > m || v != v) {
                    m = v;
                    arg = idx;
                }
            }
        }
    }
    if (is_max) {
        *y = m;
        return arg;
    }
    n = vcc_avgpool_count(d, oc);
    *y = n > 0 ? (float)(acc / (double)n) : 0.0f;
    return -1;
}

/* vcc_maxpool_onnx_index: ONNX MaxPool's Indices value of the tap at flat index idx of plane p: the
 * element's offset in the whole (N, C, D0, D1, D2) input, with the spatial part row-major
 * (storage_order 0) or column-major (storage_order 1: D0 fastest). */
VCC_HD int64_t vcc_maxpool_onnx_index(const VccPoolDesc *d, int64_t p, int64_t idx, int storage_order)
{
    int64_t c[3];
    const int64_t S = d->in[0] * d->in[1] * d->in[2];
    if (!storage_order) return p * S + idx;
    vcc_pool_coords(d->in, idx, c);
    return p * S + c[0] + c[1] * d->in[0] + c[2] * d->in[0] * d->in[1];
}

/* vcc_pool_dx: the gradient at flat input index i of one plane, summed in double over the windows with a
 * tap at i: max pooling (arg given: each output's argmax from vcc_pool_window) takes dy where the
 * window's argmax is i (PyTorch routes dy to the argmax); average pooling (arg NULL) takes dy / divisor. */
VCC_ELEM_IN VCC_HD float vcc_pool_dx(const VccPoolDesc *d, const int32_t *arg, const VCC_IN *dy, int64_t i)
{
    int64_t c[3], oc[3], o;
    double acc = 0.0;
    vcc_pool_coords(d->in, i, c);
    for (oc[0] = vcc_pool_first(d, 0, c[0]); oc[0] < d->out[0] && oc[0] * d->stride[0] <= c[0] + d->pad_begin[0];
         oc[0]++) {
        if (!vcc_pool_hits(d, 0, oc[0], c[0])) continue;
        for (oc[1] = vcc_pool_first(d, 1, c[1]);
             oc[1] < d->out[1] && oc[1] * d->stride[1] <= c[1] + d->pad_begin[1]; oc[1]++) {
            if (!vcc_pool_hits(d, 1, oc[1], c[1])) continue;
            for (oc[2] = vcc_pool_first(d, 2, c[2]);
                 oc[2] < d->out[2] && oc[2] * d->stride[2] <= c[2] + d->pad_begin[2]; oc[2]++) {
                if (!vcc_pool_hits(d, 2, oc[2], c[2])) continue;
                o = (oc[0] * d->out[1] + oc[1]) * d->out[2] + oc[2];
                if (!arg) acc += (double)vcc_ld(dy, o) / (double)vcc_avgpool_count(d, oc);
                else if (arg[o] == i) acc += (double)vcc_ld(dy, o);
            }
        }
    }
    return (float)acc;
}

#endif /* VCC_ELEM_POOL_H */
