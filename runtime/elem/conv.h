/*
 * elem/conv.h - the conv family's per-element (and per-row) arithmetic, written once for both
 * targets: the CPU loops (cpu/conv.h) call these directly, the CUDA kernels (cuda/conv.cuh) from device
 * code. Pure C99, no I/O, no state.
 *
 * Every op of the family runs on one convolution descriptor (VccConvDesc, elem/base.h): Conv's own, or,
 * for ConvTranspose, the Conv whose adjoint it is. Its pads may be asymmetric, and negative where a
 * ConvTranspose's output_shape asks for more output than its input reaches (a negative pad crops).
 */
#ifndef VCC_ELEM_CONV_H
#define VCC_ELEM_CONV_H

#include "base.h"

/* vcc_conv_col_elems: floats in the whole im2col buffer of ONE sample and ONE group: (C/G) * prod(kernel)
 * * prod(out). The kernels unfold it in chunks of output positions (vcc_conv_chunk_cols). */
static inline VCC_UNUSED int64_t vcc_conv_col_elems(const VccConvDesc *d)
{
    int64_t n = d->C / d->G;
    int i;
    for (i = 0; i < d->nsp; i++)
        n *= d->kernel[i] * d->out[i];
    return n;
}

/* Internal 3-D view of a descriptor: an nsp-D conv is the 3-D conv whose
 * leading 3-nsp spatial dims have size 1, kernel 1, stride 1, pad 0. */
typedef struct {
    int64_t in[3], out[3], k[3], s[3], dl[3], pb[3];
    int64_t Cg, Kg;      /* channels and filters per group */
    int64_t IN, OUT, KK; /* prod(in), prod(out), prod(kernel) */
    int pointwise;       /* kernel 1, stride 1, no padding: col == x */
} VccConvGeo;

/* vcc_conv_geo_make: d's 3-D view into g. Returns NULL, or what is
 * inconsistent in d (out size not the ONNX formula, channels not divisible by
 * G, a GEMM dimension past the BLAS int range). Pads may be negative. Host only. */
static inline VCC_UNUSED const char *vcc_conv_geo_make(const VccConvDesc *d, VccConvGeo *g)
{
    int i, j;
    if (d->nsp < 1 || d->nsp > 3) return "spatial rank not in 1..3";
    if (d->G < 1 || d->C < 0 || d->K < 0 || d->C % d->G || d->K % d->G)
        return "C and K not multiples of the groups";
    for (i = 0; i < 3; i++) {
        g->in[i] = g->out[i] = g->k[i] = g->s[i] = g->dl[i] = 1;
        g->pb[i] = 0;
    }
    g->pointwise = 1;
    for (i = 0; i < d->nsp; i++) {
        int64_t span;
        j = 3 - d->nsp + i;
        if (d->in[i] < 0 || d->kernel[i] < 1 || d->stride[i] < 1 || d->dilation[i] < 1)
            return "negative input size, or kernel, stride or dilation below 1";
        span = d->in[i] + d->pad_begin[i] + d->pad_end[i] - d->dilation[i] * (d->kernel[i] - 1) - 1;
        if (span < 0 || d->out[i] != span / d->stride[i] + 1)
            return "output size disagrees with the ONNX Conv formula";
        g->in[j] = d->in[i];
        g->out[j] = d->out[i];
        g->k[j] = d->kernel[i];
        g->s[j] = d->stride[i];
        g->dl[j] = d->dilation[i];
        g->pb[j] = d->pad_begin[i];
        if (d->kernel[i] != 1 || d->stride[i] != 1 || d->pad_begin[i] != 0 || d->pad_end[i] != 0)
            g->pointwise = 0;
    }
    g->Cg = d->C / d->G;
    g->Kg = d->K / d->G;
    g->IN = g->in[0] * g->in[1] * g->in[2];
    g->OUT = g->out[0] * g->out[1] * g->out[2];
    g->KK = g->k[0] * g->k[1] * g->k[2];
    if (g->Kg > INT32_MAX || g->OUT > INT32_MAX || g->Cg * g->KK > INT32_MAX)
        return "GEMM dimension exceeds the BLAS int range";
    return NULL;
}

/* vcc_conv_chunk_cols: the output positions P per chunk that a workspace of ws_bytes holds: the im2col
 * columns of P consecutive (flattened) output positions of one sample and one group, a (Cg*KK, P) block,
 * P = min(OUT, ws_bytes / (4*Cg*KK)); 0 when not even one column fits. The compiler sizes each conv's
 * workspace by the same rule under --workspace-limit (ir/ops/conv.c, vcc_conv_ws_bytes), so the kernels
 * use exactly the planned bytes; chunks run in ascending order of position. */
VCC_HD int64_t vcc_conv_chunk_cols(const VccConvGeo *g, size_t ws_bytes)
{
    const int64_t rows = g->Cg * g->KK;
    int64_t p = rows > 0 ? (int64_t)(ws_bytes / sizeof(float)) / rows : g->OUT;
    return p < g->OUT ? p : g->OUT;
}

/* vcc_conv_im2col_at: entry (r, o) of one sample's and one group's column
 * matrix (Cg*KK, OUT) (vcc_im2col in cpu/conv.h fills a chunk of its columns): row r = c*KK + kr with
 * kr the flattened kernel position (k0, k1, k2), column o the flattened output
 * position; the value is x (Cg, I0, I1, I2) at o*s + kr*dl - pb, 0 where that
 * lies in the padding. */
VCC_HD float vcc_conv_im2col_at(const VccConvGeo *g, const float *x, int64_t r, int64_t o)
{
    const int64_t c = r / g->KK, kr = r % g->KK;
    const int64_t a = kr / (g->k[1] * g->k[2]), b = (kr / g->k[2]) % g->k[1], e = kr % g->k[2];
    const int64_t o0 = o / (g->out[1] * g->out[2]), o1 = (o / g->out[2]) % g->out[1], o2 = o % g->out[2];
    const int64_t i0 = o0 * g->s[0] + a * g->dl[0] - g->pb[0];
    const int64_t i1 = o1 * g->s[1] + b * g->dl[1] - g->pb[1];
    const int64_t i2 = o2 * g->s[2] + e * g->dl[2] - g->pb[2];
    if (i0 < 0 || i0 >= g->in[0] || i1 < 0 || i1 >= g->in[1] || i2 < 0 || i2 >= g->in[2]) return 0.0f;
    return x[c * g->IN + (i0 * g->in[1] + i1) * g->in[2] + i2];
}

/* The output index o whose window reads input index i at kernel offset
 * kk*dl (o*s + kk*dl - pb == i), or -1 when there is none in [0, O). */
VCC_HD int64_t vcc_conv_out_of(int64_t i, int64_t kk, int64_t s, int64_t dl, int64_t pb, int64_t O)
{
    const int64_t t = i + pb - kk * dl;
    if (t < 0 || t % s) return -1;
    return t / s < O ? t / s : -1;
}

/* vcc_conv_col2im_at: element (c, i) of x (Cg, I0, I1, I2) folded back from the columns of output
 * positions [p0, p0 + pc) of the column matrix, held as col (Cg*KK, pc); the adjoint of
 * vcc_conv_im2col_at on that chunk: acc plus the entries im2col copied from x[c, i], added one by one
 * over kernel positions kr in ascending order (vcc_col2im in cpu/conv.h adds them to x in that order
 * too, chunk after chunk). */
VCC_HD float vcc_conv_col2im_at(const VccConvGeo *g, const float *col, int64_t p0, int64_t pc, int64_t c,
                                int64_t i, float acc)
{
    const int64_t i0 = i / (g->in[1] * g->in[2]), i1 = (i / g->in[2]) % g->in[1], i2 = i % g->in[2];
    int64_t a, b, e;
    for (a = 0; a < g->k[0]; a++) {
        const int64_t o0 = vcc_conv_out_of(i0, a, g->s[0], g->dl[0], g->pb[0], g->out[0]);
        if (o0 < 0) continue;
        for (b = 0; b < g->k[1]; b++) {
            const int64_t o1 = vcc_conv_out_of(i1, b, g->s[1], g->dl[1], g->pb[1], g->out[1]);
            if (o1 < 0) continue;
            for (e = 0; e < g->k[2]; e++) {
                const int64_t o2 = vcc_conv_out_of(i2, e, g->s[2], g->dl[2], g->pb[2], g->out[2]);
                const int64_t o = (o0 * g->out[1] + o1) * g->out[2] + o2;
                if (o2 < 0 || o < p0 || o >= p0 + pc) continue;
                const int64_t r = c * g->KK + (a * g->k[1] + b) * g->k[2] + e;
                acc += col[r * pc + (o - p0)];
            }
        }
    }
    return acc;
}

#endif /* VCC_ELEM_CONV_H */
