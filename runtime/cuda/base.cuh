/*
 * cuda/base.cuh - the CUDA target's runtime base (cuDNN 9 + cuBLAS): checks, handles, the arena,
 * transfers, launch helpers, the memory kernels every family uses, and the signature machinery of the
 * op families. Each family's kernels are in cuda/<family>.cuh, with the same functions, arguments and
 * semantics as the CPU runtime (cpu/<family>.h; one signature list, proto/<family>.h), every tensor
 * pointer a device pointer into the one arena. The generated program inlines elem/base.h and
 * vcc_io.h before this file and the families its schedule uses after it; the hand-made kernels call
 * the elem/<family>.h bodies, so both targets share one arithmetic.
 *
 * Shape legend:
 *   N  batch            C  input channels     K  output channels (filters)
 *   T  time (frames)    H  height             W  width
 *   G  groups           S  prod(spatial dims) = T*H*W for 3-D tensors
 *   M  rows of op(A)    NC rows of a (N*C, S) view
 * Layout is row-major N, C, spatial (NCDHW for 3-D).
 *
 * Errors: this is trainer code, not library code. Every CUDA / cuDNN / cuBLAS
 * return is checked; a failure prints one line `<program>: <library> error:
 * <error string> (file:line: <call>)` and exits with status 1. No device (or
 * no driver) is not an internal failure: vcc_rt_init says so in one sentence. Kernel launches are checked with cudaGetLastError;
 * asynchronous faults surface at the next synchronizing call (vcc_rt_sync,
 * vcc_download, vcc_read_scalar).
 *
 * Memory: vcc_arena_alloc is the one cudaMalloc. Convolution workspaces are
 * the (ws, ws_bytes) regions the plan reserved inside the arena; the cuDNN
 * algorithm for each direction is chosen at the direction's first call
 * (cuda/conv.cuh): by default the fastest that cuDNN's timed search
 * (cudnnFindConvolution*AlgorithmEx, run on that call's own tensors and
 * workspace) finds with the allowed math and fitting in ws_bytes; with
 * rt->conv_search VCC_CONV_SEARCH_HEURISTIC the first one cuDNN's heuristics
 * rank that does; else the zero-workspace algorithm. The handles' own internal
 * scratch (cuBLAS) is theirs.
 *
 * Numerics: VCC_PRECISION_TF32 (vcc --precision, defined by the generated
 * program; 0 when absent) fixes the library math at compile time.
 *   0 (fp32): cuDNN convolutions use CUDNN_FMA_MATH and cuBLAS CUBLAS_DEFAULT_MATH
 *     (no TF32 tensor-core rounding), so results match the float32 CPU target up
 *     to summation order.
 *   1 (tf32): cuDNN convolutions may run tensor-op algorithms (the descriptor's
 *     math CUDNN_DEFAULT_MATH, then the math type cuDNN reports for the chosen
 *     algorithm; never CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION, which may convert
 *     float32 operands to half) and cuBLAS uses CUBLAS_TF32_TENSOR_OP_MATH: the
 *     products round their inputs to TF32 (10-bit mantissa), as PyTorch's
 *     default for cuDNN convolutions (torch.backends.cudnn.allow_tf32 = True).
 *     Tensors and hand-made kernels stay float32 either way.
 * Reductions (batch-norm statistics, bias gradients,
 * pooling, the loss mean) accumulate in double with a fixed-order tree, so
 * they are run-to-run deterministic.
 *
 * State: VccRt holds the handles, the list of per-convolution caches
 * (VccConvDesc.backend), how convolution algorithms are chosen (conv_search) and the position of
 * dropout's draws (seed, step); nothing else is mutable.
 */
#ifndef VCC_CUDA_BASE_CUH
#define VCC_CUDA_BASE_CUH
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <math.h>

#include <cuda_runtime.h>
#include <cudnn.h>
#include <cublas_v2.h>
#include <type_traits>
#include <cuda_bf16.h>

#include "../elem/base.h"

/* VCC_PRECISION_TF32: 1 lets cuDNN convolutions and cuBLAS products use TF32 tensor cores (vcc --precision
 * tf32), 0 keeps them plain FP32 (the default). The generated program defines it before this file. */
#ifndef VCC_PRECISION_TF32
#define VCC_PRECISION_TF32 0
#endif
/* VCC_RT_CUDA: this runtime is the CUDA target's (vcc_main.h adds the CUDA trainer's options). */
#define VCC_RT_CUDA 1
/* VCC_PRECISION_NAME: the vcc --precision the program was compiled with, for --help. */
#if defined(VCC_PRECISION_BF16) && VCC_PRECISION_BF16
#define VCC_PRECISION_NAME "bf16"
#elif VCC_PRECISION_TF32
#define VCC_PRECISION_NAME "tf32"
#else
#define VCC_PRECISION_NAME "fp32"
#endif

#ifndef VCC_PROGRAM
#define VCC_PROGRAM "train_cuda" /* the generated file defines it as the binary's name */
#endif
/* vcc_program: the first word of every error line the program prints: VCC_PROGRAM until main() sets
 * it to the basename of argv[0] (vcc_set_program in vcc_state.h). */
static const char *vcc_program VCC_UNUSED = VCC_PROGRAM;

/* vcc__api_fail: report a failed CUDA, cuDNN or cuBLAS call and exit 1, as one line:
 * "<program>: <library> error: <library's message> (<file>:<line>: <call>)". */
static inline void vcc__api_fail(const char *lib, const char *msg, const char *file, int line, const char *call)
{
    fprintf(stderr, "%s: %s error: %s (%s:%d: %s)\n", vcc_program, lib, msg, file, line, call);
    exit(1);
}

#define VCC_CUDA_CHECK(call)                                                    \
    do {                                                                        \
        cudaError_t vcc_e_ = (call);                                            \
        if (vcc_e_ != cudaSuccess)                                              \
            vcc__api_fail("CUDA", cudaGetErrorString(vcc_e_), __FILE__,         \
                          __LINE__, #call);                                     \
    } while (0)

#define VCC_CUDNN_CHECK(call)                                                   \
    do {                                                                        \
        cudnnStatus_t vcc_s_ = (call);                                          \
        if (vcc_s_ != CUDNN_STATUS_SUCCESS)                                     \
            vcc__api_fail("cuDNN", cudnnGetErrorString(vcc_s_), __FILE__,       \
                          __LINE__, #call);                                     \
    } while (0)

#define VCC_CUBLAS_CHECK(call)                                                  \
    do {                                                                        \
        cublasStatus_t vcc_b_ = (call);                                         \
        if (vcc_b_ != CUBLAS_STATUS_SUCCESS)                                    \
            vcc__api_fail("cuBLAS", cublasGetStatusString(vcc_b_), __FILE__,    \
                          __LINE__, #call);                                     \
    } while (0)

/* After every kernel launch: a bad configuration is reported here. */
#define VCC_CUDA_LAUNCHED() VCC_CUDA_CHECK(cudaGetLastError())

/* Threads per block of every hand-made kernel (a power of two: the block
 * reductions halve it). */
#define VCC_CUDA_THREADS 256

/* The kernel signature lists (proto/<family>.h) are read twice around each family's definitions, as on
 * the CPU target: VCC_KERNEL_DECLARE before them declares nothing here, because a kernel whose tensors
 * may hold bfloat16 (vcc --precision bf16) is a function template over its tensors' element types (float,
 * __nv_bfloat16), and a plain declaration beside it would be the overload every float32 call picks;
 * VCC_KERNEL_CHECK after them takes the address of the listed signature, which compiles only when a
 * definition (or a template's instantiation) has exactly that type. */
#define VCC_KERNEL_DECLARE(ret, name, params)
#define VCC_KERNEL_CHECK(ret, name, params)                                                       \
    static_assert(std::is_same<decltype(static_cast<ret(*) params>(&name)), ret(*) params>::value, \
                  #name ": the CUDA definition differs from its runtime/proto signature");

/* VccSame<T>::type is T in a context that deduces nothing: a kernel template's optional tensors (NULL when
 * absent, from which no type can be deduced) take the type of the tensor they go with. */
template <class T> struct VccSame { typedef T type; };

/* Whether a kernel's element types are ones vcc stores: float, or __nv_bfloat16 for bfloat16 values. */
template <class T> struct VccStored {
    static const bool value = std::is_same<T, float>::value || std::is_same<T, __nv_bfloat16>::value;
};
/* Grid cap of the grid-stride loops. */
#define VCC_CUDA_MAX_BLOCKS 65535

/* VccCudnnConv: the cuDNN side of one VccConvDesc (its .backend). cuDNN sees
 * a 1-D convolution as 2-D with a trailing extent-1 axis (it wants >= 4-D
 * tensors). Algorithms are chosen per direction on first use, against that
 * call's ws_bytes. */
typedef struct VccCudnnConv {
    VccConvDesc *owner;                     /* the descriptor pointing here */
    struct VccCudnnConv *next;              /* VccRt list, freed by vcc_rt_destroy */
    cudnnTensorDescriptor_t x, y;           /* (N, C, *in), (N, K, *out) */
    cudnnFilterDescriptor_t w;              /* (K, C/G, *kernel) */
    cudnnConvolutionDescriptor_t conv;
    cudnnMathType_t math;                   /* the math type conv holds now (shared by the three directions) */
    int have_fwd, have_bwd_data, have_bwd_filter;
    cudnnConvolutionFwdAlgo_t fwd_algo;
    cudnnConvolutionBwdDataAlgo_t bwd_data_algo;
    cudnnConvolutionBwdFilterAlgo_t bwd_filter_algo;
    size_t fwd_ws, bwd_data_ws, bwd_filter_ws;  /* bytes the chosen algorithm needs */
    cudnnMathType_t fwd_math, bwd_data_math, bwd_filter_math; /* the math type each chosen algorithm runs
                                                                 with (always CUDNN_FMA_MATH in fp32) */
    cudnnDataType_t dtype;                  /* x, w, y: CUDNN_DATA_FLOAT, or CUDNN_DATA_BFLOAT16 (--precision
                                               bf16; float32 accumulation either way) */
    /* cuDNN's graph API (cuda/conv.cuh, vcc__conv_graph_*), per direction (forward, backward data, backward
     * filter): the execution plan chosen (a cudnnBackendDescriptor_t), the workspace bytes it needs,
     * 0 (not tried yet), 1 (gplan runs this direction) or -1 (no plan of the graph API fits: the legacy
     * calls above run it), and the pointer alignment the plan assumes */
    cudnnBackendDescriptor_t gplan[3];
    size_t gws[3];
    int gstate[3];
    int64_t galign[3];                      /* the byte alignment gplan was made for (every pointer's, <= 16) */
} VccCudnnConv;

/* How a convolution direction's cuDNN algorithm is chosen at its first call (VccRt.conv_search; the CUDA
 * trainer's --cudnn-search): TIME (0, the default) times the candidates with cudnnFind*AlgorithmEx where
 * that is safe (cuda/conv.cuh), HEURISTIC takes cudnnGet*Algorithm_v7's ranking without running anything. */
enum { VCC_CONV_SEARCH_TIME = 0, VCC_CONV_SEARCH_HEURISTIC = 1 };

/* Which cuDNN API runs the convolutions (VccRt.conv_api; cuda/conv.cuh). GRAPH tries the graph API's engines
 * first and falls back to the legacy calls per direction; LEGACY runs only the legacy calls; AUTO (the
 * default) is GRAPH for float32 tensors and LEGACY for bfloat16 ones, as measured on an H200 (cuDNN 9.14,
 * r3d_18 at (8, 3, 16, 112, 112), planned workspaces at the default --workspace-limit): fp32 steps 104 ms
 * on the graph API against 148 ms legacy, tf32 102 against 188, bf16 548 against 360 (its strided
 * backward-data convolutions find only slow engines within those workspaces). VCC_CUDNN_API=graph or
 * =legacy in the environment forces one. */
enum { VCC_CONV_API_AUTO = 0, VCC_CONV_API_GRAPH = 1, VCC_CONV_API_LEGACY = 2 };

typedef struct VccRt {
    cudnnHandle_t cudnn;
    cublasHandle_t cublas;
    VccCudnnConv *convs;                    /* every backend created, for destroy */
    int conv_search;                        /* VCC_CONV_SEARCH_TIME (vcc_rt_init's) or _HEURISTIC, set by main() */
    int conv_api;                           /* VCC_CONV_API_AUTO, _GRAPH or _LEGACY (vcc_rt_init, from VCC_CUDNN_API) */
    uint64_t seed, step;                    /* dropout's draws (elem/dropout.h): the run's --seed and the
                                               training step being computed, set by main() */
} VccRt;

#define VCC_KERNEL VCC_KERNEL_DECLARE
#include "../proto/base.h"
#undef VCC_KERNEL

static inline unsigned vcc__grid(int64_t n)
{
    int64_t b = (n + VCC_CUDA_THREADS - 1) / VCC_CUDA_THREADS;
    if (b > VCC_CUDA_MAX_BLOCKS) b = VCC_CUDA_MAX_BLOCKS;
    if (b < 1) b = 1;
    return (unsigned)b;
}

static inline unsigned vcc__blocks(int64_t rows)
{
    if (rows > VCC_CUDA_MAX_BLOCKS) rows = VCC_CUDA_MAX_BLOCKS;
    if (rows < 1) rows = 1;
    return (unsigned)rows;
}

/* Fail with a clear message when a size does not fit the int an API takes. */
static inline int vcc__int(int64_t v, const char *what)
{
    if (v < 0 || v > INT_MAX) {
        fprintf(stderr, "%s: %s = %lld does not fit a 32-bit int (cuDNN/cuBLAS limit)\n",
                vcc_program, what, (long long)v);
        exit(1);
    }
    return (int)v;
}

/* Fixed-order tree sum over the block; sh holds VCC_CUDA_THREADS doubles.
 * Every thread of the block must call it; every thread gets the sum. */
static __device__ __forceinline__ double vcc__block_sum(double v, double *sh)
{
    unsigned t = threadIdx.x;
    unsigned s;
    sh[t] = v;
    __syncthreads();
    for (s = VCC_CUDA_THREADS / 2; s > 0; s >>= 1) {
        if (t < s) sh[t] += sh[t + s];
        __syncthreads();
    }
    v = sh[0];
    __syncthreads();
    return v;
}

#define VCC_GRID_STRIDE(i, n)                                                        \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);          \
         i += (int64_t)blockDim.x * gridDim.x)

/* vcc_arena_alloc: the trainer's one device allocation; 256-byte aligned
 * (cudaMalloc's guarantee), zeroed. NULL on failure. */
static inline void *vcc_arena_alloc(VccRt *rt, size_t bytes)
{
    void *p = NULL;
    (void)rt;
    if (bytes == 0) bytes = 256;
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
        (void)cudaGetLastError(); /* reset the error state for later checks */
        return NULL;
    }
    if (cudaMemset(p, 0, bytes) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) {
        (void)cudaGetLastError();
        (void)cudaFree(p);
        return NULL;
    }
    return p;
}

static inline void vcc_arena_free(VccRt *rt, void *p)
{
    (void)rt;
    if (p) VCC_CUDA_CHECK(cudaFree(p));
}

/* host -> arena */
static inline void vcc_upload(VccRt *rt, void *dst, const void *src, size_t bytes)
{
    (void)rt;
    if (bytes) VCC_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
}

/* arena -> host (waits for the kernels before it on the default stream) */
static inline void vcc_download(VccRt *rt, void *dst, const void *src, size_t bytes)
{
    (void)rt;
    if (bytes) VCC_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}

/* vcc_rt_init: the handles on the current device (on the per-thread default stream when compiled with
 * nvcc --default-stream per-thread), cuBLAS in the math mode of VCC_PRECISION_TF32,
 * conv_search VCC_CONV_SEARCH_TIME, and conv_api VCC_CONV_API_AUTO (_GRAPH or _LEGACY when the
 * environment variable VCC_CUDNN_API is "graph" or "legacy"). No device, or no driver, is one sentence on stderr,
 * "<program>: no CUDA device found (cudaGetDeviceCount: <reason>)", and exit status 1; a failed handle
 * call exits 1 with the library's message. */
static inline void vcc_rt_init(VccRt *rt)
{
    int ndev = 0;
    memset(rt, 0, sizeof *rt);
    cudaError_t e = cudaGetDeviceCount(&ndev);
    if (e != cudaSuccess || ndev < 1) {
        if (e != cudaSuccess)
            fprintf(stderr, "%s: no CUDA device found (cudaGetDeviceCount: %s)\n", vcc_program, cudaGetErrorString(e));
        else
            fprintf(stderr, "%s: no CUDA device found (cudaGetDeviceCount reports 0 devices)\n", vcc_program);
        exit(1);
    }
    VCC_CUDA_CHECK(cudaFree(0)); /* create the context now, not inside a kernel's timing */
    VCC_CUDNN_CHECK(cudnnCreate(&rt->cudnn));
    VCC_CUBLAS_CHECK(cublasCreate(&rt->cublas));
#if VCC_PRECISION_TF32
    /* vcc --precision tf32: TF32 tensor cores in every SGEMM (cuBLAS docs, cublasSetMathMode) */
    VCC_CUBLAS_CHECK(cublasSetMathMode(rt->cublas, CUBLAS_TF32_TENSOR_OP_MATH));
#else
    /* Plain FP32 FMA math: no TF32 tensor cores, so numbers match the CPU. */
    VCC_CUBLAS_CHECK(cublasSetMathMode(rt->cublas, CUBLAS_DEFAULT_MATH));
#endif
    rt->conv_search = VCC_CONV_SEARCH_TIME;
    {
        const char *api = getenv("VCC_CUDNN_API");
        rt->conv_api = !api                       ? VCC_CONV_API_AUTO
                       : strcmp(api, "legacy") == 0 ? VCC_CONV_API_LEGACY
                       : strcmp(api, "graph") == 0  ? VCC_CONV_API_GRAPH
                                                    : VCC_CONV_API_AUTO;
    }
    VCC_CUBLAS_CHECK(cublasSetPointerMode(rt->cublas, CUBLAS_POINTER_MODE_HOST));
#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
    /* nvcc --default-stream per-thread (vcc's printed command): the kernels run on this thread's default
     * stream, and the libraries' calls join them there, so one stream holds the whole step in order and
     * can be captured as a CUDA graph (the trainer's --cuda-graph) */
    VCC_CUDNN_CHECK(cudnnSetStream(rt->cudnn, cudaStreamPerThread));
    VCC_CUBLAS_CHECK(cublasSetStream(rt->cublas, cudaStreamPerThread));
#endif
}

static inline void vcc_rt_sync(VccRt *rt)
{
    (void)rt;
    VCC_CUDA_CHECK(cudaGetLastError());
    VCC_CUDA_CHECK(cudaDeviceSynchronize());
}

/* Destroys the handles and every convolution cache; the VccConvDesc that
 * owned a cache gets backend = NULL again. */
static inline void vcc_rt_destroy(VccRt *rt)
{
    VccCudnnConv *b = rt->convs, *next;
    VCC_CUDA_CHECK(cudaDeviceSynchronize());
    for (; b; b = next) {
        next = b->next;
        VCC_CUDNN_CHECK(cudnnDestroyTensorDescriptor(b->x));
        VCC_CUDNN_CHECK(cudnnDestroyTensorDescriptor(b->y));
        VCC_CUDNN_CHECK(cudnnDestroyFilterDescriptor(b->w));
        VCC_CUDNN_CHECK(cudnnDestroyConvolutionDescriptor(b->conv));
        for (int dir = 0; dir < 3; dir++)
            if (b->gplan[dir]) (void)cudnnBackendDestroyDescriptor(b->gplan[dir]);
        if (b->owner && b->owner->backend == (void *)b) b->owner->backend = NULL;
        free(b);
    }
    rt->convs = NULL;
    if (rt->cublas) VCC_CUBLAS_CHECK(cublasDestroy(rt->cublas));
    if (rt->cudnn) VCC_CUDNN_CHECK(cudnnDestroy(rt->cudnn));
    rt->cublas = NULL;
    rt->cudnn = NULL;
}

/* vcc_read_scalar: one float from the arena (synchronizes). */
static inline float vcc_read_scalar(VccRt *rt, const float *p)
{
    float v = 0.0f;
    (void)rt;
    VCC_CUDA_CHECK(cudaMemcpy(&v, p, sizeof v, cudaMemcpyDeviceToHost));
    return v;
}

template <class TX, class TY> static __global__ void copy_forward_kernel(int64_t n, const TX *x, TY *y)
{
    VCC_GRID_STRIDE(i, n) vcc_st(y, i, vcc_ld(x, i));
}

/* Overlapping x and y (memmove, one element type): one block walks the range in steps of
 * blockDim elements, away from the side it writes, reading a whole step
 * before writing it. */
template <class T> static __global__ void copy_forward_overlap_kernel(int64_t n, const T *x, T *y)
{
    const int64_t step = blockDim.x;
    const int64_t nsteps = (n + step - 1) / step;
    for (int64_t k = 0; k < nsteps; k++) {
        const int64_t base = y < x ? k * step : (nsteps - 1 - k) * step;
        const int64_t i = base + threadIdx.x;
        T v = T();
        if (i < n) v = x[i];
        __syncthreads();
        if (i < n) y[i] = v;
        __syncthreads();
    }
}

template <class TX, class TY> static __global__ void bf16_round_forward_kernel(int64_t n, const TX *x, TY *y)
{
    VCC_GRID_STRIDE(i, n) vcc_st(y, i, vcc_bf16_round(vcc_ld(x, i)));
}

/* y = x rounded to bfloat16 values (y may == x): in float32 storage (the C trainer's CastBF16), or a float32
 * x narrowed into bfloat16 storage, or a bfloat16 x widened into float32 (CastBF16's gradient) */
template <class TX, class TY> static inline void bf16_round_forward(VccRt *rt, int64_t n, const TX *x, TY *y)
{
    static_assert(VccStored<TX>::value && VccStored<TY>::value, "bf16_round_forward: float or __nv_bfloat16");
    (void)rt;
    if (n <= 0) return;
    bf16_round_forward_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(n, x, y);
    VCC_CUDA_LAUNCHED();
}

template <class T> static __global__ void fill_forward_kernel(int64_t n, float value, T *y)
{
    VCC_GRID_STRIDE(i, n) vcc_st(y, i, value);
}

/* y = x, converted when their element types differ; overlapping ranges (one element type) allowed
 * (memmove) */
template <class TX, class TY> static inline void copy_forward(VccRt *rt, int64_t n, const TX *x, TY *y)
{
    static_assert(VccStored<TX>::value && VccStored<TY>::value, "copy_forward: float or __nv_bfloat16");
    (void)rt;
    if (n <= 0 || (const void *)x == (const void *)y) return;
    const char *xb = (const char *)x, *yb = (const char *)y;
    if (xb < yb + n * (int64_t)sizeof(TY) && yb < xb + n * (int64_t)sizeof(TX)) {
        if (!std::is_same<TX, TY>::value) {
            fprintf(stderr, "%s: internal error: copy_forward between overlapping float32 and bfloat16 ranges\n",
                    vcc_program);
            exit(1);
        }
        copy_forward_overlap_kernel<<<1, VCC_CUDA_THREADS>>>(n, (const TY *)(const void *)x, y);
    } else {
        copy_forward_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(n, x, y);
    }
    VCC_CUDA_LAUNCHED();
}

static __global__ void counter_increment_kernel(int64_t *count) { *count += 1; }

/* counter_increment: *count += 1 on the device (a BatchNormalization's num_batches_tracked,
 * which PyTorch counts up once per training-mode forward). */
static inline void counter_increment(VccRt *rt, int64_t *count)
{
    (void)rt;
    counter_increment_kernel<<<1, 1>>>(count);
    VCC_CUDA_LAUNCHED();
}

template <class T> static inline void fill_forward(VccRt *rt, int64_t n, float value, T *y)
{
    static_assert(VccStored<T>::value, "fill_forward: float or __nv_bfloat16");
    (void)rt;
    if (n <= 0) return;
    fill_forward_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(n, value, y);
    VCC_CUDA_LAUNCHED();
}

#define VCC_KERNEL VCC_KERNEL_CHECK
#include "../proto/base.h"
#undef VCC_KERNEL

#endif /* VCC_CUDA_BASE_CUH */
