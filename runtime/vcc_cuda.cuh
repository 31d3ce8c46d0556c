/*
 * vcc_cuda.cuh - runtime of the CUDA target (cuDNN 9 + cuBLAS).
 *
 * Same functions, arguments and semantics as the CPU runtime vcc_cpu.h, with
 * every tensor pointer a device pointer into the one arena. The generated
 * trainer inlines vcc_elem.h and vcc_io.h before this file; the hand-made
 * kernels call the vcc_elem.h bodies, so both targets share one arithmetic.
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
 * algorithm for each direction is the first one cuDNN's heuristics rank that
 * runs without TF32 and fits in ws_bytes, else the zero-workspace algorithm.
 * The handles' own internal scratch (cuBLAS) is theirs.
 *
 * Numerics: cuDNN convolutions use CUDNN_FMA_MATH and cuBLAS CUBLAS_DEFAULT_MATH
 * (no TF32 tensor-core rounding), so results match the float32 CPU target up
 * to summation order. Reductions (batch-norm statistics, bias gradients,
 * pooling, the loss mean) accumulate in double with a fixed-order tree, so
 * they are run-to-run deterministic.
 *
 * State: VccRt holds the handles and the list of per-convolution caches
 * (VccConvDesc.backend); nothing else is mutable.
 */
#ifndef VCC_CUDA_CUH
#define VCC_CUDA_CUH

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

/* ------------------------------------------------------------------------ */
/* Checks                                                                   */
/* ------------------------------------------------------------------------ */

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
/* Grid cap of the grid-stride loops. */
#define VCC_CUDA_MAX_BLOCKS 65535

/* ------------------------------------------------------------------------ */
/* Runtime state                                                            */
/* ------------------------------------------------------------------------ */

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
    int have_fwd, have_bwd_data, have_bwd_filter;
    cudnnConvolutionFwdAlgo_t fwd_algo;
    cudnnConvolutionBwdDataAlgo_t bwd_data_algo;
    cudnnConvolutionBwdFilterAlgo_t bwd_filter_algo;
    size_t fwd_ws, bwd_data_ws, bwd_filter_ws;  /* bytes the chosen algorithm needs */
} VccCudnnConv;

typedef struct VccRt {
    cudnnHandle_t cudnn;
    cublasHandle_t cublas;
    VccCudnnConv *convs;                    /* every backend created, for destroy */
} VccRt;

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

/* ------------------------------------------------------------------------ */
/* Arena, transfers, lifetime                                               */
/* ------------------------------------------------------------------------ */

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

/* vcc_rt_init: the handles on the current device. No device, or no driver, is one sentence on stderr,
 * "<program>: no CUDA device found (cudaGetDeviceCount: <reason>)", and exit status 1. */
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
    /* Plain FP32 FMA math: no TF32 tensor cores, so numbers match the CPU. */
    VCC_CUBLAS_CHECK(cublasSetMathMode(rt->cublas, CUBLAS_DEFAULT_MATH));
    VCC_CUBLAS_CHECK(cublasSetPointerMode(rt->cublas, CUBLAS_POINTER_MODE_HOST));
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

/* ------------------------------------------------------------------------ */
/* Convolution (cuDNN)                                                      */
/* ------------------------------------------------------------------------ */

static inline void vcc__conv_fail(const VccConvDesc *d, const char *what)
{
    fprintf(stderr,
            "%s: conv (N=%lld C=%lld K=%lld G=%lld nsp=%d in=%lldx%lldx%lld "
            "kernel=%lldx%lldx%lld): %s\n",
            vcc_program, (long long)d->N, (long long)d->C, (long long)d->K, (long long)d->G, d->nsp,
            (long long)d->in[0], (long long)(d->nsp > 1 ? d->in[1] : 1),
            (long long)(d->nsp > 2 ? d->in[2] : 1), (long long)d->kernel[0],
            (long long)(d->nsp > 1 ? d->kernel[1] : 1),
            (long long)(d->nsp > 2 ? d->kernel[2] : 1), what);
    exit(1);
}

/* vcc__conv_backend: the cuDNN descriptors of d, created on first use. */
static inline VccCudnnConv *vcc__conv_backend(VccRt *rt, VccConvDesc *d)
{
    VccCudnnConv *b;
    int nd, i, xdim[5], xstr[5], ydim[5], ystr[5], wdim[5], odim[5];
    int pad[3], str[3], dil[3];
    int64_t xs = 1, ys = 1, span;

    if (d->backend) return (VccCudnnConv *)d->backend;
    if (d->nsp < 1 || d->nsp > 3) vcc__conv_fail(d, "spatial rank must be 1..3");
    if (d->N < 1 || d->C < 1 || d->K < 1 || d->G < 1 || d->C % d->G || d->K % d->G)
        vcc__conv_fail(d, "bad N/C/K/G (groups must divide C and K)");
    for (i = 0; i < d->nsp; i++) {
        if (d->pad_begin[i] != d->pad_end[i])
            vcc__conv_fail(d, "asymmetric padding unsupported on CUDA");
        if (d->in[i] < 1 || d->out[i] < 1 || d->kernel[i] < 1 || d->stride[i] < 1 ||
            d->dilation[i] < 1 || d->pad_begin[i] < 0)
            vcc__conv_fail(d, "bad spatial size, kernel, stride, dilation or padding");
        span = d->in[i] + d->pad_begin[i] + d->pad_end[i] - d->dilation[i] * (d->kernel[i] - 1) - 1;
        if (span < 0 || d->out[i] != span / d->stride[i] + 1)
            vcc__conv_fail(d, "output size disagrees with the ONNX Conv formula");
    }

    /* cuDNN rank: spatial dims, a 1-D conv gets a trailing extent-1 axis */
    nd = d->nsp == 1 ? 2 : d->nsp;
    xdim[0] = ydim[0] = vcc__int(d->N, "conv N");
    xdim[1] = vcc__int(d->C, "conv C");
    ydim[1] = vcc__int(d->K, "conv K");
    wdim[0] = ydim[1];
    wdim[1] = vcc__int(d->C / d->G, "conv C/G");
    for (i = 0; i < nd; i++) {
        int sp = i < d->nsp;
        xdim[2 + i] = sp ? vcc__int(d->in[i], "conv input extent") : 1;
        ydim[2 + i] = sp ? vcc__int(d->out[i], "conv output extent") : 1;
        wdim[2 + i] = sp ? vcc__int(d->kernel[i], "conv kernel extent") : 1;
        pad[i] = sp ? vcc__int(d->pad_begin[i], "conv padding") : 0;
        str[i] = sp ? vcc__int(d->stride[i], "conv stride") : 1;
        dil[i] = sp ? vcc__int(d->dilation[i], "conv dilation") : 1;
    }
    /* packed row-major strides; cuDNN strides are int, so the whole tensor must fit */
    for (i = nd + 1; i >= 0; i--) {
        xstr[i] = vcc__int(xs, "conv input stride");
        ystr[i] = vcc__int(ys, "conv output stride");
        xs *= xdim[i];
        ys *= ydim[i];
    }
    (void)vcc__int(xs, "conv input elements");
    (void)vcc__int(ys, "conv output elements");

    b = (VccCudnnConv *)calloc(1, sizeof *b);
    if (!b) vcc__conv_fail(d, "out of host memory");
    VCC_CUDNN_CHECK(cudnnCreateTensorDescriptor(&b->x));
    VCC_CUDNN_CHECK(cudnnCreateTensorDescriptor(&b->y));
    VCC_CUDNN_CHECK(cudnnCreateFilterDescriptor(&b->w));
    VCC_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&b->conv));
    VCC_CUDNN_CHECK(cudnnSetTensorNdDescriptor(b->x, CUDNN_DATA_FLOAT, nd + 2, xdim, xstr));
    VCC_CUDNN_CHECK(cudnnSetTensorNdDescriptor(b->y, CUDNN_DATA_FLOAT, nd + 2, ydim, ystr));
    VCC_CUDNN_CHECK(cudnnSetFilterNdDescriptor(b->w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, nd + 2, wdim));
    VCC_CUDNN_CHECK(cudnnSetConvolutionNdDescriptor(b->conv, nd, pad, str, dil,
                                                    CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    VCC_CUDNN_CHECK(cudnnSetConvolutionGroupCount(b->conv, vcc__int(d->G, "conv groups")));
    VCC_CUDNN_CHECK(cudnnSetConvolutionMathType(b->conv, CUDNN_FMA_MATH));

    /* cuDNN's idea of the output shape must be the plan's */
    VCC_CUDNN_CHECK(cudnnGetConvolutionNdForwardOutputDim(b->conv, b->x, b->w, nd + 2, odim));
    for (i = 0; i < nd + 2; i++)
        if (odim[i] != ydim[i]) {
            VCC_CUDNN_CHECK(cudnnDestroyTensorDescriptor(b->x));
            VCC_CUDNN_CHECK(cudnnDestroyTensorDescriptor(b->y));
            VCC_CUDNN_CHECK(cudnnDestroyFilterDescriptor(b->w));
            VCC_CUDNN_CHECK(cudnnDestroyConvolutionDescriptor(b->conv));
            free(b);
            vcc__conv_fail(d, "cuDNN computes a different output shape than the plan");
        }

    b->owner = d;
    b->next = rt->convs;
    rt->convs = b;
    d->backend = b;
    return b;
}

/* Only plain FP32 kernels: never an algorithm whose math is tensor-op (TF32). */
static inline int vcc__fp32_math(cudnnMathType_t m)
{
    return m == CUDNN_FMA_MATH || m == CUDNN_DEFAULT_MATH;
}

static inline void vcc__conv_no_algo(const VccConvDesc *d, const char *dir, size_t ws_bytes, cudnnStatus_t fb_st,
                                     size_t fb_need)
{
    char msg[300];
    if (fb_st != CUDNN_STATUS_SUCCESS)
        snprintf(msg, sizeof msg, "%s: no cuDNN algorithm runs in the planned workspace of %zu bytes "
                 "(the zero-workspace fallback: %s)", dir, ws_bytes, cudnnGetErrorString(fb_st));
    else
        snprintf(msg, sizeof msg, "%s: no cuDNN algorithm runs in the planned workspace of %zu bytes "
                 "(the zero-workspace fallback needs %zu)", dir, ws_bytes, fb_need);
    vcc__conv_fail(d, msg);
}

/* Algorithm choice for one direction, against the workspace the plan reserved:
 *   1. the first of cudnnGetConvolution*Algorithm_v7's ranking whose status is
 *      success, whose math is plain FP32 (not tensor-op / TF32) and whose
 *      workspace (re-queried) is <= ws_bytes;
 *   2. else the zero-workspace algorithm (IMPLICIT_GEMM / BWD_DATA_ALGO_0 /
 *      BWD_FILTER_ALGO_0), else any algorithm cuDNN accepts within ws_bytes;
 *   3. else exit with a message naming the convolution. */
static inline void vcc__conv_pick_fwd(VccRt *rt, const VccConvDesc *d, VccCudnnConv *b, size_t ws_bytes)
{
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    cudnnStatus_t st, fb_st = CUDNN_STATUS_SUCCESS;
    size_t need = 0, fb_need = 0;
    int n = 0, i;
    memset(perf, 0, sizeof perf);
    /* 1. cuDNN's heuristic ranking: the first plain-FP32 algorithm that fits
     *    (the query failing is not fatal: step 2 still finds one) */
    if (cudnnGetConvolutionForwardAlgorithm_v7(rt->cudnn, b->x, b->w, b->conv, b->y,
            CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf) != CUDNN_STATUS_SUCCESS)
        n = 0;
    for (i = 0; i < n && i < CUDNN_CONVOLUTION_FWD_ALGO_COUNT; i++) {
        if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > ws_bytes ||
            !vcc__fp32_math(perf[i].mathType))
            continue;
        st = cudnnGetConvolutionForwardWorkspaceSize(rt->cudnn, b->x, b->w, b->conv, b->y, perf[i].algo, &need);
        if (st == CUDNN_STATUS_SUCCESS && need <= ws_bytes) {
            b->fwd_algo = perf[i].algo;
            b->fwd_ws = need;
            b->have_fwd = 1;
            return;
        }
    }
    /* 2. IMPLICIT_GEMM (no workspace), then any algorithm cuDNN accepts that fits */
    for (i = -1; i < CUDNN_CONVOLUTION_FWD_ALGO_COUNT; i++) {
        cudnnConvolutionFwdAlgo_t a = i < 0 ? CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM : (cudnnConvolutionFwdAlgo_t)i;
        need = 0;
        st = cudnnGetConvolutionForwardWorkspaceSize(rt->cudnn, b->x, b->w, b->conv, b->y, a, &need);
        if (i < 0) {
            fb_st = st;
            fb_need = need;
        }
        if (st == CUDNN_STATUS_SUCCESS && need <= ws_bytes) {
            b->fwd_algo = a;
            b->fwd_ws = need;
            b->have_fwd = 1;
            return;
        }
    }
    vcc__conv_no_algo(d, "forward", ws_bytes, fb_st, fb_need);
}

static inline void vcc__conv_pick_bwd_data(VccRt *rt, const VccConvDesc *d, VccCudnnConv *b, size_t ws_bytes)
{
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    cudnnStatus_t st, fb_st = CUDNN_STATUS_SUCCESS;
    size_t need = 0, fb_need = 0;
    int n = 0, i;
    memset(perf, 0, sizeof perf);
    /* 1. cuDNN's heuristic ranking: the first plain-FP32 algorithm that fits
     *    (the query failing is not fatal: step 2 still finds one) */
    if (cudnnGetConvolutionBackwardDataAlgorithm_v7(rt->cudnn, b->w, b->y, b->conv, b->x,
            CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, perf) != CUDNN_STATUS_SUCCESS)
        n = 0;
    for (i = 0; i < n && i < CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT; i++) {
        if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > ws_bytes ||
            !vcc__fp32_math(perf[i].mathType))
            continue;
        st = cudnnGetConvolutionBackwardDataWorkspaceSize(rt->cudnn, b->w, b->y, b->conv, b->x, perf[i].algo, &need);
        if (st == CUDNN_STATUS_SUCCESS && need <= ws_bytes) {
            b->bwd_data_algo = perf[i].algo;
            b->bwd_data_ws = need;
            b->have_bwd_data = 1;
            return;
        }
    }
    /* 2. BWD_DATA_ALGO_0 (no workspace), then any algorithm cuDNN accepts that fits */
    for (i = -1; i < CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT; i++) {
        cudnnConvolutionBwdDataAlgo_t a = i < 0 ? CUDNN_CONVOLUTION_BWD_DATA_ALGO_0 : (cudnnConvolutionBwdDataAlgo_t)i;
        need = 0;
        st = cudnnGetConvolutionBackwardDataWorkspaceSize(rt->cudnn, b->w, b->y, b->conv, b->x, a, &need);
        if (i < 0) {
            fb_st = st;
            fb_need = need;
        }
        if (st == CUDNN_STATUS_SUCCESS && need <= ws_bytes) {
            b->bwd_data_algo = a;
            b->bwd_data_ws = need;
            b->have_bwd_data = 1;
            return;
        }
    }
    vcc__conv_no_algo(d, "backward data", ws_bytes, fb_st, fb_need);
}

static inline void vcc__conv_pick_bwd_filter(VccRt *rt, const VccConvDesc *d, VccCudnnConv *b, size_t ws_bytes)
{
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    cudnnStatus_t st, fb_st = CUDNN_STATUS_SUCCESS;
    size_t need = 0, fb_need = 0;
    int n = 0, i;
    memset(perf, 0, sizeof perf);
    /* 1. cuDNN's heuristic ranking: the first plain-FP32 algorithm that fits
     *    (the query failing is not fatal: step 2 still finds one) */
    if (cudnnGetConvolutionBackwardFilterAlgorithm_v7(rt->cudnn, b->x, b->y, b->conv, b->w,
            CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, perf) != CUDNN_STATUS_SUCCESS)
        n = 0;
    for (i = 0; i < n && i < CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT; i++) {
        if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > ws_bytes ||
            !vcc__fp32_math(perf[i].mathType))
            continue;
        st = cudnnGetConvolutionBackwardFilterWorkspaceSize(rt->cudnn, b->x, b->y, b->conv, b->w, perf[i].algo, &need);
        if (st == CUDNN_STATUS_SUCCESS && need <= ws_bytes) {
            b->bwd_filter_algo = perf[i].algo;
            b->bwd_filter_ws = need;
            b->have_bwd_filter = 1;
            return;
        }
    }
    /* 2. BWD_FILTER_ALGO_0 (no workspace), then any algorithm cuDNN accepts that fits */
    for (i = -1; i < CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT; i++) {
        cudnnConvolutionBwdFilterAlgo_t a =
            i < 0 ? CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 : (cudnnConvolutionBwdFilterAlgo_t)i;
        need = 0;
        st = cudnnGetConvolutionBackwardFilterWorkspaceSize(rt->cudnn, b->x, b->y, b->conv, b->w, a, &need);
        if (i < 0) {
            fb_st = st;
            fb_need = need;
        }
        if (st == CUDNN_STATUS_SUCCESS && need <= ws_bytes) {
            b->bwd_filter_algo = a;
            b->bwd_filter_ws = need;
            b->have_bwd_filter = 1;
            return;
        }
    }
    vcc__conv_no_algo(d, "backward filter", ws_bytes, fb_st, fb_need);
}

/* y (N, K, S) += b[k] */
static __global__ void conv_bias_forward_kernel(int64_t n, int64_t K, int64_t S, const float *b, float *y)
{
    VCC_GRID_STRIDE(i, n) y[i] += b[(i / S) % K];
}

/* db[k] = sum over n, s of dy (N, K, S); one block per channel */
static __global__ void conv_bias_backward_kernel(int64_t N, int64_t K, int64_t S, const float *dy, float *db)
{
    __shared__ double sh[VCC_CUDA_THREADS];
    for (int64_t k = blockIdx.x; k < K; k += gridDim.x) {
        double acc = 0.0;
        for (int64_t n = 0; n < N; n++) {
            const float *row = dy + (n * K + k) * S;
            for (int64_t s = threadIdx.x; s < S; s += blockDim.x) acc += (double)row[s];
        }
        acc = vcc__block_sum(acc, sh);
        if (threadIdx.x == 0) db[k] = (float)acc;
    }
}

static inline int64_t vcc__conv_out_spatial(const VccConvDesc *d)
{
    int64_t s = 1;
    int i;
    for (i = 0; i < d->nsp; i++) s *= d->out[i];
    return s;
}

/* conv_forward: y (N, K, *out) = conv(x (N, C, *in), w (K, C/G, *kernel)) + b (K) */
static inline void conv_forward(VccRt *rt, VccConvDesc *d, const float *x, const float *w, const float *b,
                                float *y, void *ws, size_t ws_bytes)
{
    const float one = 1.0f, zero = 0.0f;
    VccCudnnConv *c = vcc__conv_backend(rt, d);
    if (!ws) ws_bytes = 0;
    if (!c->have_fwd || c->fwd_ws > ws_bytes) vcc__conv_pick_fwd(rt, d, c, ws_bytes);
    VCC_CUDNN_CHECK(cudnnConvolutionForward(rt->cudnn, &one, c->x, x, c->w, w, c->conv, c->fwd_algo,
                                            ws, ws_bytes, &zero, c->y, y));
    if (b) {
        int64_t S = vcc__conv_out_spatial(d), n = d->N * d->K * S;
        conv_bias_forward_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(n, d->K, S, b, y);
        VCC_CUDA_LAUNCHED();
    }
}

/* conv_backward_data: dx (N, C, *in) = conv^T(dy (N, K, *out), w); overwritten */
static inline void conv_backward_data(VccRt *rt, VccConvDesc *d, const float *dy, const float *w, float *dx,
                                      void *ws, size_t ws_bytes)
{
    const float one = 1.0f, zero = 0.0f;
    VccCudnnConv *c = vcc__conv_backend(rt, d);
    if (!ws) ws_bytes = 0;
    if (!c->have_bwd_data || c->bwd_data_ws > ws_bytes) vcc__conv_pick_bwd_data(rt, d, c, ws_bytes);
    VCC_CUDNN_CHECK(cudnnConvolutionBackwardData(rt->cudnn, &one, c->w, w, c->y, dy, c->conv, c->bwd_data_algo,
                                                 ws, ws_bytes, &zero, c->x, dx));
}

/* conv_backward_filter: dw (K, C/G, *kernel), db (K) or NULL; overwritten */
static inline void conv_backward_filter(VccRt *rt, VccConvDesc *d, const float *x, const float *dy, float *dw,
                                        float *db, void *ws, size_t ws_bytes)
{
    const float one = 1.0f, zero = 0.0f;
    VccCudnnConv *c = vcc__conv_backend(rt, d);
    if (!ws) ws_bytes = 0;
    if (!c->have_bwd_filter || c->bwd_filter_ws > ws_bytes) vcc__conv_pick_bwd_filter(rt, d, c, ws_bytes);
    VCC_CUDNN_CHECK(cudnnConvolutionBackwardFilter(rt->cudnn, &one, c->x, x, c->y, dy, c->conv,
                                                   c->bwd_filter_algo, ws, ws_bytes, &zero, c->w, dw));
    if (db) {
        int64_t S = vcc__conv_out_spatial(d);
        conv_bias_backward_kernel<<<vcc__blocks(d->K), VCC_CUDA_THREADS>>>(d->N, d->K, S, dy, db);
        VCC_CUDA_LAUNCHED();
    }
}

/* ------------------------------------------------------------------------ */
/* Batch normalization (training mode)                                      */
/* ------------------------------------------------------------------------ */

/* Per channel c (one block each): two-pass mean and biased variance over the
 * m = N*S elements of x (N, C, S), in double; save_mean, save_invstd; the
 * running statistics (ONNX momentum, unbiased variance as PyTorch). */
static __global__ void batchnorm_forward_train_stats_kernel(int64_t N, int64_t C, int64_t S, const float *x,
                                                            float *running_mean, float *running_var,
                                                            float momentum, float eps, int unbiased,
                                                            float *save_mean, float *save_invstd)
{
    __shared__ double sh[VCC_CUDA_THREADS];
    const int64_t m = N * S;
    for (int64_t c = blockIdx.x; c < C; c += gridDim.x) {
        double acc = 0.0, mean, var;
        for (int64_t n = 0; n < N; n++) {
            const float *row = x + (n * C + c) * S;
            for (int64_t s = threadIdx.x; s < S; s += blockDim.x) acc += (double)row[s];
        }
        mean = vcc__block_sum(acc, sh) / (double)m;
        acc = 0.0;
        for (int64_t n = 0; n < N; n++) {
            const float *row = x + (n * C + c) * S;
            for (int64_t s = threadIdx.x; s < S; s += blockDim.x) {
                double dv = (double)row[s] - mean;
                acc += dv * dv;
            }
        }
        var = vcc__block_sum(acc, sh) / (double)m;
        if (threadIdx.x == 0) {
            double v = unbiased && m > 1 ? var * (double)m / (double)(m - 1) : var;
            save_mean[c] = (float)mean;
            save_invstd[c] = (float)(1.0 / sqrt(var + (double)eps));
            if (running_mean)
                running_mean[c] = (float)((double)running_mean[c] * (double)momentum +
                                          mean * (1.0 - (double)momentum));
            if (running_var)
                running_var[c] = (float)((double)running_var[c] * (double)momentum + v * (1.0 - (double)momentum));
        }
    }
}

static __global__ void batchnorm_forward_train_kernel(int64_t n, int64_t C, int64_t S, const float *x,
                                                      const float *gamma, const float *beta, const float *mean,
                                                      const float *invstd, float *y)
{
    VCC_GRID_STRIDE(i, n) {
        int64_t c = (i / S) % C;
        y[i] = vcc_bn_norm(x[i], mean[c], invstd[c], gamma[c], beta[c]);
    }
}

/* batchnorm_forward_train: x, y (N, C, S); gamma, beta, running_*, save_* (C).
 * y may == x; the running variance takes the unbiased batch variance when unbiased
 * (PyTorch), else the biased one (ONNX). */
static inline void batchnorm_forward_train(VccRt *rt, int64_t N, int64_t C, int64_t S, const float *x,
                                           const float *gamma, const float *beta, float *running_mean,
                                           float *running_var, float momentum, float eps, int unbiased,
                                           float *y, float *save_mean, float *save_invstd)
{
    int64_t n = N * C * S;
    (void)rt;
    if (n <= 0) return;
    batchnorm_forward_train_stats_kernel<<<vcc__blocks(C), VCC_CUDA_THREADS>>>(
        N, C, S, x, running_mean, running_var, momentum, eps, unbiased, save_mean, save_invstd);
    VCC_CUDA_LAUNCHED();
    batchnorm_forward_train_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(n, C, S, x, gamma, beta, save_mean,
                                                                       save_invstd, y);
    VCC_CUDA_LAUNCHED();
}

static __global__ void batchnorm_forward_infer_kernel(int64_t n, int64_t C, int64_t S, const float *x,
                                                      const float *gamma, const float *beta, const float *mean,
                                                      const float *var, float eps, float *y)
{
    VCC_GRID_STRIDE(i, n) {
        int64_t c = (i / S) % C;
        y[i] = vcc_bn_norm(x[i], mean[c], vcc_bn_invstd(var[c], eps), gamma[c], beta[c]);
    }
}

/* batchnorm_forward_infer: inference form with given statistics (ONNX training_mode=0);
 * x, y (N, C, S), y may == x; gamma, beta, mean, var (C). */
static inline void batchnorm_forward_infer(VccRt *rt, int64_t N, int64_t C, int64_t S, const float *x,
                                           const float *gamma, const float *beta, const float *mean,
                                           const float *var, float eps, float *y)
{
    int64_t n = N * C * S;
    (void)rt;
    if (n <= 0) return;
    batchnorm_forward_infer_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(n, C, S, x, gamma, beta, mean, var, eps, y);
    VCC_CUDA_LAUNCHED();
}

/* Per channel (one block each): sum_dy = sum dy, sum_dy_xhat = invstd * sum dy*(x - mean)
 * in double, written to dbeta / dgamma. When in_block (dgamma or dbeta is NULL,
 * so there is nowhere to leave the sums) the block also writes its channel's dx. */
static __global__ void batchnorm_backward_reduce_kernel(int64_t N, int64_t C, int64_t S, const float *x,
                                                        const float *dy, const float *gamma, const float *save_mean,
                                                        const float *save_invstd, float inv_m, int in_block,
                                                        float *dx, float *dgamma, float *dbeta)
{
    __shared__ double sh[VCC_CUDA_THREADS];
    for (int64_t c = blockIdx.x; c < C; c += gridDim.x) {
        const float mean = save_mean[c], invstd = save_invstd[c];
        double sdy = 0.0, sdyx = 0.0;
        float sum_dy, sum_dy_xhat;
        for (int64_t n = 0; n < N; n++) {
            const int64_t off = (n * C + c) * S;
            for (int64_t s = threadIdx.x; s < S; s += blockDim.x) {
                double g = (double)dy[off + s];
                sdy += g;
                sdyx += g * ((double)x[off + s] - (double)mean);
            }
        }
        sdy = vcc__block_sum(sdy, sh);
        sdyx = vcc__block_sum(sdyx, sh);
        sum_dy = (float)sdy;
        sum_dy_xhat = (float)(sdyx * (double)invstd);
        if (threadIdx.x == 0) {
            if (dbeta) dbeta[c] = sum_dy;
            if (dgamma) dgamma[c] = sum_dy_xhat;
        }
        if (in_block) {
            const float gm = gamma[c];
            for (int64_t n = 0; n < N; n++) {
                const int64_t off = (n * C + c) * S;
                for (int64_t s = threadIdx.x; s < S; s += blockDim.x)
                    dx[off + s] = vcc_bn_dx(x[off + s], dy[off + s], mean, invstd, gm, sum_dy, sum_dy_xhat, inv_m);
            }
        }
    }
}

static __global__ void batchnorm_backward_kernel(int64_t n, int64_t C, int64_t S, const float *x, const float *dy,
                                                 const float *gamma, const float *save_mean,
                                                 const float *save_invstd, const float *sum_dy,
                                                 const float *sum_dy_xhat, float inv_m, float *dx)
{
    VCC_GRID_STRIDE(i, n) {
        int64_t c = (i / S) % C;
        dx[i] = vcc_bn_dx(x[i], dy[i], save_mean[c], save_invstd[c], gamma[c], sum_dy[c], sum_dy_xhat[c], inv_m);
    }
}

/* batchnorm_backward: x, dy, dx (N, C, S); gamma, save_* (C) from the forward;
 * dgamma = sum dy*xhat, dbeta = sum dy (C), either may be NULL.
 * All outputs overwritten; dx may == dy. */
static inline void batchnorm_backward(VccRt *rt, int64_t N, int64_t C, int64_t S, const float *x, const float *dy,
                                      const float *gamma, const float *save_mean, const float *save_invstd,
                                      float *dx, float *dgamma, float *dbeta)
{
    const int64_t n = N * C * S;
    const float inv_m = (float)(1.0 / (double)(N * S));
    const int in_block = !dgamma || !dbeta;
    (void)rt;
    if (n <= 0) return;
    /* the reduction reads all of dy before the elementwise kernel writes dx */
    batchnorm_backward_reduce_kernel<<<vcc__blocks(C), VCC_CUDA_THREADS>>>(
        N, C, S, x, dy, gamma, save_mean, save_invstd, inv_m, in_block, dx, dgamma, dbeta);
    VCC_CUDA_LAUNCHED();
    if (in_block) return;
    batchnorm_backward_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(n, C, S, x, dy, gamma, save_mean, save_invstd,
                                                                  dbeta, dgamma, inv_m, dx);
    VCC_CUDA_LAUNCHED();
}

/* ------------------------------------------------------------------------ */
/* Elementwise                                                              */
/* ------------------------------------------------------------------------ */

static __global__ void relu_forward_kernel(int64_t n, const float *x, float *y)
{
    VCC_GRID_STRIDE(i, n) y[i] = vcc_relu_fwd(x[i]);
}

static __global__ void relu_backward_kernel(int64_t n, const float *y, const float *dy, float *dx)
{
    VCC_GRID_STRIDE(i, n) dx[i] = vcc_relu_bwd(y[i], dy[i]);
}

static __global__ void add_forward_kernel(int64_t n, const float *a, const float *b, float *y)
{
    VCC_GRID_STRIDE(i, n) y[i] = a[i] + b[i];
}

static __global__ void copy_forward_kernel(int64_t n, const float *x, float *y)
{
    VCC_GRID_STRIDE(i, n) y[i] = x[i];
}

/* Overlapping x and y (memmove): one block walks the range in steps of
 * blockDim elements, away from the side it writes, reading a whole step
 * before writing it. */
static __global__ void copy_forward_overlap_kernel(int64_t n, const float *x, float *y)
{
    const int64_t step = blockDim.x;
    const int64_t nsteps = (n + step - 1) / step;
    for (int64_t k = 0; k < nsteps; k++) {
        const int64_t base = y < x ? k * step : (nsteps - 1 - k) * step;
        const int64_t i = base + threadIdx.x;
        float v = 0.0f;
        if (i < n) v = x[i];
        __syncthreads();
        if (i < n) y[i] = v;
        __syncthreads();
    }
}

static __global__ void fill_forward_kernel(int64_t n, float value, float *y)
{
    VCC_GRID_STRIDE(i, n) y[i] = value;
}

/* y may == x */
static inline void relu_forward(VccRt *rt, int64_t n, const float *x, float *y)
{
    (void)rt;
    if (n <= 0) return;
    relu_forward_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(n, x, y);
    VCC_CUDA_LAUNCHED();
}

/* dx may == dy */
static inline void relu_backward(VccRt *rt, int64_t n, const float *y, const float *dy, float *dx)
{
    (void)rt;
    if (n <= 0) return;
    relu_backward_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(n, y, dy, dx);
    VCC_CUDA_LAUNCHED();
}

/* y may == a or b */
static inline void add_forward(VccRt *rt, int64_t n, const float *a, const float *b, float *y)
{
    (void)rt;
    if (n <= 0) return;
    add_forward_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(n, a, b, y);
    VCC_CUDA_LAUNCHED();
}

/* y = x; overlapping ranges allowed (memmove) */
static inline void copy_forward(VccRt *rt, int64_t n, const float *x, float *y)
{
    (void)rt;
    if (n <= 0 || x == y) return;
    if (x < y + n && y < x + n)
        copy_forward_overlap_kernel<<<1, VCC_CUDA_THREADS>>>(n, x, y);
    else
        copy_forward_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(n, x, y);
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

static inline void fill_forward(VccRt *rt, int64_t n, float value, float *y)
{
    (void)rt;
    if (n <= 0) return;
    fill_forward_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(n, value, y);
    VCC_CUDA_LAUNCHED();
}

/* ------------------------------------------------------------------------ */
/* Global average pooling                                                   */
/* ------------------------------------------------------------------------ */

/* y[r] = mean of x (NC, S) row r; one block per row */
static __global__ void global_avgpool_forward_kernel(int64_t NC, int64_t S, const float *x, float *y)
{
    __shared__ double sh[VCC_CUDA_THREADS];
    for (int64_t r = blockIdx.x; r < NC; r += gridDim.x) {
        double acc = 0.0;
        const float *row = x + r * S;
        for (int64_t s = threadIdx.x; s < S; s += blockDim.x) acc += (double)row[s];
        acc = vcc__block_sum(acc, sh);
        if (threadIdx.x == 0) y[r] = (float)(acc / (double)S);
    }
}

/* dx (NC, S) = dy[r] / S */
static __global__ void global_avgpool_backward_kernel(int64_t n, int64_t S, const float *dy, float *dx)
{
    VCC_GRID_STRIDE(i, n) dx[i] = dy[i / S] / (float)S;
}

static inline void global_avgpool_forward(VccRt *rt, int64_t NC, int64_t S, const float *x, float *y)
{
    (void)rt;
    if (NC <= 0 || S <= 0) return;
    global_avgpool_forward_kernel<<<vcc__blocks(NC), VCC_CUDA_THREADS>>>(NC, S, x, y);
    VCC_CUDA_LAUNCHED();
}

static inline void global_avgpool_backward(VccRt *rt, int64_t NC, int64_t S, const float *dy, float *dx)
{
    (void)rt;
    if (NC <= 0 || S <= 0) return;
    global_avgpool_backward_kernel<<<vcc__grid(NC * S), VCC_CUDA_THREADS>>>(NC * S, S, dy, dx);
    VCC_CUDA_LAUNCHED();
}

/* ------------------------------------------------------------------------ */
/* Gemm (cuBLAS)                                                            */
/* ------------------------------------------------------------------------ */

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

/* Y (M, N) = beta * C broadcast from (c_rows, c_cols) */
static __global__ void gemm_bias_forward_kernel(int64_t M, int64_t N, float beta, const float *C, int64_t c_rows,
                                                int64_t c_cols, float *Y)
{
    VCC_GRID_STRIDE(i, M * N) {
        int64_t r = i / N, c = i - r * N;
        Y[i] = beta * C[(c_rows == 1 ? 0 : r) * c_cols + (c_cols == 1 ? 0 : c)];
    }
}

/* dC (c_rows, c_cols) = beta * dY (M, N) summed over the broadcast axes */
static __global__ void gemm_bias_backward_kernel(int64_t M, int64_t N, float beta, const float *dY,
                                                 int64_t c_rows, int64_t c_cols, float *dC)
{
    VCC_GRID_STRIDE(i, c_rows * c_cols) {
        int64_t r = i / c_cols, c = i - r * c_cols;
        int64_t r0 = c_rows == 1 ? 0 : r, r1 = c_rows == 1 ? M : r + 1;
        int64_t c0 = c_cols == 1 ? 0 : c, c1 = c_cols == 1 ? N : c + 1;
        double acc = 0.0;
        for (int64_t a = r0; a < r1; a++)
            for (int64_t b = c0; b < c1; b++) acc += (double)dY[a * N + b];
        dC[i] = (float)((double)beta * acc);
    }
}

/* gemm_forward: ONNX Gemm, Y (M, N) = alpha * op(A) (M, K) * op(B) (K, N) + beta * C,
 * C (c_rows, c_cols) broadcast (c_rows 1 or M, c_cols 1 or N) or NULL.
 * A is stored (M, K), or (K, M) when transA; B (K, N), or (N, K) when transB. */
static inline void gemm_forward(VccRt *rt, int transA, int transB, int64_t M, int64_t N, int64_t K, float alpha,
                                const float *A, const float *B, float beta, const float *C, int64_t c_rows,
                                int64_t c_cols, float *Y)
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
 *   d op(A) = alpha dY op(B)^T     d op(B) = alpha op(A)^T dY */
static inline void gemm_backward(VccRt *rt, int transA, int transB, int64_t M, int64_t N, int64_t K, float alpha,
                                 float beta, const float *A, const float *B, const float *dY, float *dA, float *dB,
                                 float *dC, int64_t c_rows, int64_t c_cols)
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

/* ------------------------------------------------------------------------ */
/* Softmax cross-entropy (mean over the batch)                              */
/* ------------------------------------------------------------------------ */

/* One block. Rows go in chunks of VCC_CUDA_THREADS, one row per thread
 * (vcc_xent_row); thread 0 then adds the chunk's row losses in row order into
 * a float total, so the sum is the CPU's sequential one; loss[0] = total / N. */
static __global__ void softmax_xent_forward_kernel(int64_t N, int64_t K, const float *logits,
                                                   const int64_t *labels, float *loss, float *prob)
{
    __shared__ float row_loss[VCC_CUDA_THREADS];
    float total = 0.0f;
    for (int64_t r0 = 0; r0 < N; r0 += VCC_CUDA_THREADS) {
        const int64_t r = r0 + threadIdx.x;
        const int64_t cnt = N - r0 < VCC_CUDA_THREADS ? N - r0 : VCC_CUDA_THREADS;
        if (r < N) row_loss[threadIdx.x] = vcc_xent_row(K, logits + r * K, labels[r], prob + r * K);
        __syncthreads();
        if (threadIdx.x == 0)
            for (int64_t i = 0; i < cnt; i++) total += row_loss[i];
        __syncthreads();
    }
    if (threadIdx.x == 0) loss[0] = total / (float)N;
}

static __global__ void softmax_xent_backward_kernel(int64_t N, int64_t K, const float *prob, const int64_t *labels,
                                                    const float *dloss, float *dlogits)
{
    const float scale = dloss[0] / (float)N;
    VCC_GRID_STRIDE(i, N * K) {
        int64_t r = i / K;
        dlogits[i] = vcc_xent_bwd(prob[i], labels[r] == i - r * K, scale);
    }
}

/* logits, prob (N, K); labels (N) int64; loss (1) */
static inline void softmax_xent_forward(VccRt *rt, int64_t N, int64_t K, const float *logits, const int64_t *labels,
                                        float *loss, float *prob)
{
    (void)rt;
    if (N <= 0 || K <= 0) return;
    softmax_xent_forward_kernel<<<1, VCC_CUDA_THREADS>>>(N, K, logits, labels, loss, prob);
    VCC_CUDA_LAUNCHED();
}

/* dlogits (N, K) = (prob - onehot(label)) * dloss / N */
static inline void softmax_xent_backward(VccRt *rt, int64_t N, int64_t K, const float *prob, const int64_t *labels,
                                         const float *dloss, float *dlogits)
{
    (void)rt;
    if (N <= 0 || K <= 0) return;
    softmax_xent_backward_kernel<<<vcc__grid(N * K), VCC_CUDA_THREADS>>>(N, K, prob, labels, dloss, dlogits);
    VCC_CUDA_LAUNCHED();
}

/* ------------------------------------------------------------------------ */
/* SGD                                                                      */
/* ------------------------------------------------------------------------ */

static __global__ void sgd_update_kernel(int64_t n, float *p, const float *g, float *v, float lr, float momentum,
                                         float wd)
{
    VCC_GRID_STRIDE(i, n) {
        float none = 0.0f;
        vcc_sgd(&p[i], g[i], v ? &v[i] : &none, lr, momentum, wd);
    }
}

/* p, g, v (n); v (the momentum buffer) may be NULL when momentum == 0 */
static inline void sgd_update(VccRt *rt, int64_t n, float *p, const float *g, float *v, float lr, float momentum,
                              float wd)
{
    (void)rt;
    if (n <= 0) return;
    sgd_update_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(n, p, g, v, lr, momentum, wd);
    VCC_CUDA_LAUNCHED();
}

#endif /* VCC_CUDA_CUH */
