/*
 * cpu/matmul.h - the matmul family's CPU kernels: Gemm, GemmGrad, MatMul and MatMulT.
 * Signatures: proto/matmul.h; MatMul's batch geometry: elem/matmul.h. Part of the C target's runtime (cpu/base.h).
 */
#ifndef VCC_CPU_MATMUL_H
#define VCC_CPU_MATMUL_H

#include "base.h"
#include "../elem/matmul.h"

#define VCC_KERNEL VCC_KERNEL_DECLARE
#include "../proto/matmul.h"
#undef VCC_KERNEL

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

/* matmul_forward: ONNX MatMul (numpy matmul) and its transposed forms, one sgemm per batch matrix
 * (elem/matmul.h: d's batch dims, strides and transposes; a batch folded into M by the compiler is one
 * sgemm). A and B as d says, Y (batch..., M, N) OVERWRITTEN. */
VCC_CPU_FN void matmul_forward(VccRt *rt, const VccMatmul *d, const float *A, const float *B, float *Y)
{
    int64_t nb = d->batch.n, i, oa, ob;
    (void)rt;
    VCC_CPU_CHECK(d->M <= INT_MAX && d->N <= INT_MAX && d->K <= INT_MAX, "matmul: dimension exceeds the BLAS int range");
    if (d->M <= 0 || d->N <= 0 || nb <= 0) return;
    if (d->K <= 0) {
        memset(Y, 0, (size_t)(nb * d->M * d->N) * sizeof(float));
        return;
    }
    for (i = 0; i < nb; i++) {
        vcc_bcast_index(&d->batch, i, &oa, &ob);
        cblas_sgemm(CblasRowMajor, d->ta ? CblasTrans : CblasNoTrans, d->tb ? CblasTrans : CblasNoTrans, (int)d->M,
                    (int)d->N, (int)d->K, 1.0f, A + oa, d->ta ? (int)d->M : (int)d->K, B + ob,
                    d->tb ? (int)d->K : (int)d->N, 0.0f, Y + i * d->M * d->N, (int)d->N);
    }
}

#define VCC_KERNEL VCC_KERNEL_CHECK
#include "../proto/matmul.h"
#undef VCC_KERNEL

#endif /* VCC_CPU_MATMUL_H */
