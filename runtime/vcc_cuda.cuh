/*
 * vcc_cuda.cuh - the whole CUDA target runtime: cuda/base.cuh and every op family's kernels
 * (cuda/<family>.cuh), for code that wants them all (tests, tools). Generated programs inline only the
 * families their schedule uses. Link with -lcudnn -lcublas.
 */
#ifndef VCC_CUDA_CUH
#define VCC_CUDA_CUH
#include "cuda/base.cuh"
#include "cuda/conv.cuh"
#include "cuda/norm.cuh"
#include "cuda/unary.cuh"
#include "cuda/binary.cuh"
#include "cuda/reduce.cuh"
#include "cuda/pool.cuh"
#include "cuda/pad.cuh"
#include "cuda/layout.cuh"
#include "cuda/matmul.cuh"
#include "cuda/softmax.cuh"
#include "cuda/loss.cuh"
#include "cuda/optim.cuh"
#include "cuda/dropout.cuh"
#include "cuda/attention.cuh"
#include "cuda/scatter.cuh"
#include "cuda/compare.cuh"
#endif /* VCC_CUDA_CUH */
