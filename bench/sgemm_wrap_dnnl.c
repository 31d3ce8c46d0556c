/*
 * sgemm_wrap_dnnl.c - wall-clock accounting of oneDNN's dnnl_sgemm calls in a vcc C trainer built with
 * --cpu-conv dnnl (its im2col weight gradients, runtime/cpu/conv.h vcc_conv_filter_sgemm).
 *
 * Linked with bench/sgemm_wrap.c by bench/profile_step.sh when the trainer links oneDNN:
 *
 *     cc ... train.c bench/sgemm_wrap.c bench/sgemm_wrap_dnnl.c -Wl,--wrap=cblas_sgemm
 *        -Wl,--wrap=dnnl_sgemm ... -ldnnl ...
 *
 * Each call is timed around the real one and counted by transpose flags as dnnl-NN .. dnnl-TT
 * (sgemm_wrap.c's report at exit).
 */
#define _POSIX_C_SOURCE 199309L
#include <dnnl.h>

void vcc_sgemm_count(int i, double seconds, double m, double n, double k);
double vcc_sgemm_now(void);
dnnl_status_t __real_dnnl_sgemm(char transa, char transb, dnnl_dim_t M, dnnl_dim_t N, dnnl_dim_t K, float alpha,
                                const float *A, dnnl_dim_t lda, const float *B, dnnl_dim_t ldb, float beta, float *C,
                                dnnl_dim_t ldc);
dnnl_status_t __wrap_dnnl_sgemm(char transa, char transb, dnnl_dim_t M, dnnl_dim_t N, dnnl_dim_t K, float alpha,
                                const float *A, dnnl_dim_t lda, const float *B, dnnl_dim_t ldb, float beta, float *C,
                                dnnl_dim_t ldc);

dnnl_status_t __wrap_dnnl_sgemm(char transa, char transb, dnnl_dim_t M, dnnl_dim_t N, dnnl_dim_t K, float alpha,
                                const float *A, dnnl_dim_t lda, const float *B, dnnl_dim_t ldb, float beta, float *C,
                                dnnl_dim_t ldc)
{
    int i = 4 + ((transa | 0x20) == 't') * 2 + ((transb | 0x20) == 't');
    double t = vcc_sgemm_now();
    dnnl_status_t st = __real_dnnl_sgemm(transa, transb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    vcc_sgemm_count(i, vcc_sgemm_now() - t, (double)M, (double)N, (double)K);
    return st;
}
