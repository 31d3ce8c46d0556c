/*
 * vcc_cpu.h - the C target's runtime: arena, conv (im2col + OpenBLAS sgemm),
 * batch norm, ReLU, add, global average pooling, Gemm, softmax cross-entropy,
 * SGD. Inlined verbatim into generated .c trainers after vcc_elem.h and
 * vcc_io.h; link with -lopenblas -lm. Compile with -fopenmp to parallelise
 * im2col/col2im and the per-channel/elementwise loops (sgemm is threaded by
 * OpenBLAS either way); without it every loop here runs on one thread. With
 * -fopenmp and a pthreads OpenBLAS the two thread pools alternate; spinning
 * OpenMP workers then steal cores from sgemm, so link the OpenMP build of
 * OpenBLAS or run with OMP_WAIT_POLICY=passive.
 *
 * Shape legend:
 *   N  batch               C  input channels        K  output channels / classes
 *   T  time (frames)       H  height                W  width
 *   G  conv groups         S  prod(spatial) = T*H*W
 *   (in gemm_*, M, N, K are the ONNX Gemm dims: op(A) (M, K), op(B) (K, N))
 * Layout is row-major N, C, spatial (NCDHW for 3-D); all pointers are arena
 * pointers (host memory here); sizes are element counts unless named *_bytes.
 *
 * Errors: a kernel given an inconsistent descriptor or a too-small workspace
 * prints "<program>: internal error: message (file:line)" to stderr and aborts
 * (this is trainer code; the plan guarantees these never fire). Same signatures and semantics as
 * vcc_cuda.cuh, so codegen emits identical call sites for both targets.
 */
#ifndef VCC_CPU_H
#define VCC_CPU_H

/* Guarded so that the verbatim-inlined copy (vcc_elem.h text already above)
 * does not look for the file. */
#ifndef VCC_ELEM_H
#include "vcc_elem.h"
#endif

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cblas.h>
/* OpenBLAS's cblas.h pulls in <complex.h>, whose macros `I` and `complex`
 * would capture ordinary identifiers in the generated code; C99 7.3.1 allows
 * undefining them. */
#ifdef I
#undef I
#endif
#ifdef complex
#undef complex
#endif

/* Every function here is static inline and marked unused (VCC_UNUSED from
 * vcc_elem.h), so a trainer that calls only some kernels compiles warning-free. */
#define VCC_CPU_FN static inline VCC_UNUSED

#ifndef VCC_PROGRAM
#define VCC_PROGRAM "train" /* the generated file defines it as the binary's name */
#endif
/* vcc_program: the first word of every error line the program prints: VCC_PROGRAM until main() sets
 * it to the basename of argv[0] (vcc_set_program in vcc_state.h). */
static const char *vcc_program VCC_UNUSED = VCC_PROGRAM;

/* An internal invariant (never a user error): "<program>: internal error: <message> (file:line)". */
#define VCC_CPU_CHECK(cond, ...)                                              \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "%s: internal error: ", vcc_program);             \
            fprintf(stderr, __VA_ARGS__);                                     \
            fprintf(stderr, " (%s:%d)\n", __FILE__, __LINE__);                \
            abort();                                                          \
        }                                                                     \
    } while (0)

/* ======================================================================== */
/* Runtime and arena                                                        */
/* ======================================================================== */

/* VccRt: per-trainer runtime state. The CPU target needs none. */
typedef struct VccRt { int unused; } VccRt;

/* vcc_rt_init / vcc_rt_destroy / vcc_rt_sync: no-ops on the CPU (kernels are
 * synchronous); present so call sites match the CUDA target. */
VCC_CPU_FN void vcc_rt_init(VccRt *rt) { if (rt) rt->unused = 0; }
VCC_CPU_FN void vcc_rt_destroy(VccRt *rt) { (void)rt; }
VCC_CPU_FN void vcc_rt_sync(VccRt *rt) { (void)rt; }

/* vcc_arena_alloc: bytes of zeroed memory aligned to 256 bytes; NULL on
 * failure or size overflow. Free with vcc_arena_free. (calloc underneath, so
 * a large arena is zero-filled lazily by the OS.) */
VCC_CPU_FN void *vcc_arena_alloc(VccRt *rt, size_t bytes)
{
    size_t extra = 256 + sizeof(void *);
    unsigned char *raw;
    uintptr_t a;
    (void)rt;
    if (bytes > (size_t)-1 - extra) return NULL;
    raw = (unsigned char *)calloc(bytes + extra, 1);
    if (!raw) return NULL;
    a = ((uintptr_t)raw + sizeof(void *) + 255u) & ~(uintptr_t)255u;
    ((void **)a)[-1] = raw;
    return (void *)a;
}

/* vcc_arena_free: release a vcc_arena_alloc block; NULL is a no-op. */
VCC_CPU_FN void vcc_arena_free(VccRt *rt, void *p)
{
    (void)rt;
    if (p) free(((void **)p)[-1]);
}

/* vcc_upload: host -> arena copy of bytes (memcpy on the CPU). */
VCC_CPU_FN void vcc_upload(VccRt *rt, void *dst, const void *src, size_t bytes)
{
    (void)rt;
    if (bytes && dst != src) memcpy(dst, src, bytes);
}

/* vcc_download: arena -> host copy of bytes (memcpy on the CPU). */
VCC_CPU_FN void vcc_download(VccRt *rt, void *dst, const void *src, size_t bytes)
{
    (void)rt;
    if (bytes && dst != src) memcpy(dst, src, bytes);
}

/* vcc_read_scalar: the float at arena pointer p (e.g. the loss). */
VCC_CPU_FN float vcc_read_scalar(VccRt *rt, const float *p)
{
    (void)rt;
    return *p;
}

/* ======================================================================== */
/* Convolution (ONNX Conv / torch.nn.functional.conv1d/2d/3d)               */
/* ======================================================================== */

/* Internal 3-D view of a descriptor: an nsp-D conv is the 3-D conv whose
 * leading 3-nsp spatial dims have size 1, kernel 1, stride 1, pad 0. */
typedef struct {
    int64_t in[3], out[3], k[3], s[3], dl[3], pb[3];
    int64_t Cg, Kg;      /* channels and filters per group */
    int64_t IN, OUT, KK; /* prod(in), prod(out), prod(kernel) */
    int pointwise;       /* kernel 1, stride 1, no padding: col == x */
} VccConvGeo;

/* vcc_conv_geo: validate d and build its 3-D view; aborts on an inconsistent
 * descriptor (out size not the ONNX formula, channels not divisible by G). */
VCC_CPU_FN void vcc_conv_geo(const VccConvDesc *d, VccConvGeo *g)
{
    int i, j;
    VCC_CPU_CHECK(d->nsp >= 1 && d->nsp <= 3, "conv: spatial rank %d not in 1..3", d->nsp);
    VCC_CPU_CHECK(d->G >= 1 && d->C % d->G == 0 && d->K % d->G == 0,
                  "conv: C=%lld, K=%lld not divisible by groups %lld",
                  (long long)d->C, (long long)d->K, (long long)d->G);
    for (i = 0; i < 3; i++) {
        g->in[i] = g->out[i] = g->k[i] = g->s[i] = g->dl[i] = 1;
        g->pb[i] = 0;
    }
    g->pointwise = 1;
    for (i = 0; i < d->nsp; i++) {
        int64_t span, o;
        j = 3 - d->nsp + i;
        VCC_CPU_CHECK(d->kernel[i] >= 1 && d->stride[i] >= 1 && d->dilation[i] >= 1 &&
                      d->pad_begin[i] >= 0 && d->pad_end[i] >= 0,
                      "conv: bad kernel/stride/dilation/pad in dim %d", i);
        span = d->in[i] + d->pad_begin[i] + d->pad_end[i] - d->dilation[i] * (d->kernel[i] - 1) - 1;
        o = span >= 0 ? span / d->stride[i] + 1 : 0;
        VCC_CPU_CHECK(o == d->out[i] && o >= 1, "conv: out[%d]=%lld but ONNX gives %lld",
                      i, (long long)d->out[i], (long long)o);
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
    VCC_CPU_CHECK(g->Kg <= INT_MAX && g->OUT <= INT_MAX && g->Cg * g->KK <= INT_MAX,
                  "conv: GEMM dimension exceeds the BLAS int range");
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

/* vcc_sum_f64: sum of r[0..n-1] in double with four interleaved accumulators (a fixed order, so the
 * result does not depend on threads). The main loop's bound is precomputed: gcc 12 misreads the
 * `i + 4 <= n` form as overflowing when n is a constant after inlining (-Waggressive-loop-optimizations). */
VCC_CPU_FN double vcc_sum_f64(const float *r, int64_t n)
{
    double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
    const int64_t n4 = n - n % 4;
    int64_t i;
    for (i = 0; i < n4; i += 4) {
        a0 += r[i]; a1 += r[i + 1]; a2 += r[i + 2]; a3 += r[i + 3];
    }
    for (i = n4; i < n; i++) a0 += r[i];
    return (a0 + a1) + (a2 + a3);
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
    int64_t n, gi, k;
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
    if (db) {
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
        for (k = 0; k < d->K; k++) {
            double acc = 0.0;
            int64_t nn;
            for (nn = 0; nn < d->N; nn++) {
                acc += vcc_sum_f64(dy + (nn * d->K + k) * g.OUT, g.OUT);
            }
            db[k] = (float)acc;
        }
    }
}

/* ======================================================================== */
/* Batch normalization (training mode)                                      */
/* ======================================================================== */

/* batchnorm_forward_train: training-mode batch norm over (N, S) per channel,
 * as torch.nn.functional.batch_norm(training=True) / ONNX
 * BatchNormalization(training_mode=1).
 *   x, y (N, C, S) with S = T*H*W; y may == x
 *   gamma, beta, running_mean, running_var, save_mean, save_invstd (C)
 *   mean/var over m = N*S elements (sums in double, shifted by the channel's
 *   first element); y = gamma*(x-mean)*invstd + beta with invstd =
 *   1/sqrt(var_biased + eps). Running stats (ONNX momentum convention;
 *   PyTorch momentum p corresponds to ONNX momentum 1-p):
 *     running_mean = running_mean*momentum + mean*(1-momentum)
 *     running_var  = running_var*momentum + v*(1-momentum),
 *   v = var_unbiased = var*m/(m-1) (var itself when m == 1) when unbiased (PyTorch), else the biased
 *   var (the ONNX spec's ReduceVar, onnxruntime). running_* may be NULL. */
VCC_CPU_FN void batchnorm_forward_train(VccRt *rt, int64_t N, int64_t C, int64_t S, const float *x,
                                           const float *gamma, const float *beta, float *running_mean,
                                           float *running_var, float momentum, float eps, int unbiased,
                                           float *y, float *save_mean, float *save_invstd)
{
    int64_t c;
    const int64_t m = N * S;
    (void)rt;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (c = 0; c < C; c++) {
        double shift = m > 0 ? (double)x[c * S] : 0.0;
        double s1 = 0.0, s2 = 0.0, mean, var, invstd;
        float meanf, invstdf, gm = gamma[c], bt = beta[c];
        int64_t n, i;
        for (n = 0; n < N; n++) {
            const float *r = x + (n * C + c) * S;
            double a0 = 0.0, a1 = 0.0, q0 = 0.0, q1 = 0.0;
            for (i = 0; i + 2 <= S; i += 2) {
                double d0 = (double)r[i] - shift, d1 = (double)r[i + 1] - shift;
                a0 += d0; q0 += d0 * d0;
                a1 += d1; q1 += d1 * d1;
            }
            for (; i < S; i++) {
                double d0 = (double)r[i] - shift;
                a0 += d0; q0 += d0 * d0;
            }
            s1 += a0 + a1;
            s2 += q0 + q1;
        }
        if (m > 0) {
            mean = shift + s1 / (double)m;
            var = (s2 - s1 * s1 / (double)m) / (double)m;
            if (var < 0.0) var = 0.0;
        } else {
            mean = 0.0;
            var = 0.0;
        }
        invstd = 1.0 / sqrt(var + (double)eps);
        meanf = (float)mean;
        invstdf = (float)invstd;
        save_mean[c] = meanf;
        save_invstd[c] = invstdf;
        if (running_mean)
            running_mean[c] = (float)((double)running_mean[c] * (double)momentum + mean * (1.0 - (double)momentum));
        if (running_var) {
            double vu = unbiased && m > 1 ? var * (double)m / (double)(m - 1) : var;
            running_var[c] = (float)((double)running_var[c] * (double)momentum + vu * (1.0 - (double)momentum));
        }
        for (n = 0; n < N; n++) {
            const float *r = x + (n * C + c) * S;
            float *yr = y + (n * C + c) * S;
            for (i = 0; i < S; i++) yr[i] = vcc_bn_norm(r[i], meanf, invstdf, gm, bt);
        }
    }
}

/* batchnorm_forward_infer: inference-mode batch norm with given statistics, as
 * torch.nn.functional.batch_norm(training=False) / ONNX BatchNormalization
 * (training_mode=0): y = gamma*(x-mean)*invstd + beta, invstd =
 * 1/sqrt(var + eps) per channel (in double, then float).
 *   x, y (N, C, S) with S = T*H*W; y may == x; gamma, beta, mean, var (C) */
VCC_CPU_FN void batchnorm_forward_infer(VccRt *rt, int64_t N, int64_t C, int64_t S, const float *x,
                                           const float *gamma, const float *beta, const float *mean,
                                           const float *var, float eps, float *y)
{
    int64_t c;
    (void)rt;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (c = 0; c < C; c++) {
        const float invstd = vcc_bn_invstd(var[c], eps), mu = mean[c], gm = gamma[c], bt = beta[c];
        int64_t n, i;
        for (n = 0; n < N; n++) {
            const float *r = x + (n * C + c) * S;
            float *yr = y + (n * C + c) * S;
            for (i = 0; i < S; i++) yr[i] = vcc_bn_norm(r[i], mu, invstd, gm, bt);
        }
    }
}

/* batchnorm_backward: gradients of batchnorm_forward_train (batch statistics,
 * as PyTorch's training-mode batch_norm backward).
 *   x, dy, dx (N, C, S); dx OVERWRITTEN (may == dy)
 *   gamma, save_mean, save_invstd (C) from the forward
 *   dgamma (C) = sum dy*xhat, dbeta (C) = sum dy (double sums; either may be NULL)
 *   dx = vcc_bn_dx(...) = gamma*invstd*(dy - mean(dy) - xhat*mean(dy*xhat)). */
VCC_CPU_FN void batchnorm_backward(VccRt *rt, int64_t N, int64_t C, int64_t S, const float *x, const float *dy,
                                      const float *gamma, const float *save_mean, const float *save_invstd,
                                      float *dx, float *dgamma, float *dbeta)
{
    int64_t c;
    const int64_t m = N * S;
    const float inv_m = m > 0 ? (float)(1.0 / (double)m) : 0.0f;
    (void)rt;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (c = 0; c < C; c++) {
        const float mean = save_mean[c], invstd = save_invstd[c], gm = gamma[c];
        double sdy = 0.0, sdyx = 0.0;
        float sum_dy, sum_dy_xhat;
        int64_t n, i;
        for (n = 0; n < N; n++) {
            const float *xr = x + (n * C + c) * S;
            const float *gr = dy + (n * C + c) * S;
            double a0 = 0.0, a1 = 0.0, b0 = 0.0, b1 = 0.0;
            for (i = 0; i + 2 <= S; i += 2) {
                double g0 = gr[i], g1 = gr[i + 1];
                a0 += g0; b0 += g0 * ((double)xr[i] - (double)mean);
                a1 += g1; b1 += g1 * ((double)xr[i + 1] - (double)mean);
            }
            for (; i < S; i++) {
                double g0 = gr[i];
                a0 += g0; b0 += g0 * ((double)xr[i] - (double)mean);
            }
            sdy += a0 + a1;
            sdyx += b0 + b1;
        }
        sum_dy = (float)sdy;
        sum_dy_xhat = (float)(sdyx * (double)invstd);
        if (dgamma) dgamma[c] = sum_dy_xhat;
        if (dbeta) dbeta[c] = sum_dy;
        for (n = 0; n < N; n++) {
            const float *xr = x + (n * C + c) * S;
            const float *gr = dy + (n * C + c) * S;
            float *dr = dx + (n * C + c) * S;
            for (i = 0; i < S; i++)
                dr[i] = vcc_bn_dx(xr[i], gr[i], mean, invstd, gm, sum_dy, sum_dy_xhat, inv_m);
        }
    }
}

/* ======================================================================== */
/* Elementwise                                                              */
/* ======================================================================== */

/* relu_forward: y = max(x, 0) elementwise (torch.relu, ONNX Relu; NaN
 * propagates). x, y (n); y may == x. */
VCC_CPU_FN void relu_forward(VccRt *rt, int64_t n, const float *x, float *y)
{
    int64_t i;
    (void)rt;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (i = 0; i < n; i++) y[i] = vcc_relu_fwd(x[i]);
}

/* relu_backward: dx = y > 0 ? dy : 0 from the forward OUTPUT y.
 * y, dy, dx (n); dx may == dy. */
VCC_CPU_FN void relu_backward(VccRt *rt, int64_t n, const float *y, const float *dy, float *dx)
{
    int64_t i;
    (void)rt;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (i = 0; i < n; i++) dx[i] = vcc_relu_bwd(y[i], dy[i]);
}

/* add_forward: y = a + b elementwise (ONNX Add, same shape). a, b, y (n);
 * y may == a or b. */
VCC_CPU_FN void add_forward(VccRt *rt, int64_t n, const float *a, const float *b, float *y)
{
    int64_t i;
    (void)rt;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (i = 0; i < n; i++) y[i] = a[i] + b[i];
}

/* copy_forward: y = x (n elements; Identity / Reshape / Flatten copies).
 * Overlapping ranges are allowed. */
VCC_CPU_FN void copy_forward(VccRt *rt, int64_t n, const float *x, float *y)
{
    (void)rt;
    if (n > 0 && x != y) memmove(y, x, (size_t)n * sizeof(float));
}

/* counter_increment: *count += 1 (a BatchNormalization's num_batches_tracked,
 * which PyTorch counts up once per training-mode forward). */
VCC_CPU_FN void counter_increment(VccRt *rt, int64_t *count)
{
    (void)rt;
    *count += 1;
}

/* fill_forward: y[i] = value for i < n (e.g. the loss seed dloss = 1). */
VCC_CPU_FN void fill_forward(VccRt *rt, int64_t n, float value, float *y)
{
    int64_t i;
    (void)rt;
    for (i = 0; i < n; i++) y[i] = value;
}

/* sgd_update: torch.optim.SGD step (dampening 0, nesterov off) per element,
 * vcc_sgd: g += wd*p; v = momentum*v + g; p -= lr*v.
 *   p, v (n) updated in place (v zero before the first step); g (n). */
VCC_CPU_FN void sgd_update(VccRt *rt, int64_t n, float *p, const float *g, float *v, float lr, float momentum,
                              float wd)
{
    int64_t i;
    (void)rt;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (i = 0; i < n; i++) vcc_sgd(&p[i], g[i], &v[i], lr, momentum, wd);
}

/* ======================================================================== */
/* Pooling                                                                  */
/* ======================================================================== */

/* global_avgpool_forward: y[i] = mean of x[i, 0..S-1] (double sum), i.e.
 * ONNX GlobalAveragePool / torch adaptive_avg_pool3d(x, 1).
 *   x (N*C, S) with S = T*H*W   y (N*C) */
VCC_CPU_FN void global_avgpool_forward(VccRt *rt, int64_t NC, int64_t S, const float *x, float *y)
{
    int64_t i;
    (void)rt;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (i = 0; i < NC; i++) {
        y[i] = S > 0 ? (float)(vcc_sum_f64(x + i * S, S) / (double)S) : 0.0f;
    }
}

/* global_avgpool_backward: dx[i, s] = dy[i] / S (OVERWRITTEN).
 *   dy (N*C)   dx (N*C, S) */
VCC_CPU_FN void global_avgpool_backward(VccRt *rt, int64_t NC, int64_t S, const float *dy, float *dx)
{
    int64_t i;
    (void)rt;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (i = 0; i < NC; i++) {
        const float v = dy[i] / (float)S;
        float *r = dx + i * S;
        int64_t s;
        for (s = 0; s < S; s++) r[s] = v;
    }
}

/* ======================================================================== */
/* Gemm (ONNX Gemm; torch.nn.Linear is transA=0, transB=1, C = bias (1, N))  */
/* ======================================================================== */

/* gemm_forward: Y = alpha*op(A)*op(B) + beta*C (ONNX Gemm).
 *   op(A) (M, K): A stored (M, K), or (K, M) if transA
 *   op(B) (K, N): B stored (K, N), or (N, K) if transB
 *   C (c_rows, c_cols) with c_rows in {1, M}, c_cols in {1, N}, broadcast
 *   to (M, N); NULL means no C.   Y (M, N), OVERWRITTEN. */
VCC_CPU_FN void gemm_forward(VccRt *rt, int transA, int transB, int64_t M, int64_t N, int64_t K, float alpha,
                                const float *A, const float *B, float beta, const float *C, int64_t c_rows,
                                int64_t c_cols, float *Y)
{
    float bb = 0.0f;
    int64_t i, j;
    (void)rt;
    VCC_CPU_CHECK(M <= INT_MAX && N <= INT_MAX && K <= INT_MAX, "gemm: dimension exceeds the BLAS int range");
    if (M <= 0 || N <= 0) return;
    if (C && beta != 0.0f) {
        VCC_CPU_CHECK((c_rows == 1 || c_rows == M) && (c_cols == 1 || c_cols == N),
                      "gemm: C (%lld, %lld) does not broadcast to (%lld, %lld)",
                      (long long)c_rows, (long long)c_cols, (long long)M, (long long)N);
        for (i = 0; i < M; i++) {
            const float *cr = C + (c_rows == 1 ? 0 : i) * c_cols;
            float *yr = Y + i * N;
            if (c_cols == 1)
                for (j = 0; j < N; j++) yr[j] = beta * cr[0];
            else
                for (j = 0; j < N; j++) yr[j] = beta * cr[j];
        }
        bb = 1.0f;
    }
    if (K <= 0) {
        if (bb == 0.0f) memset(Y, 0, (size_t)(M * N) * sizeof(float));
        return;
    }
    cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans,
                (int)M, (int)N, (int)K, alpha, A, transA ? (int)M : (int)K, B, transB ? (int)K : (int)N,
                bb, Y, (int)N);
}

/* gemm_backward: gradients of gemm_forward given dY (M, N):
 *   dA shaped like A: d op(A) = alpha * dY * op(B)^T     (M, K), transposed if transA
 *   dB shaped like B: d op(B) = alpha * op(A)^T * dY     (K, N), transposed if transB
 *   dC (c_rows, c_cols) = beta * dY summed over broadcast dims (double sums)
 * Each output may be NULL; all are OVERWRITTEN. */
VCC_CPU_FN void gemm_backward(VccRt *rt, int transA, int transB, int64_t M, int64_t N, int64_t K, float alpha,
                                 float beta, const float *A, const float *B, const float *dY, float *dA, float *dB,
                                 float *dC, int64_t c_rows, int64_t c_cols)
{
    (void)rt;
    VCC_CPU_CHECK(M <= INT_MAX && N <= INT_MAX && K <= INT_MAX, "gemm: dimension exceeds the BLAS int range");
    if (dA && M > 0 && K > 0) {
        if (N <= 0) {
            memset(dA, 0, (size_t)(M * K) * sizeof(float));
        } else if (!transA) {
            /* dA (M, K) = alpha * dY (M, N) * op(B)^T; op(B)^T is B^T (B stored (K, N)) or B (stored (N, K)). */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, transB ? CblasNoTrans : CblasTrans, (int)M, (int)K, (int)N,
                        alpha, dY, (int)N, B, transB ? (int)K : (int)N, 0.0f, dA, (int)K);
        } else {
            /* dA (K, M) = alpha * op(B) (K, N) * dY^T (N, M). */
            cblas_sgemm(CblasRowMajor, transB ? CblasTrans : CblasNoTrans, CblasTrans, (int)K, (int)M, (int)N,
                        alpha, B, transB ? (int)K : (int)N, dY, (int)N, 0.0f, dA, (int)M);
        }
    }
    if (dB && K > 0 && N > 0) {
        if (M <= 0) {
            memset(dB, 0, (size_t)(K * N) * sizeof(float));
        } else if (!transB) {
            /* dB (K, N) = alpha * op(A)^T (K, M) * dY (M, N); op(A)^T is A^T (A stored (M, K)) or A (stored (K, M)). */
            cblas_sgemm(CblasRowMajor, transA ? CblasNoTrans : CblasTrans, CblasNoTrans, (int)K, (int)N, (int)M,
                        alpha, A, transA ? (int)M : (int)K, dY, (int)N, 0.0f, dB, (int)N);
        } else {
            /* dB (N, K) = alpha * dY^T (N, M) * op(A) (M, K). */
            cblas_sgemm(CblasRowMajor, CblasTrans, transA ? CblasTrans : CblasNoTrans, (int)N, (int)K, (int)M,
                        alpha, dY, (int)N, A, transA ? (int)M : (int)K, 0.0f, dB, (int)K);
        }
    }
    if (dC) {
        int64_t r, c, i, j;
        VCC_CPU_CHECK((c_rows == 1 || c_rows == M) && (c_cols == 1 || c_cols == N),
                      "gemm: C (%lld, %lld) does not broadcast to (%lld, %lld)",
                      (long long)c_rows, (long long)c_cols, (long long)M, (long long)N);
        for (r = 0; r < c_rows; r++) {
            for (c = 0; c < c_cols; c++) {
                const int64_t i0 = c_rows == 1 ? 0 : r, i1 = c_rows == 1 ? M : r + 1;
                const int64_t j0 = c_cols == 1 ? 0 : c, j1 = c_cols == 1 ? N : c + 1;
                double acc = 0.0;
                for (i = i0; i < i1; i++)
                    for (j = j0; j < j1; j++) acc += dY[i * N + j];
                dC[r * c_cols + c] = (float)((double)beta * acc);
            }
        }
    }
}

/* ======================================================================== */
/* Softmax cross-entropy (torch.nn.CrossEntropyLoss, reduction 'mean')      */
/* ======================================================================== */

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

#endif /* VCC_CPU_H */
