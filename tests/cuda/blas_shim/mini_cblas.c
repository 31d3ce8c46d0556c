/*
 * mini_cblas.c - cblas_sgemm for the CUDA numeric test's CPU reference when
 * OpenBLAS is absent: C = alpha * op(A) * op(B) + beta * C, row- or
 * column-major, dot products accumulated in double. beta == 0 does not read C.
 */
#include "cblas.h"

#include <stddef.h>

void cblas_sgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE transA, enum CBLAS_TRANSPOSE transB, int M, int N,
                 int K, float alpha, const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
    int i, j, l;
    /* element (r, c) of a matrix stored with leading dimension ld in this order */
#define AT(P, ld, r, c) (order == CblasRowMajor ? (P)[(size_t)(r) * (ld) + (c)] : (P)[(size_t)(c) * (ld) + (r)])
    for (i = 0; i < M; i++) {
        for (j = 0; j < N; j++) {
            double acc = 0.0;
            float r;
            for (l = 0; l < K; l++) {
                double a = transA == CblasNoTrans ? AT(A, lda, i, l) : AT(A, lda, l, i);
                double b = transB == CblasNoTrans ? AT(B, ldb, l, j) : AT(B, ldb, j, l);
                acc += a * b;
            }
            r = alpha * (float)acc;
            if (beta != 0.0f) r += beta * AT(C, ldc, i, j);
            if (order == CblasRowMajor)
                C[(size_t)i * ldc + j] = r;
            else
                C[(size_t)j * ldc + i] = r;
        }
    }
#undef AT
}
