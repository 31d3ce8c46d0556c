/*
 * cuda/matmul.cuh - the matmul family's CUDA kernels: Gemm, GemmGrad, MatMul and MatMulT.
 * Signatures: proto/matmul.h; MatMul's batch geometry: elem/matmul.h. Part of the CUDA target's runtime (cuda/base.cuh).
 * Every product is a cuBLAS SGEMM in the handle's math mode, set once by vcc_rt_init: plain FP32, or TF32
 * tensor cores under VCC_PRECISION_TF32 (vcc --precision tf32).
 */
#ifndef VCC_CUDA_MATMUL_CUH
#define VCC_CUDA_MATMUL_CUH

#include "base.cuh"
#include "../elem/matmul.h"

#define VCC_KERNEL VCC_KERNEL_DECLARE
#include "../proto/matmul.h"
#undef VCC_KERNEL

/* Row-major X (m, n) = alpha * op(P) (m, k) * op(Q) (k, n) + beta * X, with
 * P, Q, X row-major of leading dimensions ldp, ldq, ldx. cuBLAS is
 * column-major, where a row-major matrix reads as its transpose, so this is
 * X^T (n, m) = op(Q)^T op(P)^T: cuBLAS gets (Q, P) in that order. */
static inline void vcc__sgemm_rm(VccRt *rt, int tp, int tq, int64_t m, int64_t n, int64_t k, float alpha,
                                 const float *P, int64_t ldp, const float *Q, int64_t ldq, float beta, float *X,
                                 int64_t ldx)
{
    if (m <= 0 || n <= 0) return;
    VCC_CUBLAS_CHECK(cublasSgemm(rt->cublas, tq ? CUBLAS_OP_T : CUBLAS_OP_N, tp ? CUBLAS_OP_T : CUBLAS_OP_N,
                                 vcc__int(n, "gemm dim"), vcc__int(m, "gemm dim"), vcc__int(k, "gemm dim"), &alpha,
                                 Q, vcc__int(ldq, "gemm ld"), P, vcc__int(ldp, "gemm ld"), &beta, X,
                                 vcc__int(ldx, "gemm ld")));
}

/* The cuBLAS data type of a product's output of element type T: float, or __nv_bfloat16. */
static inline cudaDataType_t vcc__cublas_type(const float *) { return CUDA_R_32F; }
static inline cudaDataType_t vcc__cublas_type(const __nv_bfloat16 *) { return CUDA_R_16BF; }

/* The row-major product of vcc__sgemm_rm on bfloat16 P and Q (vcc --precision bf16), into X of bfloat16
 * (rounded once) or float32 (a backward MatMul whose output is a float32 value's gradient): cublasGemmEx
 * with float32 accumulation (CUBLAS_COMPUTE_32F), tensor cores where cuBLAS picks them. */
template <class TX>
static inline void vcc__sgemm_rm(VccRt *rt, int tp, int tq, int64_t m, int64_t n, int64_t k, float alpha,
                                 const __nv_bfloat16 *P, int64_t ldp, const __nv_bfloat16 *Q, int64_t ldq, float beta,
                                 TX *X, int64_t ldx)
{
    if (m <= 0 || n <= 0) return;
    VCC_CUBLAS_CHECK(cublasGemmEx(rt->cublas, tq ? CUBLAS_OP_T : CUBLAS_OP_N, tp ? CUBLAS_OP_T : CUBLAS_OP_N,
                                  vcc__int(n, "gemm dim"), vcc__int(m, "gemm dim"), vcc__int(k, "gemm dim"), &alpha,
                                  Q, CUDA_R_16BF, vcc__int(ldq, "gemm ld"), P, CUDA_R_16BF, vcc__int(ldp, "gemm ld"),
                                  &beta, X, vcc__cublas_type(X), vcc__int(ldx, "gemm ld"), CUBLAS_COMPUTE_32F,
                                  CUBLAS_GEMM_DEFAULT));
}

/* Y (M, N) = beta * C broadcast from (c_rows, c_cols) */
template <class T>
static __global__ void gemm_bias_forward_kernel(int64_t M, int64_t N, float beta, const T *C, int64_t c_rows,
                                                int64_t c_cols, T *Y)
{
    VCC_GRID_STRIDE(i, M * N) {
        int64_t r = i / N, c = i - r * N;
        vcc_st(Y, i, beta * vcc_ld(C, (c_rows == 1 ? 0 : r) * c_cols + (c_cols == 1 ? 0 : c)));
    }
}

/* dC (c_rows, c_cols) = beta * dY (M, N) summed over the broadcast axes */
template <class T>
static __global__ void gemm_bias_backward_kernel(int64_t M, int64_t N, float beta, const T *dY,
                                                 int64_t c_rows, int64_t c_cols, T *dC)
{
    VCC_GRID_STRIDE(i, c_rows * c_cols) {
        int64_t r = i / c_cols, c = i - r * c_cols;
        int64_t r0 = c_rows == 1 ? 0 : r, r1 = c_rows == 1 ? M : r + 1;
        int64_t c0 = c_cols == 1 ? 0 : c, c1 = c_cols == 1 ? N : c + 1;
        double acc = 0.0;
        for (int64_t a = r0; a < r1; a++)
            for (int64_t b = c0; b < c1; b++) acc += (double)vcc_ld(dY, a * N + b);
        vcc_st(dC, i, (float)((double)beta * acc));
    }
}

/* gemm_forward: ONNX Gemm, Y (M, N) = alpha * op(A) (M, K) * op(B) (K, N) + beta * C,
 * C (c_rows, c_cols) broadcast (c_rows 1 or M, c_cols 1 or N) or NULL.
 * A is stored (M, K), or (K, M) when transA; B (K, N), or (N, K) when transB. Every tensor float, or every
 * one bfloat16 (vcc --precision bf16: autocast's linear, float32 accumulation). */
template <class T>
static inline void gemm_forward(VccRt *rt, int transA, int transB, int64_t M, int64_t N, int64_t K, float alpha,
                                const T *A, const typename VccSame<T>::type *B, float beta,
                                const typename VccSame<T>::type *C, int64_t c_rows, int64_t c_cols,
                                typename VccSame<T>::type *Y)
{
    int64_t lda = transA ? M : K, ldb = transB ? K : N;
    float bb = 0.0f;
    if (M <= 0 || N <= 0) return;
    if (C && beta != 0.0f) {
        if (!(c_rows == 1 || c_rows == M) || !(c_cols == 1 || c_cols == N)) {
            fprintf(stderr, "%s: internal error: gemm: C (%lld, %lld) does not broadcast to (%lld, %lld)\n", vcc_program, (long long)c_rows,
                    (long long)c_cols, (long long)M, (long long)N);
            exit(1);
        }
        gemm_bias_forward_kernel<<<vcc__grid(M * N), VCC_CUDA_THREADS>>>(M, N, beta, C, c_rows, c_cols, Y);
        VCC_CUDA_LAUNCHED();
        bb = 1.0f;
    }
    if (K <= 0) { /* no product: Y = beta * C, or 0 */
        if (bb == 0.0f) fill_forward(rt, M * N, 0.0f, Y);
        return;
    }
    vcc__sgemm_rm(rt, transA, transB, M, N, K, alpha, A, lda, B, ldb, bb, Y, N);
}

/* gemm_backward: gradients of gemm_forward given dY (M, N); dA shaped as A,
 * dB as B, dC (c_rows, c_cols); each NULL to skip; all overwritten.
 *   d op(A) = alpha dY op(B)^T     d op(B) = alpha op(A)^T dY
 * Every tensor float, or every one bfloat16, as gemm_forward's. */
template <class T>
static inline void gemm_backward(VccRt *rt, int transA, int transB, int64_t M, int64_t N, int64_t K, float alpha,
                                 float beta, const typename VccSame<T>::type *A, const typename VccSame<T>::type *B,
                                 const T *dY, typename VccSame<T>::type *dA, typename VccSame<T>::type *dB,
                                 typename VccSame<T>::type *dC, int64_t c_rows, int64_t c_cols)
{
    int64_t lda = transA ? M : K, ldb = transB ? K : N;
    if (M < 0 || N < 0 || K < 0) return;
    if (dA && M * K > 0) {
        if (N == 0) fill_forward(rt, M * K, 0.0f, dA);
        else if (!transA) /* dA (M, K) = alpha dY (M, N) op(B)^T (N, K) */
            vcc__sgemm_rm(rt, 0, !transB, M, K, N, alpha, dY, N, B, ldb, 0.0f, dA, K);
        else /* dA (K, M) = alpha op(B) (K, N) dY^T (N, M) */
            vcc__sgemm_rm(rt, transB, 1, K, M, N, alpha, B, ldb, dY, N, 0.0f, dA, M);
    }
    if (dB && K * N > 0) {
        if (M == 0) fill_forward(rt, K * N, 0.0f, dB);
        else if (!transB) /* dB (K, N) = alpha op(A)^T (K, M) dY (M, N) */
            vcc__sgemm_rm(rt, !transA, 0, K, N, M, alpha, A, lda, dY, N, 0.0f, dB, N);
        else /* dB (N, K) = alpha dY^T (N, M) op(A) (M, K) */
            vcc__sgemm_rm(rt, 1, transA, N, K, M, alpha, dY, N, A, lda, 0.0f, dB, K);
    }
    if (dC && c_rows * c_cols > 0) {
        if (!(c_rows == 1 || c_rows == M) || !(c_cols == 1 || c_cols == N)) {
            fprintf(stderr, "%s: internal error: gemm: C (%lld, %lld) does not broadcast to (%lld, %lld)\n", vcc_program, (long long)c_rows,
                    (long long)c_cols, (long long)M, (long long)N);
            exit(1);
        }
        gemm_bias_backward_kernel<<<vcc__grid(c_rows * c_cols), VCC_CUDA_THREADS>>>(M, N, beta, dY, c_rows, c_cols,
                                                                                    dC);
        VCC_CUDA_LAUNCHED();
    }
}

/* One cublasSgemmStridedBatched in matmul_forward's terms (cuBLAS's column-major operands: Q = B first). */
static inline void vcc__gemm_batched(VccRt *rt, const VccMatmul *d, const float *Q, long long sq, const float *P,
                                     long long sp, float *X, long long sx, int count)
{
    const float one = 1.0f, zero = 0.0f;
    VCC_CUBLAS_CHECK(cublasSgemmStridedBatched(
        rt->cublas, d->tb ? CUBLAS_OP_T : CUBLAS_OP_N, d->ta ? CUBLAS_OP_T : CUBLAS_OP_N,
        vcc__int(d->N, "matmul dim"), vcc__int(d->M, "matmul dim"), vcc__int(d->K, "matmul dim"), &one, Q,
        vcc__int(d->tb ? d->K : d->N, "matmul ld"), sq, P, vcc__int(d->ta ? d->M : d->K, "matmul ld"), sp, &zero, X,
        vcc__int(d->N, "matmul ld"), sx, count));
}

/* The same on bfloat16 operands (vcc --precision bf16: autocast's matmul) into a bfloat16 or float32 X:
 * cublasGemmStridedBatchedEx with float32 accumulation (CUBLAS_COMPUTE_32F). */
template <class TX>
static inline void vcc__gemm_batched(VccRt *rt, const VccMatmul *d, const __nv_bfloat16 *Q, long long sq,
                                     const __nv_bfloat16 *P, long long sp, TX *X, long long sx, int count)
{
    const float one = 1.0f, zero = 0.0f;
    VCC_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        rt->cublas, d->tb ? CUBLAS_OP_T : CUBLAS_OP_N, d->ta ? CUBLAS_OP_T : CUBLAS_OP_N,
        vcc__int(d->N, "matmul dim"), vcc__int(d->M, "matmul dim"), vcc__int(d->K, "matmul dim"), &one, Q,
        CUDA_R_16BF, vcc__int(d->tb ? d->K : d->N, "matmul ld"), sq, P, CUDA_R_16BF,
        vcc__int(d->ta ? d->M : d->K, "matmul ld"), sp, &zero, X, vcc__cublas_type(X), vcc__int(d->N, "matmul ld"), sx,
        count,
        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

/* matmul_forward: ONNX MatMul (numpy matmul) and its transposed forms (elem/matmul.h: d's batch dims,
 * strides and transposes). The last batch dim is one strided-batched cuBLAS call (its strides, 0 for
 * a broadcast operand, are the calls' strides); the dims before it, where a broadcast pattern has more
 * than one dim, loop on the host. Row-major through the operand swap of vcc__sgemm_rm: Y^T = op(B)^T
 * op(A)^T in cuBLAS's column-major terms. Y (batch..., M, N) overwritten; TF32 off (cuda/base.cuh). A, B
 * and Y all float, or A and B bfloat16 (vcc --precision bf16) and Y bfloat16 or float32. */
template <class T, class TY>
static inline void matmul_forward(VccRt *rt, const VccMatmul *d, const T *A, const typename VccSame<T>::type *B,
                                  TY *Y)
{
    int64_t nb = d->batch.n, outer, inner, i, oa, ob, mn = d->M * d->N;
    const int last = d->batch.rank - 1;
    if (d->M <= 0 || d->N <= 0 || nb <= 0) return;
    if (d->K <= 0) {
        fill_forward(rt, nb * mn, 0.0f, Y);
        return;
    }
    if (d->batch.rank == 0) {
        vcc__sgemm_rm(rt, d->ta, d->tb, d->M, d->N, d->K, 1.0f, A, d->ta ? d->M : d->K, B, d->tb ? d->K : d->N,
                      0.0f, Y, d->N);
        return;
    }
    inner = d->batch.dims[last];
    outer = nb / inner;
    for (i = 0; i < outer; i++) {
        vcc_bcast_index(&d->batch, i * inner, &oa, &ob);
        vcc__gemm_batched(rt, d, B + ob, (long long)d->batch.sb[last], A + oa, (long long)d->batch.sa[last],
                          Y + i * inner * mn, (long long)mn, vcc__int(inner, "matmul batch"));
    }
}

#define VCC_KERNEL VCC_KERNEL_CHECK
#include "../proto/matmul.h"
#undef VCC_KERNEL

#endif /* VCC_CUDA_MATMUL_CUH */
