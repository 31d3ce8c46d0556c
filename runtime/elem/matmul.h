/*
 * elem/matmul.h - the matmul family's batch geometry (ONNX MatMul with numpy broadcasting of the batch
 * dims), one descriptor for both targets: the CPU loop of sgemm calls (cpu/matmul.h) and the cuBLAS
 * strided-batched calls (cuda/matmul.cuh). The batch dims are a broadcast (elem/binary.h's VccBcast and
 * its index map) whose elements are matrices. Pure C99, no I/O, no state.
 */
#ifndef VCC_ELEM_MATMUL_H
#define VCC_ELEM_MATMUL_H

#include "base.h"
#include "binary.h"

/* VccMatmul: Y[i] (M, N) = op(A[i]) (M, K) * op(B[i]) (K, N) for every batch index i of the batch dims
 * batch.dims[0..batch.rank-1] (rank 0: one product; batch.n the number of products), Y row-major and
 * contiguous (matrix i at i * M * N). op(A) is A's matrix (M, K) row-major (lda K), or its transpose when
 * ta (stored (K, M), lda M); op(B) likewise (stored (K, N), ldb N; or (N, K), ldb K, when tb). Matrix i
 * of A starts at element sum(idx_k * batch.sa[k]), of B at sum(idx_k * batch.sb[k]) (vcc_bcast_index;
 * stride 0 along a dim the operand is broadcast over). The compiler drops size-1 batch dims, merges
 * neighbouring ones that both operands read alike, and folds a batch into M when it can (A batched and
 * contiguous, B shared, ta 0: one GEMM). */
typedef struct VccMatmul {
    int ta, tb;
    int64_t M, N, K;
    VccBcast batch;
} VccMatmul;

#endif /* VCC_ELEM_MATMUL_H */
