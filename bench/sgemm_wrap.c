/*
 * sgemm_wrap.c - wall-clock accounting of cblas_sgemm calls in a vcc C trainer.
 *
 * Linked into a second build of the trainer by bench/profile_step.sh:
 *
 *     cc -O2 ... train.c bench/sgemm_wrap.c -Wl,--wrap=cblas_sgemm -o train_sgemm -lopenblas -lm
 *
 * The linker sends every cblas_sgemm call of train.c here; each call is timed (CLOCK_MONOTONIC
 * around the real call) and its flops (2*M*N*K) counted, by transpose flags. At exit one line per
 * flag pair goes to stderr:
 *
 *     sgemm <NN|NT|TN|TT> calls <n> seconds <s> gflop <g>
 *     sgemm_process_wall seconds <s>        (constructor to exit: start-up included)
 *
 * In vcc's C runtime (runtime/vcc_cpu.h) NN is conv_forward, TN conv_backward_data
 * (w^T * dy), NT conv_backward_filter (dy * col^T) and the fc Gemm's forward; the
 * fc backward calls are a few small ones of either kind.
 *
 * A --cpu-conv dnnl trainer computes its im2col weight gradients with oneDNN's dnnl_sgemm instead:
 * bench/sgemm_wrap_dnnl.c (linked too, with -Wl,--wrap=dnnl_sgemm) counts those calls here
 * (vcc_sgemm_count), as dnnl-NN .. dnnl-TT.
 */
#define _POSIX_C_SOURCE 199309L
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

void __real_cblas_sgemm(const enum CBLAS_ORDER order, const enum CBLAS_TRANSPOSE ta,
                        const enum CBLAS_TRANSPOSE tb, const blasint m, const blasint n, const blasint k,
                        const float alpha, const float *a, const blasint lda, const float *b,
                        const blasint ldb, const float beta, float *c, const blasint ldc);

static struct {
    long calls;
    double seconds, flop;
} sgemm_acct[8];
static double sgemm_t0;

static double sgemm_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void sgemm_report(void)
{
    static const char *names[8] = {"NN", "NT", "TN", "TT", "dnnl-NN", "dnnl-NT", "dnnl-TN", "dnnl-TT"};
    for (int i = 0; i < 8; i++)
        fprintf(stderr, "sgemm %s calls %ld seconds %.6f gflop %.6f\n", names[i], sgemm_acct[i].calls,
                sgemm_acct[i].seconds, sgemm_acct[i].flop * 1e-9);
    fprintf(stderr, "sgemm_process_wall seconds %.6f\n", sgemm_now() - sgemm_t0);
}

__attribute__((constructor)) static void sgemm_init(void)
{
    sgemm_t0 = sgemm_now();
    atexit(sgemm_report);
}

/* vcc_sgemm_count: account one call of kind i (0..3 cblas NN, NT, TN, TT; 4..7 dnnl_sgemm's) that took
 * seconds and did 2*m*n*k flop. */
void vcc_sgemm_count(int i, double seconds, double m, double n, double k);
void vcc_sgemm_count(int i, double seconds, double m, double n, double k)
{
    sgemm_acct[i].seconds += seconds;
    sgemm_acct[i].calls++;
    sgemm_acct[i].flop += 2.0 * m * n * k;
}

/* vcc_sgemm_now: CLOCK_MONOTONIC seconds, for the wrappers. */
double vcc_sgemm_now(void);
double vcc_sgemm_now(void) { return sgemm_now(); }

void __wrap_cblas_sgemm(const enum CBLAS_ORDER order, const enum CBLAS_TRANSPOSE ta,
                        const enum CBLAS_TRANSPOSE tb, const blasint m, const blasint n, const blasint k,
                        const float alpha, const float *a, const blasint lda, const float *b,
                        const blasint ldb, const float beta, float *c, const blasint ldc)
{
    int i = (ta != CblasNoTrans) * 2 + (tb != CblasNoTrans);
    double t = sgemm_now();
    __real_cblas_sgemm(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    vcc_sgemm_count(i, sgemm_now() - t, (double)m, (double)n, (double)k);
}
