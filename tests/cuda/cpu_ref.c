/*
 * cpu_ref.c - the CPU runtime behind vccref_* names (see cpu_ref.h). Built
 * with the C compiler and OpenBLAS; the runtime headers are included in the
 * order a generated C trainer inlines them.
 */
#include "vcc_elem.h"
#include "vcc_io.h"
#include "vcc_cpu.h"
#include "cpu_ref.h"

#include <stdio.h>
#include <stdlib.h>

/* The workspace the plan would reserve: one sample's, one group's im2col. */
static void *ref_ws(const VccConvDesc *d, size_t *bytes)
{
    void *p;
    *bytes = (size_t)vcc_conv_col_elems(d) * sizeof(float);
    p = malloc(*bytes ? *bytes : 1);
    if (!p) {
        fprintf(stderr, "cpu_ref: out of memory\n");
        exit(1);
    }
    return p;
}

void vccref_conv_forward(const VccConvDesc *d, const float *x, const float *w, const float *b, float *y)
{
    VccRt rt;
    VccConvDesc c = *d;
    size_t n;
    void *ws = ref_ws(d, &n);
    c.backend = NULL;
    vcc_rt_init(&rt);
    conv_forward(&rt, &c, x, w, b, y, ws, n);
    vcc_rt_destroy(&rt);
    free(ws);
}

void vccref_conv_backward_data(const VccConvDesc *d, const float *dy, const float *w, float *dx)
{
    VccRt rt;
    VccConvDesc c = *d;
    size_t n;
    void *ws = ref_ws(d, &n);
    c.backend = NULL;
    vcc_rt_init(&rt);
    conv_backward_data(&rt, &c, dy, w, dx, ws, n);
    vcc_rt_destroy(&rt);
    free(ws);
}

void vccref_conv_backward_filter(const VccConvDesc *d, const float *x, const float *dy, float *dw, float *db)
{
    VccRt rt;
    VccConvDesc c = *d;
    size_t n;
    void *ws = ref_ws(d, &n);
    c.backend = NULL;
    vcc_rt_init(&rt);
    conv_backward_filter(&rt, &c, x, dy, dw, db, ws, n);
    vcc_rt_destroy(&rt);
    free(ws);
}

void vccref_batchnorm_forward_train(int64_t N, int64_t C, int64_t S, const float *x, const float *gamma,
                                    const float *beta, float *running_mean, float *running_var, float momentum,
                                    float eps, int unbiased, float *y, float *save_mean, float *save_invstd)
{
    VccRt rt;
    vcc_rt_init(&rt);
    batchnorm_forward_train(&rt, N, C, S, x, gamma, beta, running_mean, running_var, momentum, eps, unbiased, y,
                            save_mean, save_invstd);
    vcc_rt_destroy(&rt);
}

void vccref_batchnorm_forward_infer(int64_t N, int64_t C, int64_t S, const float *x, const float *gamma,
                                    const float *beta, const float *mean, const float *var, float eps, float *y)
{
    VccRt rt;
    vcc_rt_init(&rt);
    batchnorm_forward_infer(&rt, N, C, S, x, gamma, beta, mean, var, eps, y);
    vcc_rt_destroy(&rt);
}

void vccref_batchnorm_backward(int64_t N, int64_t C, int64_t S, const float *x, const float *dy, const float *gamma,
                               const float *save_mean, const float *save_invstd, float *dx, float *dgamma,
                               float *dbeta)
{
    VccRt rt;
    vcc_rt_init(&rt);
    batchnorm_backward(&rt, N, C, S, x, dy, gamma, save_mean, save_invstd, dx, dgamma, dbeta);
    vcc_rt_destroy(&rt);
}

void vccref_relu_forward(int64_t n, const float *x, float *y)
{
    VccRt rt;
    vcc_rt_init(&rt);
    relu_forward(&rt, n, x, y);
    vcc_rt_destroy(&rt);
}

void vccref_relu_backward(int64_t n, const float *y, const float *dy, float *dx)
{
    VccRt rt;
    vcc_rt_init(&rt);
    relu_backward(&rt, n, y, dy, dx);
    vcc_rt_destroy(&rt);
}

void vccref_add_forward(int64_t n, const float *a, const float *b, float *y)
{
    VccRt rt;
    vcc_rt_init(&rt);
    add_forward(&rt, n, a, b, y);
    vcc_rt_destroy(&rt);
}

void vccref_copy_forward(int64_t n, const float *x, float *y)
{
    VccRt rt;
    vcc_rt_init(&rt);
    copy_forward(&rt, n, x, y);
    vcc_rt_destroy(&rt);
}

void vccref_fill_forward(int64_t n, float value, float *y)
{
    VccRt rt;
    vcc_rt_init(&rt);
    fill_forward(&rt, n, value, y);
    vcc_rt_destroy(&rt);
}

void vccref_global_avgpool_forward(int64_t NC, int64_t S, const float *x, float *y)
{
    VccRt rt;
    vcc_rt_init(&rt);
    global_avgpool_forward(&rt, NC, S, x, y);
    vcc_rt_destroy(&rt);
}

void vccref_global_avgpool_backward(int64_t NC, int64_t S, const float *dy, float *dx)
{
    VccRt rt;
    vcc_rt_init(&rt);
    global_avgpool_backward(&rt, NC, S, dy, dx);
    vcc_rt_destroy(&rt);
}

void vccref_gemm_forward(int transA, int transB, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                         const float *B, float beta, const float *C, int64_t c_rows, int64_t c_cols, float *Y)
{
    VccRt rt;
    vcc_rt_init(&rt);
    gemm_forward(&rt, transA, transB, M, N, K, alpha, A, B, beta, C, c_rows, c_cols, Y);
    vcc_rt_destroy(&rt);
}

void vccref_gemm_backward(int transA, int transB, int64_t M, int64_t N, int64_t K, float alpha, float beta,
                          const float *A, const float *B, const float *dY, float *dA, float *dB, float *dC,
                          int64_t c_rows, int64_t c_cols)
{
    VccRt rt;
    vcc_rt_init(&rt);
    gemm_backward(&rt, transA, transB, M, N, K, alpha, beta, A, B, dY, dA, dB, dC, c_rows, c_cols);
    vcc_rt_destroy(&rt);
}

void vccref_softmax_xent_forward(int64_t N, int64_t K, const float *logits, const int64_t *labels, float *loss,
                                 float *prob)
{
    VccRt rt;
    vcc_rt_init(&rt);
    softmax_xent_forward(&rt, N, K, logits, labels, loss, prob);
    vcc_rt_destroy(&rt);
}

void vccref_softmax_xent_backward(int64_t N, int64_t K, const float *prob, const int64_t *labels,
                                  const float *dloss, float *dlogits)
{
    VccRt rt;
    vcc_rt_init(&rt);
    softmax_xent_backward(&rt, N, K, prob, labels, dloss, dlogits);
    vcc_rt_destroy(&rt);
}

void vccref_sgd_update(int64_t n, float *p, const float *g, float *v, float lr, float momentum, float wd)
{
    VccRt rt;
    vcc_rt_init(&rt);
    sgd_update(&rt, n, p, g, v, NULL, lr, momentum, wd);
    vcc_rt_destroy(&rt);
}

/* The transformer kernels: fused attention (with its dropout at step 1, seed 7), AdamW, Gather and the
 * random draws, on the CPU runtime. */
void vccref_attention_forward(const VccAttnDesc *d, const float *q, const float *k, const float *v, const float *bias,
                              float *o, float *lse)
{
    VccRt rt;
    vcc_rt_init(&rt);
    rt.seed = 7;
    rt.step = 1;
    attention_forward(&rt, d, q, k, v, bias, o, lse);
    vcc_rt_destroy(&rt);
}

void vccref_attention_backward(const VccAttnDesc *d, const float *q, const float *k, const float *v, const float *bias,
                               const float *o, const float *lse, const float *dout, float *dq, float *dk, float *dv,
                               float *delta)
{
    VccRt rt;
    vcc_rt_init(&rt);
    rt.seed = 7;
    rt.step = 1;
    attention_backward(&rt, d, q, k, v, bias, o, lse, dout, dq, dk, dv, delta);
    vcc_rt_destroy(&rt);
}

void vccref_adamw_update(int64_t n, float *p, const float *g, float *m, float *v, VccAdamwCoef c)
{
    VccRt rt;
    vcc_rt_init(&rt);
    adamw_update(&rt, n, p, g, m, v, NULL, c);
    vcc_rt_destroy(&rt);
}

void vccref_gather(int64_t outer, int64_t len, int64_t inner, int64_t nidx, const int64_t *idx, const float *x, float *y,
                   const float *dy, float *dx)
{
    VccRt rt;
    vcc_rt_init(&rt);
    gather_forward(&rt, outer, len, inner, nidx, idx, x, y);
    gather_backward(&rt, outer, len, inner, nidx, idx, dy, dx);
    vcc_rt_destroy(&rt);
}

void vccref_random_like(int64_t n, const VccRandomDesc *d, float *y)
{
    VccRt rt;
    vcc_rt_init(&rt);
    rt.seed = 7;
    rt.step = 1;
    random_like_forward(&rt, n, d, y);
    vcc_rt_destroy(&rt);
}
