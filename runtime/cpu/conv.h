/*
 * cpu/conv.h - the conv family's CPU kernels: Conv, ConvGradData, ConvGradFilter, ConvTranspose and its
 * gradients (ConvTransposeGradData is conv_forward of the same descriptor).
 * Signatures: proto/conv.h; per-element bodies shared with the CUDA target: elem/conv.h. Part of the C target's runtime (cpu/base.h).
 */
#ifndef VCC_CPU_CONV_H
#define VCC_CPU_CONV_H

#include "base.h"
#include "../elem/conv.h"

#define VCC_KERNEL VCC_KERNEL_DECLARE
#include "../proto/conv.h"
#undef VCC_KERNEL

/* vcc_conv_geo: validate d and build its 3-D view (vcc_conv_geo_make, elem/conv.h);
 * aborts on an inconsistent descriptor. */
VCC_CPU_FN void vcc_conv_geo(const VccConvDesc *d, VccConvGeo *g)
{
    const char *bad = vcc_conv_geo_make(d, g);
    VCC_CPU_CHECK(bad == NULL, "conv (N=%lld C=%lld K=%lld G=%lld nsp=%d): %s", (long long)d->N, (long long)d->C,
                  (long long)d->K, (long long)d->G, d->nsp, bad);
}

/* vcc_conv_range: [*lo, *hi) = output positions o in [0, O) whose input index
 * o*s + off lies in [0, I). */
VCC_CPU_FN void vcc_conv_range(int64_t off, int64_t s, int64_t I, int64_t O, int64_t *lo, int64_t *hi)
{
    int64_t l = off >= 0 ? 0 : (-off + s - 1) / s;
    int64_t h = (I - 1 - off) < 0 ? 0 : (I - 1 - off) / s + 1;
    if (l > O) l = O;
    if (h > O) h = O;
    if (h < l) h = l;
    *lo = l;
    *hi = h;
}

/* vcc_im2col: unfold one sample's group of channels into columns.
 *   x   (Cg, I0, I1, I2) with the zero padding implied by g->pb / the ranges
 *   col (Cg*k0*k1*k2, O0*O1*O2), row r = ((c*k0 + a)*k1 + b)*k2 + e, i.e. the
 *       order of the flattened weight (K, C/G, k0, k1, k2).
 * Padded positions are written as 0. */
VCC_CPU_FN void vcc_im2col(const VccConvGeo *g, const float *x, float *col)
{
    const int64_t rows = g->Cg * g->KK;
    const int64_t I0 = g->in[0], I1 = g->in[1], I2 = g->in[2];
    const int64_t O0 = g->out[0], O1 = g->out[1], O2 = g->out[2];
    const int64_t k1 = g->k[1], k2 = g->k[2];
    const int64_t s0 = g->s[0], s1 = g->s[1], s2 = g->s[2];
    int64_t r;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (r = 0; r < rows; r++) {
        const int64_t c = r / g->KK, kr = r % g->KK;
        const int64_t a = kr / (k1 * k2), b = (kr / k2) % k1, e = kr % k2;
        const int64_t off0 = a * g->dl[0] - g->pb[0];
        const int64_t off1 = b * g->dl[1] - g->pb[1];
        const int64_t off2 = e * g->dl[2] - g->pb[2];
        const float *xc = x + c * g->IN;
        float *dst = col + r * g->OUT;
        int64_t lo2, hi2, o0, o1, o;
        vcc_conv_range(off2, s2, I2, O2, &lo2, &hi2);
        for (o0 = 0; o0 < O0; o0++) {
            const int64_t i0 = o0 * s0 + off0;
            if (i0 < 0 || i0 >= I0) {
                memset(dst, 0, (size_t)(O1 * O2) * sizeof(float));
                dst += O1 * O2;
                continue;
            }
            for (o1 = 0; o1 < O1; o1++, dst += O2) {
                const int64_t i1 = o1 * s1 + off1;
                const float *src;
                if (i1 < 0 || i1 >= I1) {
                    memset(dst, 0, (size_t)O2 * sizeof(float));
                    continue;
                }
                src = xc + (i0 * I1 + i1) * I2;
                for (o = 0; o < lo2; o++) dst[o] = 0.0f;
                if (s2 == 1) {
                    if (hi2 > lo2) memcpy(dst + lo2, src + lo2 + off2, (size_t)(hi2 - lo2) * sizeof(float));
                } else {
                    for (o = lo2; o < hi2; o++) dst[o] = src[o * s2 + off2];
                }
                for (o = hi2; o < O2; o++) dst[o] = 0.0f;
            }
        }
    }
}

/* vcc_col2im: adjoint of vcc_im2col: ACCUMULATE columns back into
 *   x (Cg, I0, I1, I2) += fold(col (Cg*KK, OUT)); padded positions dropped.
 * Parallel over channels (rows of one channel touch only that channel). */
VCC_CPU_FN void vcc_col2im(const VccConvGeo *g, const float *col, float *x)
{
    const int64_t I0 = g->in[0], I1 = g->in[1], I2 = g->in[2];
    const int64_t O0 = g->out[0], O1 = g->out[1], O2 = g->out[2];
    const int64_t k1 = g->k[1], k2 = g->k[2];
    const int64_t s0 = g->s[0], s1 = g->s[1], s2 = g->s[2];
    int64_t c;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (c = 0; c < g->Cg; c++) {
        float *xc = x + c * g->IN;
        int64_t kr;
        for (kr = 0; kr < g->KK; kr++) {
            const int64_t a = kr / (k1 * k2), b = (kr / k2) % k1, e = kr % k2;
            const int64_t off0 = a * g->dl[0] - g->pb[0];
            const int64_t off1 = b * g->dl[1] - g->pb[1];
            const int64_t off2 = e * g->dl[2] - g->pb[2];
            const float *src = col + (c * g->KK + kr) * g->OUT;
            int64_t lo2, hi2, o0, o1, o;
            vcc_conv_range(off2, s2, I2, O2, &lo2, &hi2);
            for (o0 = 0; o0 < O0; o0++) {
                const int64_t i0 = o0 * s0 + off0;
                if (i0 < 0 || i0 >= I0) { src += O1 * O2; continue; }
                for (o1 = 0; o1 < O1; o1++, src += O2) {
                    const int64_t i1 = o1 * s1 + off1;
                    float *row;
                    if (i1 < 0 || i1 >= I1) continue;
                    row = xc + (i0 * I1 + i1) * I2;
                    if (s2 == 1) {
                        float *rr = row + off2;
                        for (o = lo2; o < hi2; o++) rr[o] += src[o];
                    } else {
                        for (o = lo2; o < hi2; o++) row[o * s2 + off2] += src[o];
                    }
                }
            }
        }
    }
}

/* vcc_conv_ws: ws as the im2col buffer (C/G*KK, OUT) floats; aborts unless
 * ws_bytes >= 4*vcc_conv_col_elems(d) (checked for every conv, so a plan
 * error shows up even on convs that skip im2col). */
VCC_CPU_FN float *vcc_conv_ws(const VccConvDesc *d, void *ws, size_t ws_bytes)
{
    int64_t need = vcc_conv_col_elems(d);
    VCC_CPU_CHECK(need >= 0 && (uint64_t)need <= (uint64_t)(ws_bytes / sizeof(float)) && (need == 0 || ws),
                  "conv: workspace of %llu bytes is smaller than the %llu the im2col buffer needs",
                  (unsigned long long)ws_bytes, (unsigned long long)need * 4u);
    return (float *)ws;
}

/* vcc_conv_bias_backward: db (K) = sum over n and s of dy (N, K, S), OVERWRITTEN; each row summed in
 * double (vcc_sum_f64), the rows added in double. */
VCC_CPU_FN void vcc_conv_bias_backward(int64_t N, int64_t K, int64_t S, const float *dy, float *db)
{
    int64_t k;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (k = 0; k < K; k++) {
        double acc = 0.0;
        int64_t n;
        for (n = 0; n < N; n++) acc += vcc_sum_f64(dy + (n * K + k) * S, S);
        db[k] = (float)acc;
    }
}

/* conv_forward: y = conv(x, w) + b, ONNX Conv / PyTorch F.conv{1,2,3}d
 * (cross-correlation, zero padding pad_begin/pad_end per dim, groups,
 * strides, dilations).
 *   x (N, C, *in)   w (K, C/G, *kernel)   b (K) or NULL   y (N, K, *out)
 *   ws: ws_bytes >= 4*vcc_conv_col_elems(d) (aborts otherwise).
 * Per sample and group: im2col into ws, then one sgemm
 *   y_g (K/G, OUT) = w_g (K/G, C/G*KK) * col (C/G*KK, OUT);
 * pointwise convs (kernel 1, stride 1, no pad) use x directly as col. */
VCC_CPU_FN void conv_forward(VccRt *rt, VccConvDesc *d, const float *x, const float *w, const float *b,
                                float *y, void *ws, size_t ws_bytes)
{
    VccConvGeo g;
    float *col;
    int64_t n, gi, k, o;
    (void)rt;
    vcc_conv_geo(d, &g);
    col = vcc_conv_ws(d, ws, ws_bytes);
    for (n = 0; n < d->N; n++) {
        for (gi = 0; gi < d->G; gi++) {
            const float *xg = x + (n * d->C + gi * g.Cg) * g.IN;
            const float *wg = w + gi * g.Kg * g.Cg * g.KK;
            float *yg = y + (n * d->K + gi * g.Kg) * g.OUT;
            const float *B = xg;
            float beta = 0.0f;
            if (b) {
                for (k = 0; k < g.Kg; k++) {
                    float bv = b[gi * g.Kg + k];
                    float *yr = yg + k * g.OUT;
                    for (o = 0; o < g.OUT; o++) yr[o] = bv;
                }
                beta = 1.0f;
            }
            if (!g.pointwise) {
                vcc_im2col(&g, xg, col);
                B = col;
            }
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)g.Kg, (int)g.OUT, (int)(g.Cg * g.KK),
                        1.0f, wg, (int)(g.Cg * g.KK), B, (int)g.OUT, beta, yg, (int)g.OUT);
        }
    }
}

/* conv_backward_data: dx = d(sum(y * dy))/dx for conv_forward's y (the input
 * gradient of ONNX Conv / torch conv, i.e. a transposed convolution of dy).
 *   dy (N, K, *out)   w (K, C/G, *kernel)   dx (N, C, *in), OVERWRITTEN
 *   ws: ws_bytes >= 4*vcc_conv_col_elems(d).
 * Per sample and group: col = w_g^T * dy_g (one sgemm), then col2im. */
VCC_CPU_FN void conv_backward_data(VccRt *rt, VccConvDesc *d, const float *dy, const float *w, float *dx,
                                      void *ws, size_t ws_bytes)
{
    VccConvGeo g;
    float *col;
    int64_t n, gi;
    (void)rt;
    vcc_conv_geo(d, &g);
    col = vcc_conv_ws(d, ws, ws_bytes);
    for (n = 0; n < d->N; n++) {
        float *dxn = dx + n * d->C * g.IN;
        if (!g.pointwise) memset(dxn, 0, (size_t)(d->C * g.IN) * sizeof(float));
        for (gi = 0; gi < d->G; gi++) {
            const float *dyg = dy + (n * d->K + gi * g.Kg) * g.OUT;
            const float *wg = w + gi * g.Kg * g.Cg * g.KK;
            float *dxg = dxn + gi * g.Cg * g.IN;
            if (g.pointwise) {
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)g.Cg, (int)g.OUT, (int)g.Kg,
                            1.0f, wg, (int)g.Cg, dyg, (int)g.OUT, 0.0f, dxg, (int)g.OUT);
            } else {
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)(g.Cg * g.KK), (int)g.OUT, (int)g.Kg,
                            1.0f, wg, (int)(g.Cg * g.KK), dyg, (int)g.OUT, 0.0f, col, (int)g.OUT);
                vcc_col2im(&g, col, dxg);
            }
        }
    }
}

/* conv_backward_filter: weight and bias gradients of conv_forward (ONNX Conv /
 * torch conv weight.grad, bias.grad).
 *   x (N, C, *in)   dy (N, K, *out)
 *   dw (K, C/G, *kernel), OVERWRITTEN: sum over samples of dy_g * col^T
 *   db (K) or NULL, OVERWRITTEN: sum of dy over N and spatial (double accumulation)
 *   ws: ws_bytes >= 4*vcc_conv_col_elems(d).
 * Per sample and group: im2col into ws, one sgemm accumulating into dw_g. */
VCC_CPU_FN void conv_backward_filter(VccRt *rt, VccConvDesc *d, const float *x, const float *dy, float *dw,
                                        float *db, void *ws, size_t ws_bytes)
{
    VccConvGeo g;
    float *col;
    int64_t n, gi;
    (void)rt;
    vcc_conv_geo(d, &g);
    col = vcc_conv_ws(d, ws, ws_bytes);
    if (d->N == 0) memset(dw, 0, (size_t)(d->K * g.Cg * g.KK) * sizeof(float));
    for (n = 0; n < d->N; n++) {
        for (gi = 0; gi < d->G; gi++) {
            const float *xg = x + (n * d->C + gi * g.Cg) * g.IN;
            const float *dyg = dy + (n * d->K + gi * g.Kg) * g.OUT;
            float *dwg = dw + gi * g.Kg * g.Cg * g.KK;
            const float *B = xg;
            if (!g.pointwise) {
                vcc_im2col(&g, xg, col);
                B = col;
            }
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)g.Kg, (int)(g.Cg * g.KK), (int)g.OUT,
                        1.0f, dyg, (int)g.OUT, B, (int)g.OUT, n == 0 ? 0.0f : 1.0f, dwg, (int)(g.Cg * g.KK));
        }
    }
    if (db) vcc_conv_bias_backward(d->N, d->K, g.OUT, dy, db);
}

/* conv_transpose_forward: ONNX ConvTranspose / PyTorch F.conv_transpose{1,2,3}d, the adjoint of the
 * convolution d (same strides, dilations, groups, begin pads) plus a bias:
 *   x (N, K, *out)   w (K, C/G, *kernel)   b (C) or NULL   y (N, C, *in), OVERWRITTEN
 * (d's output plays the transposed conv's input: ONNX's X (N, C_in, ...) is d's (N, K, *out), ONNX's
 * W (C_in, C_out/group, k...) is d's (K, C/G, *kernel), ONNX's Y d's (N, C, *in)).
 *   ws: ws_bytes >= 4*vcc_conv_col_elems(d).
 * y = conv_backward_data(x), then y[n, c, :] += b[c]. */
VCC_CPU_FN void conv_transpose_forward(VccRt *rt, VccConvDesc *d, const float *x, const float *w, const float *b,
                                       float *y, void *ws, size_t ws_bytes)
{
    int64_t S = 1, nc;
    int i;
    conv_backward_data(rt, d, x, w, y, ws, ws_bytes);
    if (!b) return;
    for (i = 0; i < d->nsp; i++) S *= d->in[i];
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (nc = 0; nc < d->N * d->C; nc++) {
        const float bv = b[nc % d->C];
        float *yr = y + nc * S;
        int64_t s;
        for (s = 0; s < S; s++) yr[s] += bv;
    }
}

/* conv_transpose_backward_filter: weight and bias gradients of conv_transpose_forward (ONNX
 * ConvTranspose / torch conv_transpose weight.grad, bias.grad).
 *   x (N, K, *out)   dy (N, C, *in)
 *   dw (K, C/G, *kernel), OVERWRITTEN: the filter gradient of d with input dy and output gradient x
 *   db (C) or NULL, OVERWRITTEN: sum of dy over N and spatial (double accumulation)
 *   ws: ws_bytes >= 4*vcc_conv_col_elems(d). */
VCC_CPU_FN void conv_transpose_backward_filter(VccRt *rt, VccConvDesc *d, const float *x, const float *dy,
                                               float *dw, float *db, void *ws, size_t ws_bytes)
{
    int64_t S = 1;
    int i;
    conv_backward_filter(rt, d, dy, x, dw, NULL, ws, ws_bytes);
    for (i = 0; i < d->nsp; i++) S *= d->in[i];
    if (db) vcc_conv_bias_backward(d->N, d->C, S, dy, db);
}

#define VCC_KERNEL VCC_KERNEL_CHECK
#include "../proto/conv.h"
#undef VCC_KERNEL

#endif /* VCC_CPU_CONV_H */
