/*
 * proto/matmul.h - the matmul family's kernels (Gemm, GemmGrad; MatMul and MatMulT): the one signature list both
 * targets define (cpu/matmul.h, cuda/matmul.cuh). Included twice by each: before the definitions with
 * VCC_KERNEL = VCC_KERNEL_DECLARE, after them with VCC_KERNEL = VCC_KERNEL_CHECK, so a definition whose
 * signature drifts from this list is a compile error on both targets (runtime/cpu/base.h,
 * runtime/cuda/base.cuh). No include guard, on purpose.
 */
VCC_KERNEL(void, gemm_forward, (VccRt *rt, int transA, int transB, int64_t M, int64_t N, int64_t K, float alpha, const float *A, const float *B, float beta, const float *C, int64_t c_rows, int64_t c_cols, float *Y))
VCC_KERNEL(void, gemm_backward, (VccRt *rt, int transA, int transB, int64_t M, int64_t N, int64_t K, float alpha, float beta, const float *A, const float *B, const float *dY, float *dA, float *dB, float *dC, int64_t c_rows, int64_t c_cols))
VCC_KERNEL(void, matmul_forward, (VccRt *rt, const VccMatmul *d, const float *A, const float *B, float *Y))
