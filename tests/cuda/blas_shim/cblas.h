/*
 * cblas.h - the one CBLAS routine the CPU runtime calls (cblas_sgemm), for
 * building the CUDA numeric test's CPU reference on a machine without
 * OpenBLAS (e.g. a GPU box with only the CUDA toolkit). Enum values are the
 * CBLAS standard's. Implemented plainly in mini_cblas.c (double accumulation).
 */
#ifndef VCC_TEST_MINI_CBLAS_H
#define VCC_TEST_MINI_CBLAS_H

#ifdef __cplusplus
extern "C" {
#endif

enum CBLAS_ORDER { CblasRowMajor = 101, CblasColMajor = 102 };
enum CBLAS_TRANSPOSE { CblasNoTrans = 111, CblasTrans = 112, CblasConjTrans = 113 };

void cblas_sgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE transA, enum CBLAS_TRANSPOSE transB, int M, int N,
                 int K, float alpha, const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc);

#ifdef __cplusplus
}
#endif

#endif /* VCC_TEST_MINI_CBLAS_H */
