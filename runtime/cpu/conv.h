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

/* -DVCC_CONV_DNNL (vcc --cpu-conv dnnl): conv_forward, conv_backward_data and conv_backward_filter (so
 * every conv-family op) try oneDNN first (cpu/conv_dnnl.h) and take the im2col path below for the calls
 * it does not compute: a shape oneDNN refuses, a pass that does not fit its workspace, and weight
 * gradients where oneDNN's only kernel is its gemm convolution (no faster than this path, bench/conv);
 * those weight gradients' products run through oneDNN's dnnl_sgemm (vcc_conv_filter_sgemm). */
#ifdef VCC_CONV_DNNL
#include "conv_dnnl.h"
#endif

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

/* vcc_conv_segment: the part of output row (o0, o1) that chunk position p (flattened, < p1) starts:
 * *o0, *o1 and the positions [*a, *e) of the row's innermost dim, at most p1 - p of them. */
VCC_CPU_FN void vcc_conv_segment(const VccConvGeo *g, int64_t p, int64_t p1, int64_t *o0, int64_t *o1,
                                 int64_t *a, int64_t *e)
{
    const int64_t row = p / g->out[2];
    *o0 = row / g->out[1];
    *o1 = row % g->out[1];
    *a = p % g->out[2];
    *e = *a + (p1 - p) < g->out[2] ? *a + (p1 - p) : g->out[2];
}

/* vcc_im2col: unfold the output positions [p0, p0 + pc) (flattened row-major) of one sample's group of
 * channels into columns.
 *   x   (Cg, I0, I1, I2) with the zero padding implied by g->pb / the ranges
 *   col (Cg*k0*k1*k2, pc): column j is output position p0 + j; row r = ((c*k0 + a)*k1 + b)*k2 + e, i.e.
 *       the order of the flattened weight (K, C/G, k0, k1, k2).
 * Padded positions are written as 0. */
VCC_CPU_FN void vcc_im2col(const VccConvGeo *g, const float *x, int64_t p0, int64_t pc, float *col)
{
    const int64_t rows = g->Cg * g->KK;
    const int64_t I0 = g->in[0], I1 = g->in[1], I2 = g->in[2];
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
        float *dst = col + r * pc;
        int64_t lo2, hi2, p, o;
        vcc_conv_range(off2, s2, I2, g->out[2], &lo2, &hi2);
        for (p = p0; p < p0 + pc;) {
            int64_t o0, o1, sa, se, i0, i1, ca, ce;
            const float *src;
            vcc_conv_segment(g, p, p0 + pc, &o0, &o1, &sa, &se);
            i0 = o0 * s0 + off0;
            i1 = o1 * s1 + off1;
            p += se - sa;
            if (i0 < 0 || i0 >= I0 || i1 < 0 || i1 >= I1) {
                memset(dst, 0, (size_t)(se - sa) * sizeof(float));
                dst += se - sa;
                continue;
            }
            src = xc + (i0 * I1 + i1) * I2;
            ca = lo2 > sa ? lo2 : sa; /* [sa, ca) and [ce, se) are padding */
            ce = hi2 < se ? hi2 : se;
            if (ca > se) ca = se;
            if (ce < ca) ce = ca;
            for (o = sa; o < ca; o++) dst[o - sa] = 0.0f;
            if (s2 == 1) {
                if (ce > ca) memcpy(dst + (ca - sa), src + ca + off2, (size_t)(ce - ca) * sizeof(float));
            } else {
                for (o = ca; o < ce; o++) dst[o - sa] = src[o * s2 + off2];
            }
            for (o = ce; o < se; o++) dst[o - sa] = 0.0f;
            dst += se - sa;
        }
    }
}

/* vcc_col2im: adjoint of vcc_im2col on the chunk [p0, p0 + pc): ACCUMULATE its columns back into
 *   x (Cg, I0, I1, I2) += fold(col (Cg*KK, pc)); padded positions dropped.
 * Parallel over channels (rows of one channel touch only that channel). */
VCC_CPU_FN void vcc_col2im(const VccConvGeo *g, const float *col, int64_t p0, int64_t pc, float *x)
{
    const int64_t I0 = g->in[0], I1 = g->in[1], I2 = g->in[2];
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
            const float *src = col + (c * g->KK + kr) * pc;
            int64_t lo2, hi2, p, o;
            vcc_conv_range(off2, s2, I2, g->out[2], &lo2, &hi2);
            for (p = p0; p < p0 + pc;) {
                int64_t o0, o1, sa, se, i0, i1, ca, ce;
                float *row;
                vcc_conv_segment(g, p, p0 + pc, &o0, &o1, &sa, &se);
                i0 = o0 * s0 + off0;
                i1 = o1 * s1 + off1;
                p += se - sa;
                if (i0 >= 0 && i0 < I0 && i1 >= 0 && i1 < I1) {
                    row = xc + (i0 * I1 + i1) * I2;
                    ca = lo2 > sa ? lo2 : sa;
                    ce = hi2 < se ? hi2 : se;
                    if (s2 == 1) {
                        float *rr = row + off2;
                        for (o = ca; o < ce; o++) rr[o] += src[o - sa];
                    } else {
                        for (o = ca; o < ce; o++) row[o * s2 + off2] += src[o - sa];
                    }
                }
                src += se - sa;
            }
        }
    }
}

/* vcc_conv_ws: ws as the im2col buffer of chunks of vcc_conv_chunk_cols(g, ws_bytes) output positions,
 * into *pc; aborts unless one column fits (checked for every conv, so a plan error shows up even on
 * convs that skip im2col). */
VCC_CPU_FN float *vcc_conv_ws(const VccConvDesc *d, const VccConvGeo *g, void *ws, size_t ws_bytes, int64_t *pc)
{
    *pc = vcc_conv_chunk_cols(g, ws ? ws_bytes : 0);
    VCC_CPU_CHECK(*pc > 0 || g->OUT == 0,
                  "conv (N=%lld C=%lld K=%lld): workspace of %llu bytes is smaller than one im2col column",
                  (long long)d->N, (long long)d->C, (long long)d->K, (unsigned long long)ws_bytes);
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
 *   ws: the im2col buffer of pc = vcc_conv_chunk_cols output positions (aborts when pc < 1).
 * Per sample, group and chunk [p0, p0 + pc) of output positions: im2col into ws, then one sgemm
 *   y_g[:, p0:p0+pc] (K/G, pc) = w_g (K/G, C/G*KK) * col (C/G*KK, pc);
 * pointwise convs (kernel 1, stride 1, no pad) use x directly as col, in one sgemm. */
VCC_CPU_FN void conv_forward(VccRt *rt, VccConvDesc *d, const float *x, const float *w, const float *b,
                                float *y, void *ws, size_t ws_bytes)
{
    VccConvGeo g;
    float *col;
    int64_t n, gi, k, o, pc, p0;
    (void)rt;
    vcc_conv_geo(d, &g);
    col = vcc_conv_ws(d, &g, ws, ws_bytes, &pc);
#ifdef VCC_CONV_DNNL
    if (vcc_dnnl_conv(rt, d, VCC_DNNL_FWD, x, w, b, y, ws, ws_bytes)) return;
#endif
    for (n = 0; n < d->N; n++) {
        for (gi = 0; gi < d->G; gi++) {
            const float *xg = x + (n * d->C + gi * g.Cg) * g.IN;
            const float *wg = w + gi * g.Kg * g.Cg * g.KK;
            float *yg = y + (n * d->K + gi * g.Kg) * g.OUT;
            const float beta = b ? 1.0f : 0.0f;
            if (b) {
                for (k = 0; k < g.Kg; k++) {
                    float bv = b[gi * g.Kg + k];
                    float *yr = yg + k * g.OUT;
                    for (o = 0; o < g.OUT; o++) yr[o] = bv;
                }
            }
            if (g.pointwise) {
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)g.Kg, (int)g.OUT, (int)g.Cg, 1.0f, wg,
                            (int)g.Cg, xg, (int)g.OUT, beta, yg, (int)g.OUT);
                continue;
            }
            for (p0 = 0; p0 < g.OUT; p0 += pc) {
                const int64_t m = g.OUT - p0 < pc ? g.OUT - p0 : pc;
                vcc_im2col(&g, xg, p0, m, col);
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)g.Kg, (int)m, (int)(g.Cg * g.KK),
                            1.0f, wg, (int)(g.Cg * g.KK), col, (int)m, beta, yg + p0, (int)g.OUT);
            }
        }
    }
}

/* conv_backward_data: dx = d(sum(y * dy))/dx for conv_forward's y (the input
 * gradient of ONNX Conv / torch conv, i.e. a transposed convolution of dy).
 *   dy (N, K, *out)   w (K, C/G, *kernel)   dx (N, C, *in), OVERWRITTEN
 *   ws: the im2col buffer of pc = vcc_conv_chunk_cols output positions (aborts when pc < 1).
 * Per sample, group and chunk [p0, p0 + pc): col (C/G*KK, pc) = w_g^T * dy_g[:, p0:p0+pc] (one sgemm),
 * then col2im adds it into dx_g, chunk after chunk. */
VCC_CPU_FN void conv_backward_data_role(VccRt *rt, VccConvDesc *d, const float *dy, const float *w, float *dx,
                                        void *ws, size_t ws_bytes, int forward_role);
VCC_CPU_FN void conv_backward_data(VccRt *rt, VccConvDesc *d, const float *dy, const float *w, float *dx,
                                      void *ws, size_t ws_bytes)
{
    conv_backward_data_role(rt, d, dy, w, dx, ws, ws_bytes, 0);
}

/* conv_backward_data_role: conv_backward_data; forward_role 1 when it computes a forward op's output
 * (ConvTranspose), which oneDNN then computes as it does a forward pass (cpu/conv_dnnl.h: no Winograd). */
VCC_CPU_FN void conv_backward_data_role(VccRt *rt, VccConvDesc *d, const float *dy, const float *w, float *dx,
                                        void *ws, size_t ws_bytes, int forward_role)
{
    VccConvGeo g;
    float *col;
    int64_t n, gi, pc, p0;
    (void)rt;
    (void)forward_role;
    vcc_conv_geo(d, &g);
    col = vcc_conv_ws(d, &g, ws, ws_bytes, &pc);
#ifdef VCC_CONV_DNNL
    if (vcc_dnnl_conv(rt, d, VCC_DNNL_BWD_DATA | (forward_role ? VCC_DNNL_FORWARD_ROLE : 0), dy, w, NULL, dx, ws,
                      ws_bytes))
        return;
#endif
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
                continue;
            }
            for (p0 = 0; p0 < g.OUT; p0 += pc) {
                const int64_t m = g.OUT - p0 < pc ? g.OUT - p0 : pc;
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)(g.Cg * g.KK), (int)m, (int)g.Kg,
                            1.0f, wg, (int)(g.Cg * g.KK), dyg + p0, (int)g.OUT, 0.0f, col, (int)m);
                vcc_col2im(&g, col, p0, m, dxg);
            }
        }
    }
}

/* VCC_CONV_FILTER_CHUNK_BYTES: the most bytes of im2col columns one weight-gradient sgemm reads
 * (conv_backward_filter), however large the workspace. Its sgemm reads each chunk once, right after
 * im2col wrote it, so a chunk that stays in cache runs faster than one of the whole workspace
 * (bench/README.md, "weight-gradient chunks"). A chunk is at least one column. */
#ifndef VCC_CONV_FILTER_CHUNK_BYTES
#define VCC_CONV_FILTER_CHUNK_BYTES ((size_t)4 << 20)
#endif

/* vcc_conv_filter_sgemm: one weight-gradient product, row-major,
 *   dw_g (Kg, R) = beta * dw_g + dy_g (Kg, m; row stride ldy) * col^T (col: (R, m), row stride ldc),
 * R = Cg * KK. Under VCC_CONV_DNNL through oneDNN's dnnl_sgemm: on AVX2 it took r3d_18's 1-thread
 * trainer to 0.956 of the time with OpenBLAS here (timed alone it is faster on some of these shapes and
 * slower on others; bench/README.md, "weight-gradient chunks"); OpenBLAS otherwise. Aborts if oneDNN
 * fails. */
VCC_CPU_FN void vcc_conv_filter_sgemm(int64_t Kg, int64_t R, int64_t m, const float *dyg, int64_t ldy,
                                      const float *col, int64_t ldc, float beta, float *dwg)
{
#ifdef VCC_CONV_DNNL
    const dnnl_status_t st = dnnl_sgemm('N', 'T', Kg, R, m, 1.0f, dyg, ldy, col, ldc, beta, dwg, R);
    VCC_CPU_CHECK(st == dnnl_success, "dnnl_sgemm (%lld x %lld x %lld) failed: status %d", (long long)Kg,
                  (long long)R, (long long)m, (int)st);
#else
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)Kg, (int)R, (int)m, 1.0f, dyg, (int)ldy, col,
                (int)ldc, beta, dwg, (int)R);
#endif
}

/* conv_backward_filter: weight and bias gradients of conv_forward (ONNX Conv /
 * torch conv weight.grad, bias.grad).
 *   x (N, C, *in)   dy (N, K, *out)
 *   dw (K, C/G, *kernel), OVERWRITTEN: sum over samples and chunks of dy_g[:, chunk] * col^T
 *   db (K) or NULL, OVERWRITTEN: sum of dy over N and spatial (double accumulation)
 *   ws: the im2col buffer of vcc_conv_chunk_cols output positions (aborts when not one fits).
 * Per sample, group and chunk [p0, p0 + pc) (in that order, so the sum's order is fixed for a given
 * workspace): im2col into ws, one sgemm accumulating into dw_g (beta 0 for the first). pc is the
 * workspace's chunk, at most VCC_CONV_FILTER_CHUNK_BYTES of columns (and at least one column). */
VCC_CPU_FN void conv_backward_filter(VccRt *rt, VccConvDesc *d, const float *x, const float *dy, float *dw,
                                        float *db, void *ws, size_t ws_bytes)
{
    VccConvGeo g;
    float *col;
    int64_t n, gi, pc, p0, cap;
    (void)rt;
    vcc_conv_geo(d, &g);
    col = vcc_conv_ws(d, &g, ws, ws_bytes, &pc);
#ifdef VCC_CONV_DNNL
    if (d->N > 0 && g.OUT > 0 && vcc_dnnl_conv(rt, d, VCC_DNNL_BWD_WEIGHTS, x, dy, NULL, dw, ws, ws_bytes)) {
        if (db) vcc_conv_bias_backward(d->N, d->K, g.OUT, dy, db);
        return;
    }
#endif
    cap = vcc_conv_chunk_cols(&g, VCC_CONV_FILTER_CHUNK_BYTES);
    if (cap < 1) cap = 1;
    if (cap < pc) pc = cap;
    if (d->N == 0 || g.OUT == 0) memset(dw, 0, (size_t)(d->K * g.Cg * g.KK) * sizeof(float));
    for (n = 0; n < d->N; n++) {
        for (gi = 0; gi < d->G; gi++) {
            const float *xg = x + (n * d->C + gi * g.Cg) * g.IN;
            const float *dyg = dy + (n * d->K + gi * g.Kg) * g.OUT;
            float *dwg = dw + gi * g.Kg * g.Cg * g.KK;
            if (g.pointwise) {
                vcc_conv_filter_sgemm(g.Kg, g.Cg, g.OUT, dyg, g.OUT, xg, g.OUT, n == 0 ? 0.0f : 1.0f, dwg);
                continue;
            }
            for (p0 = 0; p0 < g.OUT; p0 += pc) {
                const int64_t m = g.OUT - p0 < pc ? g.OUT - p0 : pc;
                vcc_im2col(&g, xg, p0, m, col);
                vcc_conv_filter_sgemm(g.Kg, g.Cg * g.KK, m, dyg + p0, g.OUT, col, m,
                                      n == 0 && p0 == 0 ? 0.0f : 1.0f, dwg);
            }
        }
    }
    if (db) vcc_conv_bias_backward(d->N, d->K, g.OUT, dy, db);
}

/* conv_transpose_forward: ONNX ConvTranspose / PyTorch F.conv_transpose{1,2,3}d, the adjoint of the
 * convolution d (same strides, dilations, groups, begin pads) plus a bias:
 *   x (N, K, *out)   w (K, C/G, *kernel)   b (C) or NULL   y (N, C, *in), OVERWRITTEN
 * (d's output plays the transposed conv's input: ONNX's X (N, C_in, ...) is d's (N, K, *out), ONNX's
 * W (C_in, C_out/group, k...) is d's (K, C/G, *kernel), ONNX's Y d's (N, C, *in)).
 *   ws: as conv_backward_data's.
 * y = conv_backward_data(x), then y[n, c, :] += b[c]. */
VCC_CPU_FN void conv_transpose_forward(VccRt *rt, VccConvDesc *d, const float *x, const float *w, const float *b,
                                       float *y, void *ws, size_t ws_bytes)
{
    int64_t S = 1, nc;
    int i;
    conv_backward_data_role(rt, d, x, w, y, ws, ws_bytes, 1);
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
 *   ws: as conv_backward_filter's. */
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
