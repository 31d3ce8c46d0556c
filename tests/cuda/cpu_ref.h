/*
 * cpu_ref.h - the CPU runtime (runtime/vcc_cpu.h) behind vccref_* names, so
 * the CUDA numeric test can call both runtimes: vcc_cpu.h and vcc_cuda.cuh
 * define the same function names, so the CPU one lives in its own C
 * translation unit (cpu_ref.c, built with cc and OpenBLAS).
 * All pointers are host pointers; the wrappers supply the im2col workspace.
 * Include vcc_elem.h first (VccConvDesc).
 */
#ifndef VCC_TEST_CPU_REF_H
#define VCC_TEST_CPU_REF_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void vccref_conv_forward(const VccConvDesc *d, const float *x, const float *w, const float *b, float *y);
void vccref_conv_backward_data(const VccConvDesc *d, const float *dy, const float *w, float *dx);
void vccref_conv_backward_filter(const VccConvDesc *d, const float *x, const float *dy, float *dw, float *db);
void vccref_batchnorm_forward_train(int64_t N, int64_t C, int64_t S, const float *x, const float *gamma,
                                    const float *beta, float *running_mean, float *running_var, float momentum,
                                    float eps, int unbiased, float *y, float *save_mean, float *save_invstd);
void vccref_batchnorm_forward_infer(int64_t N, int64_t C, int64_t S, const float *x, const float *gamma,
                                    const float *beta, const float *mean, const float *var, float eps, float *y);
void vccref_batchnorm_backward(int64_t N, int64_t C, int64_t S, const float *x, const float *dy, const float *gamma,
                               const float *save_mean, const float *save_invstd, float *dx, float *dgamma,
                               float *dbeta);
void vccref_relu_forward(int64_t n, const float *x, float *y);
void vccref_attention_forward(const VccAttnDesc *d, const float *q, const float *k, const float *v, const float *bias,
                              float *o, float *lse);
void vccref_attention_backward(const VccAttnDesc *d, const float *q, const float *k, const float *v, const float *bias,
                               const float *o, const float *lse, const float *dout, float *dq, float *dk, float *dv,
                               float *delta);
void vccref_adamw_update(int64_t n, float *p, const float *g, float *m, float *v, VccAdamwCoef c);
void vccref_gather(int64_t outer, int64_t len, int64_t inner, int64_t nidx, const int64_t *idx, const float *x, float *y,
                   const float *dy, float *dx);
void vccref_random_like(int64_t n, const VccRandomDesc *d, float *y);
void vccref_relu_backward(int64_t n, const float *y, const float *dy, float *dx);
void vccref_add_forward(int64_t n, const float *a, const float *b, float *y);
void vccref_copy_forward(int64_t n, const float *x, float *y);
void vccref_fill_forward(int64_t n, float value, float *y);
void vccref_global_avgpool_forward(int64_t NC, int64_t S, const float *x, float *y);
void vccref_global_avgpool_backward(int64_t NC, int64_t S, const float *dy, float *dx);
void vccref_gemm_forward(int transA, int transB, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                         const float *B, float beta, const float *C, int64_t c_rows, int64_t c_cols, float *Y);
void vccref_gemm_backward(int transA, int transB, int64_t M, int64_t N, int64_t K, float alpha, float beta,
                          const float *A, const float *B, const float *dY, float *dA, float *dB, float *dC,
                          int64_t c_rows, int64_t c_cols);
void vccref_softmax_xent_forward(int64_t N, int64_t K, const float *logits, const int64_t *labels, float *loss,
                                 float *prob);
void vccref_softmax_xent_backward(int64_t N, int64_t K, const float *prob, const int64_t *labels,
                                  const float *dloss, float *dlogits);
void vccref_sgd_update(int64_t n, float *p, const float *g, float *v, float lr, float momentum, float wd);

#ifdef __cplusplus
}
#endif

#endif /* VCC_TEST_CPU_REF_H */
