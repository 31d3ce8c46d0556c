/*
 * cuda/conv.cuh - the conv family's CUDA kernels: Conv, ConvGradData, ConvGradFilter, ConvTranspose and its
 * gradients (ConvTransposeGradData is conv_forward of the same descriptor).
 * Signatures: proto/conv.h; per-element bodies shared with the C target: elem/conv.h. Part of the CUDA target's runtime (cuda/base.cuh).
 *
 * Two paths compute a descriptor's convolutions, chosen per descriptor:
 *   cuDNN           pads symmetric and not negative (cuDNN's padding model): cudnnConvolution* with the
 *                   planned workspace as its limit (the algorithm choice below);
 *   im2col + cuBLAS any other pads (asymmetric: auto_pad SAME_* with an odd total, explicit pads; negative:
 *                   a ConvTranspose's output_shape past its input's reach): the CPU target's algorithm, per
 *                   sample, group and chunk of output positions an im2col into the planned workspace (the
 *                   chunk the plan sized it for under --workspace-limit: vcc_conv_chunk_cols) and one
 *                   cublasSgemm; the column entries are elem/conv.h's vcc_conv_im2col_at /
 *                   vcc_conv_col2im_at.
 * Both paths stay within the planned workspace, so --workspace-limit bounds the CUDA trainer's too.
 *
 * The cuDNN algorithm of each direction is chosen at the direction's first call (vcc__conv_pick_*) and
 * kept in the descriptor's VccCudnnConv; the math types allowed follow VCC_PRECISION_TF32 (cuda/base.cuh).
 */
#ifndef VCC_CUDA_CONV_CUH
#define VCC_CUDA_CONV_CUH

#include "base.cuh"
#include "matmul.cuh" /* vcc__sgemm_rm: row-major cublasSgemm */
#include "../elem/conv.h"

#define VCC_KERNEL VCC_KERNEL_DECLARE
#include "../proto/conv.h"
#undef VCC_KERNEL

/* VCC_CONV_BASE_MATH: the math type a descriptor holds while algorithms are searched, and the one the
 * zero-workspace fallback runs with: CUDNN_FMA_MATH (fp32: FMA kernels only) or CUDNN_DEFAULT_MATH (tf32:
 * tensor-op kernels permitted, what PyTorch sets for float32 when torch.backends.cudnn.allow_tf32 is on). */
#if VCC_PRECISION_TF32
#define VCC_CONV_BASE_MATH CUDNN_DEFAULT_MATH
#else
#define VCC_CONV_BASE_MATH CUDNN_FMA_MATH
#endif

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

/* vcc__conv_cudnn_fits: d's pads are cuDNN's kind (symmetric, not negative); else the im2col path runs. */
static inline int vcc__conv_cudnn_fits(const VccConvDesc *d)
{
    int i;
    for (i = 0; i < d->nsp; i++)
        if (d->pad_begin[i] != d->pad_end[i] || d->pad_begin[i] < 0) return 0;
    return 1;
}

/* The cuDNN data type of a convolution's tensors of element type T (float, __nv_bfloat16). */
template <class T> static inline cudnnDataType_t vcc__cudnn_type(void)
{
    static_assert(VccStored<T>::value, "a convolution's tensors are float or __nv_bfloat16");
    return std::is_same<T, float>::value ? CUDNN_DATA_FLOAT : CUDNN_DATA_BFLOAT16;
}

/* The math type a backend's descriptor holds while algorithms are searched, and the one its zero-workspace
 * fallback runs with: VCC_CONV_BASE_MATH for float32 data; CUDNN_DEFAULT_MATH (tensor cores) for bfloat16,
 * whose operands need no conversion. */
static inline cudnnMathType_t vcc__conv_base_math(const VccCudnnConv *b)
{
    return b->dtype == CUDNN_DATA_BFLOAT16 ? CUDNN_DEFAULT_MATH : VCC_CONV_BASE_MATH;
}

/* vcc__conv_backend: the cuDNN descriptors of d for tensors of cuDNN type dt, created on first use (d must
 * fit cuDNN). Every direction of one descriptor runs on one type (exit with a message otherwise). */
static inline VccCudnnConv *vcc__conv_backend(VccRt *rt, VccConvDesc *d, cudnnDataType_t dt)
{
    VccCudnnConv *b;
    int nd, i, xdim[5], xstr[5], ydim[5], ystr[5], wdim[5], odim[5];
    int pad[3], str[3], dil[3];
    int64_t xs = 1, ys = 1, span;

    if (d->backend) {
        b = (VccCudnnConv *)d->backend;
        if (b->dtype != dt) vcc__conv_fail(d, "internal error: one convolution on both float32 and bfloat16 tensors");
        return b;
    }
    if (d->nsp < 1 || d->nsp > 3) vcc__conv_fail(d, "spatial rank must be 1..3");
    if (d->N < 1 || d->C < 1 || d->K < 1 || d->G < 1 || d->C % d->G || d->K % d->G)
        vcc__conv_fail(d, "bad N/C/K/G (groups must divide C and K)");
    for (i = 0; i < d->nsp; i++) {
        if (d->pad_begin[i] != d->pad_end[i])
            vcc__conv_fail(d, "internal error: asymmetric padding reached the cuDNN path");
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
    b->dtype = dt;
    VCC_CUDNN_CHECK(cudnnSetTensorNdDescriptor(b->x, dt, nd + 2, xdim, xstr));
    VCC_CUDNN_CHECK(cudnnSetTensorNdDescriptor(b->y, dt, nd + 2, ydim, ystr));
    VCC_CUDNN_CHECK(cudnnSetFilterNdDescriptor(b->w, dt, CUDNN_TENSOR_NCHW, nd + 2, wdim));
    VCC_CUDNN_CHECK(cudnnSetConvolutionNdDescriptor(b->conv, nd, pad, str, dil,
                                                    CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    VCC_CUDNN_CHECK(cudnnSetConvolutionGroupCount(b->conv, vcc__int(d->G, "conv groups")));
    b->math = vcc__conv_base_math(b);
    VCC_CUDNN_CHECK(cudnnSetConvolutionMathType(b->conv, b->math));
    b->fwd_math = b->bwd_data_math = b->bwd_filter_math = b->math;

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

/* vcc__conv_math_ok: whether an algorithm cuDNN reports with math type m may be chosen for b. fp32: only
 * plain FP32 kernels (FMA or default math; the descriptor stays CUDNN_FMA_MATH, so no TF32 runs). tf32, and
 * bfloat16 data: also CUDNN_TENSOR_OP_MATH (TF32 for float32 data, bfloat16 tensor cores for bfloat16);
 * never CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION, which lets cuDNN convert float32 operands to half
 * precision (cuDNN API docs, cudnnMathType_t). */
static inline int vcc__conv_math_ok(const VccCudnnConv *b, cudnnMathType_t m)
{
    if (b->dtype == CUDNN_DATA_BFLOAT16)
        return m == CUDNN_FMA_MATH || m == CUDNN_DEFAULT_MATH || m == CUDNN_TENSOR_OP_MATH;
#if VCC_PRECISION_TF32
    return m == CUDNN_FMA_MATH || m == CUDNN_DEFAULT_MATH || m == CUDNN_TENSOR_OP_MATH;
#else
    return m == CUDNN_FMA_MATH || m == CUDNN_DEFAULT_MATH;
#endif
}

/* vcc__conv_run_math: the math type an algorithm cuDNN reported with math type m runs with on b: in tf32
 * and for bfloat16 data m itself (PyTorch sets the descriptor to the chosen perf result's mathType the
 * same way); in fp32 always CUDNN_FMA_MATH, the descriptor's, so fp32 never calls
 * cudnnSetConvolutionMathType after creation. */
static inline cudnnMathType_t vcc__conv_run_math(const VccCudnnConv *b, cudnnMathType_t m)
{
    if (b->dtype == CUDNN_DATA_BFLOAT16) return m;
#if VCC_PRECISION_TF32
    return m;
#else
    (void)m;
    return CUDNN_FMA_MATH;
#endif
}

/* vcc__conv_set_math: put math type m on b's convolution descriptor (shared by the three directions, so
 * each call sets its direction's type first); no cuDNN call when it already holds m. */
static inline void vcc__conv_set_math(VccCudnnConv *b, cudnnMathType_t m)
{
    if (b->math == m) return;
    VCC_CUDNN_CHECK(cudnnSetConvolutionMathType(b->conv, m));
    b->math = m;
}

/* vcc__bytes_overlap: whether the byte ranges [p, p + np) and [q, q + nq) share a byte (an empty or NULL
 * range shares none). */
static inline int vcc__bytes_overlap(const void *p, size_t np, const void *q, size_t nq)
{
    uintptr_t a = (uintptr_t)p, b = (uintptr_t)q;
    if (!p || !q || !np || !nq) return 0;
    return a < b + nq && b < a + np;
}

/* vcc__conv_elems: N * ch * prod(dims[0..nsp)), the element count of a (N, ch, *dims) tensor of d. */
static inline size_t vcc__conv_elems(const VccConvDesc *d, int64_t N, int64_t ch, const int64_t *dims)
{
    int64_t n = N * ch;
    int i;
    for (i = 0; i < d->nsp; i++) n *= dims[i];
    return (size_t)n;
}

/* vcc__conv_may_time: whether a direction's algorithm may be chosen by cudnnFind*AlgorithmEx on the call's
 * own tensors. That search runs every candidate algorithm and writes its results into the output buffer
 * out (out_bytes); this is harmless only when
 *   - the real cuDNN call right after OVERWRITES out (beta == 0: it accumulates into out otherwise, and
 *     the search would have destroyed what it adds to), and
 *   - out shares no byte with the inputs a, b (a_bytes, b_bytes) or the workspace (they must reach the
 *     real call unchanged; the plan gives a conv's output its own bytes, this checks it),
 * and rt->conv_search asks for it (--cudnn-search time, the default). Otherwise the direction takes the
 * heuristic path, which runs nothing. */
static inline int vcc__conv_may_time(const VccRt *rt, float beta, const void *out, size_t out_bytes, const void *a,
                                     size_t a_bytes, const void *b, size_t b_bytes, const void *ws, size_t ws_bytes)
{
    if (rt->conv_search != VCC_CONV_SEARCH_TIME || beta != 0.0f) return 0;
    return !vcc__bytes_overlap(out, out_bytes, a, a_bytes) && !vcc__bytes_overlap(out, out_bytes, b, b_bytes) &&
           !vcc__bytes_overlap(out, out_bytes, ws, ws_bytes);
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

/* Algorithm choice for one direction, against the workspace the plan reserved (ws, ws_bytes), made at the
 * direction's first call (cuDNN API docs: cudnnFindConvolution*AlgorithmEx, cudnnGetConvolution*Algorithm_v7,
 * cudnnGetConvolution*WorkspaceSize):
 *   1. the candidates, fastest or best ranked first: with timed != 0 (vcc__conv_may_time) the results of
 *      cudnnFind*AlgorithmEx, which runs each algorithm once on the call's real operands and workspace
 *      and writes the output buffer (the caller's real call overwrites it); else, or when that search
 *      fails or returns nothing, cudnnGet*Algorithm_v7's heuristic ranking, which runs nothing. The first
 *      candidate whose status is success, whose math type is allowed (vcc__conv_math_ok) and whose
 *      workspace (re-queried under its math type) is <= ws_bytes is chosen;
 *   2. else the zero-workspace algorithm (IMPLICIT_GEMM / BWD_DATA_ALGO_0 /
 *      BWD_FILTER_ALGO_0), else any algorithm cuDNN accepts within ws_bytes, with VCC_CONV_BASE_MATH;
 *   3. else exit with a message naming the convolution.
 * vcc__conv_choose is these steps for any direction: Perf is the direction's cudnnConvolution*AlgoPerf_t,
 * Algo its algorithm enum, Count its ALGO_COUNT and zero_ws its zero-workspace algorithm; find(count, &n,
 * perf) is its timed search, rank(count, &n, perf) its heuristic ranking, need_of(algo, &bytes) its
 * workspace query (under the descriptor's current math type). The choice, its workspace bytes and its
 * math type go to *algo, *ws_need, *math; dir names the direction in the error message. A failed cuDNN
 * call other than the two searches (and the queries they rank) exits 1 with cuDNN's message. */
/* vcc__conv_log_search: with the environment variable VCC_CUDNN_LOG set (to anything), one line per
 * candidate of a direction's search to stderr: the convolution's geometry (N, C, K, groups, input, kernel
 * and stride extents), the direction, the planned workspace (bytes), and each candidate's algorithm enum,
 * status, time (ms; from the timed search, -1 from the heuristic ranking), workspace (bytes) and math
 * type, in cuDNN's order. For reading where a step's convolution time goes, and what a larger
 * --workspace-limit would buy. */
template <typename Perf>
static inline void vcc__conv_log_search(const VccConvDesc *d, const char *dir, size_t ws_bytes, int timed,
                                        const Perf *perf, int n)
{
    static int on = -1;
    char geo[160];
    int i, k = 0;
    if (on < 0) on = getenv("VCC_CUDNN_LOG") != NULL;
    if (!on) return;
    k += snprintf(geo + k, sizeof geo - k, "N%lld C%lld K%lld G%lld in", (long long)d->N, (long long)d->C,
                  (long long)d->K, (long long)d->G);
    for (i = 0; i < d->nsp; i++) k += snprintf(geo + k, sizeof geo - k, "%s%lld", i ? "x" : "", (long long)d->in[i]);
    k += snprintf(geo + k, sizeof geo - k, " k");
    for (i = 0; i < d->nsp; i++) k += snprintf(geo + k, sizeof geo - k, "%s%lld", i ? "x" : "", (long long)d->kernel[i]);
    k += snprintf(geo + k, sizeof geo - k, " s");
    for (i = 0; i < d->nsp; i++) snprintf(geo + k, sizeof geo - k, "%s%lld", i ? "x" : "", (long long)d->stride[i]), k = (int)strlen(geo);
    for (i = 0; i < n; i++)
        fprintf(stderr, "vcc cudnn: %s | %s | ws %zu | %s | algo %d status %d time %.4f ms ws %zu math %d\n", geo, dir,
                ws_bytes, timed ? "timed" : "heuristic", (int)perf[i].algo, (int)perf[i].status,
                timed ? (double)perf[i].time : -1.0, (size_t)perf[i].memory, (int)perf[i].mathType);
}

template <typename Perf, typename Algo, int Count, typename Find, typename Rank, typename Need>
static inline void vcc__conv_choose(const VccConvDesc *d, VccCudnnConv *b, const char *dir, Algo zero_ws,
                                    size_t ws_bytes, int timed, Find find, Rank rank, Need need_of, Algo *algo,
                                    size_t *ws_need, cudnnMathType_t *math)
{
    Perf perf[Count];
    cudnnStatus_t st, fb_st = CUDNN_STATUS_SUCCESS;
    size_t need = 0, fb_need = 0;
    int n = 0, i;
    memset(perf, 0, sizeof perf);
    vcc__conv_set_math(b, vcc__conv_base_math(b)); /* search under the precision's own math type */
    /* 1. the timed search where allowed, else (or when it fails) cuDNN's heuristic ranking; neither
     *    failing is fatal: step 2 still finds one */
    if (timed && find(Count, &n, perf) != CUDNN_STATUS_SUCCESS) n = 0;
    if (n <= 0 && rank(Count, &n, perf) != CUDNN_STATUS_SUCCESS) n = 0;
    vcc__conv_log_search(d, dir, ws_bytes, timed, perf, n < Count ? n : Count);
    for (i = 0; i < n && i < Count; i++) {
        if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > ws_bytes ||
            !vcc__conv_math_ok(b, perf[i].mathType))
            continue;
        vcc__conv_set_math(b, vcc__conv_run_math(b, perf[i].mathType));
        st = need_of(perf[i].algo, &need);
        if (st == CUDNN_STATUS_SUCCESS && need <= ws_bytes) {
            *algo = perf[i].algo;
            *ws_need = need;
            *math = b->math;
            if (getenv("VCC_CUDNN_LOG")) fprintf(stderr, "vcc cudnn: %s chose algo %d (ws %zu, math %d)\n", dir, (int)*algo, need, (int)*math);
            return;
        }
    }
    /* 2. the zero-workspace algorithm, then any algorithm cuDNN accepts that fits */
    vcc__conv_set_math(b, vcc__conv_base_math(b));
    for (i = -1; i < Count; i++) {
        Algo a = i < 0 ? zero_ws : (Algo)i;
        need = 0;
        st = need_of(a, &need);
        if (i < 0) {
            fb_st = st;
            fb_need = need;
        }
        if (st == CUDNN_STATUS_SUCCESS && need <= ws_bytes) {
            *algo = a;
            *ws_need = need;
            *math = b->math;
            if (getenv("VCC_CUDNN_LOG")) fprintf(stderr, "vcc cudnn: %s chose fallback algo %d (ws %zu, math %d)\n", dir, (int)*algo, need, (int)*math);
            return;
        }
    }
    vcc__conv_no_algo(d, dir, ws_bytes, fb_st, fb_need); /* 3. */
}

/* The forward choice (y = conv(x, w)) into b->fwd_*: vcc__conv_choose with cuDNN's forward calls. */
static inline void vcc__conv_pick_fwd(VccRt *rt, const VccConvDesc *d, VccCudnnConv *b, const void *x,
                                      const void *w, void *y, void *ws, size_t ws_bytes, int timed)
{
    cudnnHandle_t h = rt->cudnn;
    typedef cudnnConvolutionFwdAlgoPerf_t Perf;
    vcc__conv_choose<Perf, cudnnConvolutionFwdAlgo_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT>(
        d, b, "forward", CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, ws_bytes, timed,
        [&](int count, int *n, Perf *perf) {
            return cudnnFindConvolutionForwardAlgorithmEx(h, b->x, x, b->w, w, b->conv, b->y, y, count, n, perf,
                                                          ws, ws_bytes);
        },
        [&](int count, int *n, Perf *perf) {
            return cudnnGetConvolutionForwardAlgorithm_v7(h, b->x, b->w, b->conv, b->y, count, n, perf);
        },
        [&](cudnnConvolutionFwdAlgo_t a, size_t *bytes) {
            return cudnnGetConvolutionForwardWorkspaceSize(h, b->x, b->w, b->conv, b->y, a, bytes);
        },
        &b->fwd_algo, &b->fwd_ws, &b->fwd_math);
    b->have_fwd = 1;
}

/* The backward-data choice (dx = conv^T(dy, w)) into b->bwd_data_*, as vcc__conv_pick_fwd's. */
static inline void vcc__conv_pick_bwd_data(VccRt *rt, const VccConvDesc *d, VccCudnnConv *b, const void *dy,
                                           const void *w, void *dx, void *ws, size_t ws_bytes, int timed)
{
    cudnnHandle_t h = rt->cudnn;
    typedef cudnnConvolutionBwdDataAlgoPerf_t Perf;
    vcc__conv_choose<Perf, cudnnConvolutionBwdDataAlgo_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT>(
        d, b, "backward data", CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, ws_bytes, timed,
        [&](int count, int *n, Perf *perf) {
            return cudnnFindConvolutionBackwardDataAlgorithmEx(h, b->w, w, b->y, dy, b->conv, b->x, dx, count, n,
                                                               perf, ws, ws_bytes);
        },
        [&](int count, int *n, Perf *perf) {
            return cudnnGetConvolutionBackwardDataAlgorithm_v7(h, b->w, b->y, b->conv, b->x, count, n, perf);
        },
        [&](cudnnConvolutionBwdDataAlgo_t a, size_t *bytes) {
            return cudnnGetConvolutionBackwardDataWorkspaceSize(h, b->w, b->y, b->conv, b->x, a, bytes);
        },
        &b->bwd_data_algo, &b->bwd_data_ws, &b->bwd_data_math);
    b->have_bwd_data = 1;
}

/* The backward-filter choice (dw from x and dy) into b->bwd_filter_*, as vcc__conv_pick_fwd's. */
static inline void vcc__conv_pick_bwd_filter(VccRt *rt, const VccConvDesc *d, VccCudnnConv *b, const void *x,
                                             const void *dy, void *dw, void *ws, size_t ws_bytes, int timed)
{
    cudnnHandle_t h = rt->cudnn;
    typedef cudnnConvolutionBwdFilterAlgoPerf_t Perf;
    vcc__conv_choose<Perf, cudnnConvolutionBwdFilterAlgo_t, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT>(
        d, b, "backward filter", CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, ws_bytes, timed,
        [&](int count, int *n, Perf *perf) {
            return cudnnFindConvolutionBackwardFilterAlgorithmEx(h, b->x, x, b->y, dy, b->conv, b->w, dw, count, n,
                                                                 perf, ws, ws_bytes);
        },
        [&](int count, int *n, Perf *perf) {
            return cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, b->x, b->y, b->conv, b->w, count, n, perf);
        },
        [&](cudnnConvolutionBwdFilterAlgo_t a, size_t *bytes) {
            return cudnnGetConvolutionBackwardFilterWorkspaceSize(h, b->x, b->y, b->conv, b->w, a, bytes);
        },
        &b->bwd_filter_algo, &b->bwd_filter_ws, &b->bwd_filter_math);
    b->have_bwd_filter = 1;
}

/* y (N, K, S) += b[k] */
template <class T> static __global__ void conv_bias_forward_kernel(int64_t n, int64_t K, int64_t S, const T *b, T *y)
{
    VCC_GRID_STRIDE(i, n) vcc_st(y, i, vcc_ld(y, i) + vcc_ld(b, (i / S) % K));
}

/* db[k] = sum over n, s of dy (N, K, S); one block per channel */
template <class T> static __global__ void conv_bias_backward_kernel(int64_t N, int64_t K, int64_t S, const T *dy, T *db)
{
    __shared__ double sh[VCC_CUDA_THREADS];
    for (int64_t k = blockIdx.x; k < K; k += gridDim.x) {
        double acc = 0.0;
        for (int64_t n = 0; n < N; n++) {
            const T *row = dy + (n * K + k) * S;
            for (int64_t s = threadIdx.x; s < S; s += blockDim.x) acc += (double)vcc_ld(row, s);
        }
        acc = vcc__block_sum(acc, sh);
        if (threadIdx.x == 0) vcc_st(db, k, (float)acc);
    }
}

/* ---- the im2col path (pads cuDNN does not take) */

/* col (Cg*KK, pc) = im2col of output positions [p0, p0 + pc) of one sample's group xg (Cg, *in); one
 * thread per column entry */
static __global__ void conv_im2col_kernel(VccConvGeo g, const float *xg, int64_t p0, int64_t pc, float *col)
{
    VCC_GRID_STRIDE(i, g.Cg * g.KK * pc) col[i] = vcc_conv_im2col_at(&g, xg, i / pc, p0 + i % pc);
}

/* xg (Cg, *in) = col2im of the chunk col (Cg*KK, pc) of output positions [p0, p0 + pc), OVERWRITTEN for
 * the first chunk (p0 == 0), added to after it; one thread per element of xg */
static __global__ void conv_col2im_kernel(VccConvGeo g, const float *col, int64_t p0, int64_t pc, float *xg)
{
    VCC_GRID_STRIDE(i, g.Cg * g.IN) xg[i] = vcc_conv_col2im_at(&g, col, p0, pc, i / g.IN, i % g.IN, p0 ? xg[i] : 0.0f);
}

/* d's 3-D view into g and the column buffer in ws, *pc output positions per chunk (vcc_conv_chunk_cols:
 * the chunk the plan sized the workspace for); exits on an inconsistent descriptor or a workspace smaller
 * than one column */
static inline float *vcc__conv_gemm_setup(const VccConvDesc *d, VccConvGeo *g, void *ws, size_t ws_bytes, int64_t *pc)
{
    const char *bad = vcc_conv_geo_make(d, g);
    if (bad) vcc__conv_fail(d, bad);
    if (d->N < 1) vcc__conv_fail(d, "bad N");
    *pc = vcc_conv_chunk_cols(g, ws ? ws_bytes : 0);
    if (*pc < 1) vcc__conv_fail(d, "the workspace is smaller than one im2col column");
    return (float *)ws;
}

enum { VCC_CONV_FWD, VCC_CONV_BWD_DATA, VCC_CONV_BWD_FILTER };

/* One direction of d by im2col + cuBLAS, per sample, group and chunk [p0, p0 + pc) of output positions
 * in ascending order, as the C target (the operands a direction does not read are NULL; out is
 * OVERWRITTEN):
 *   VCC_CONV_FWD         out = y (N, K, *out):        col = im2col(x_g); y_g[:, chunk] = w_g (Kg, Cg*KK) col
 *   VCC_CONV_BWD_DATA    out = dx (N, C, *in):        col = w_g^T dy_g[:, chunk]; dx_g += col2im(col)
 *   VCC_CONV_BWD_FILTER  out = dw (K, C/G, *kernel):  col = im2col(x_g); dw_g += dy_g[:, chunk] col^T */
static inline void vcc__conv_gemm(VccRt *rt, const VccConvDesc *d, int dir, const float *x, const float *w,
                                  const float *dy, float *out, void *ws, size_t ws_bytes)
{
    VccConvGeo g;
    int64_t pc;
    float *col = vcc__conv_gemm_setup(d, &g, ws, ws_bytes, &pc);
    const int64_t ckk = g.Cg * g.KK, wg = g.Kg * ckk;
    int64_t n, gi, p0;
    for (n = 0; n < d->N; n++)
        for (gi = 0; gi < d->G; gi++)
            for (p0 = 0; p0 < g.OUT; p0 += pc) {
                const int64_t xo = (n * d->C + gi * g.Cg) * g.IN, yo = (n * d->K + gi * g.Kg) * g.OUT + p0;
                const int64_t m = g.OUT - p0 < pc ? g.OUT - p0 : pc;
                if (dir == VCC_CONV_BWD_DATA) {
                    vcc__sgemm_rm(rt, 1, 0, ckk, m, g.Kg, 1.0f, w + gi * wg, ckk, dy + yo, g.OUT, 0.0f, col, m);
                    conv_col2im_kernel<<<vcc__grid(g.Cg * g.IN), VCC_CUDA_THREADS>>>(g, col, p0, m, out + xo);
                    VCC_CUDA_LAUNCHED();
                    continue;
                }
                conv_im2col_kernel<<<vcc__grid(ckk * m), VCC_CUDA_THREADS>>>(g, x + xo, p0, m, col);
                VCC_CUDA_LAUNCHED();
                if (dir == VCC_CONV_FWD)
                    vcc__sgemm_rm(rt, 0, 0, g.Kg, m, ckk, 1.0f, w + gi * wg, ckk, col, m, 0.0f, out + yo, g.OUT);
                else
                    vcc__sgemm_rm(rt, 0, 1, g.Kg, ckk, m, 1.0f, dy + yo, g.OUT, col, m,
                                  n == 0 && p0 == 0 ? 0.0f : 1.0f, out + gi * wg, ckk);
            }
}

/* ---- the kernels */

static inline int64_t vcc__conv_spatial(int nsp, const int64_t *dims)
{
    int64_t s = 1;
    int i;
    for (i = 0; i < nsp; i++) s *= dims[i];
    return s;
}

/* y (N, K, S) += b[k] */
template <class T> static inline void vcc__conv_bias_forward(int64_t N, int64_t K, int64_t S, const T *b, T *y)
{
    conv_bias_forward_kernel<<<vcc__grid(N * K * S), VCC_CUDA_THREADS>>>(N * K * S, K, S, b, y);
    VCC_CUDA_LAUNCHED();
}

/* db (K) = sum over n, s of dy (N, K, S), OVERWRITTEN */
template <class T> static inline void vcc__conv_bias_backward(int64_t N, int64_t K, int64_t S, const T *dy, T *db)
{
    conv_bias_backward_kernel<<<vcc__blocks(K), VCC_CUDA_THREADS>>>(N, K, S, dy, db);
    VCC_CUDA_LAUNCHED();
}

/* The im2col path takes float32 only: a bfloat16 convolution (vcc --precision bf16) with pads cuDNN does
 * not take is an error naming it. */
static inline void vcc__conv_gemm(VccRt *rt, const VccConvDesc *d, int dir, const __nv_bfloat16 *x,
                                  const __nv_bfloat16 *w, const __nv_bfloat16 *dy, __nv_bfloat16 *out, void *ws,
                                  size_t ws_bytes)
{
    (void)rt; (void)dir; (void)x; (void)w; (void)dy; (void)out; (void)ws; (void)ws_bytes;
    vcc__conv_fail(d, "a bfloat16 convolution needs symmetric, non-negative pads (cuDNN's); this one has "
                      "others: compile it with --precision fp32 or tf32");
}

/* The kernels below are templates over T, the element type of every tensor of the call: float, or
 * __nv_bfloat16 for vcc --precision bf16 (cuDNN's BFLOAT16 tensors, float32 accumulation, tensor-core
 * algorithms allowed); T is deduced from the first tensor, the others must match. */

/* conv_forward: y (N, K, *out) = conv(x (N, C, *in), w (K, C/G, *kernel)) + b (K) */
template <class T>
static inline void conv_forward(VccRt *rt, VccConvDesc *d, const T *x, const typename VccSame<T>::type *w,
                                const typename VccSame<T>::type *b, typename VccSame<T>::type *y, void *ws,
                                size_t ws_bytes)
{
    const float one = 1.0f, zero = 0.0f; /* beta = zero: y is overwritten, which the timed search needs */
    if (!vcc__conv_cudnn_fits(d)) {
        vcc__conv_gemm(rt, d, VCC_CONV_FWD, x, w, NULL, y, ws, ws_bytes);
    } else {
        VccCudnnConv *c = vcc__conv_backend(rt, d, vcc__cudnn_type<T>());
        if (!ws) ws_bytes = 0;
        if (!c->have_fwd || c->fwd_ws > ws_bytes) {
            const size_t fb = sizeof(T);
            int timed = vcc__conv_may_time(rt, zero, y, fb * vcc__conv_elems(d, d->N, d->K, d->out),
                                           x, fb * vcc__conv_elems(d, d->N, d->C, d->in),
                                           w, fb * vcc__conv_elems(d, d->K, d->C / d->G, d->kernel), ws, ws_bytes);
            vcc__conv_pick_fwd(rt, d, c, x, w, y, ws, ws_bytes, timed);
        }
        vcc__conv_set_math(c, c->fwd_math);
        VCC_CUDNN_CHECK(cudnnConvolutionForward(rt->cudnn, &one, c->x, x, c->w, w, c->conv, c->fwd_algo,
                                                ws, ws_bytes, &zero, c->y, y));
    }
    if (b) vcc__conv_bias_forward(d->N, d->K, vcc__conv_spatial(d->nsp, d->out), b, y);
}

/* conv_backward_data: dx (N, C, *in) = conv^T(dy (N, K, *out), w); overwritten */
template <class T>
static inline void conv_backward_data(VccRt *rt, VccConvDesc *d, const T *dy, const typename VccSame<T>::type *w,
                                      typename VccSame<T>::type *dx, void *ws, size_t ws_bytes)
{
    const float one = 1.0f, zero = 0.0f; /* beta = zero: dx is overwritten, which the timed search needs */
    VccCudnnConv *c;
    if (!vcc__conv_cudnn_fits(d)) {
        vcc__conv_gemm(rt, d, VCC_CONV_BWD_DATA, NULL, w, dy, dx, ws, ws_bytes);
        return;
    }
    c = vcc__conv_backend(rt, d, vcc__cudnn_type<T>());
    if (!ws) ws_bytes = 0;
    if (!c->have_bwd_data || c->bwd_data_ws > ws_bytes) {
        const size_t fb = sizeof(T);
        int timed = vcc__conv_may_time(rt, zero, dx, fb * vcc__conv_elems(d, d->N, d->C, d->in),
                                       dy, fb * vcc__conv_elems(d, d->N, d->K, d->out),
                                       w, fb * vcc__conv_elems(d, d->K, d->C / d->G, d->kernel), ws, ws_bytes);
        vcc__conv_pick_bwd_data(rt, d, c, dy, w, dx, ws, ws_bytes, timed);
    }
    vcc__conv_set_math(c, c->bwd_data_math);
    VCC_CUDNN_CHECK(cudnnConvolutionBackwardData(rt->cudnn, &one, c->w, w, c->y, dy, c->conv, c->bwd_data_algo,
                                                 ws, ws_bytes, &zero, c->x, dx));
}

/* conv_backward_filter: dw (K, C/G, *kernel), db (K) or NULL; overwritten */
template <class T>
static inline void conv_backward_filter(VccRt *rt, VccConvDesc *d, const T *x, const typename VccSame<T>::type *dy,
                                        typename VccSame<T>::type *dw, typename VccSame<T>::type *db, void *ws,
                                        size_t ws_bytes)
{
    const float one = 1.0f, zero = 0.0f; /* beta = zero: dw is overwritten, which the timed search needs */
    if (!vcc__conv_cudnn_fits(d)) {
        vcc__conv_gemm(rt, d, VCC_CONV_BWD_FILTER, x, NULL, dy, dw, ws, ws_bytes);
    } else {
        VccCudnnConv *c = vcc__conv_backend(rt, d, vcc__cudnn_type<T>());
        if (!ws) ws_bytes = 0;
        if (!c->have_bwd_filter || c->bwd_filter_ws > ws_bytes) {
            const size_t fb = sizeof(T);
            int timed = vcc__conv_may_time(rt, zero, dw, fb * vcc__conv_elems(d, d->K, d->C / d->G, d->kernel),
                                           x, fb * vcc__conv_elems(d, d->N, d->C, d->in),
                                           dy, fb * vcc__conv_elems(d, d->N, d->K, d->out), ws, ws_bytes);
            vcc__conv_pick_bwd_filter(rt, d, c, x, dy, dw, ws, ws_bytes, timed);
        }
        vcc__conv_set_math(c, c->bwd_filter_math);
        VCC_CUDNN_CHECK(cudnnConvolutionBackwardFilter(rt->cudnn, &one, c->x, x, c->y, dy, c->conv,
                                                       c->bwd_filter_algo, ws, ws_bytes, &zero, c->w, dw));
    }
    if (db) vcc__conv_bias_backward(d->N, d->K, vcc__conv_spatial(d->nsp, d->out), dy, db);
}

/* conv_transpose_forward: ONNX ConvTranspose, y (N, C, *in) = conv^T(x (N, K, *out), w (K, C/G, *kernel))
 * + b (C): the adjoint of the convolution d (cpu/conv.h says how ONNX's shapes map onto d's) */
template <class T>
static inline void conv_transpose_forward(VccRt *rt, VccConvDesc *d, const T *x, const typename VccSame<T>::type *w,
                                          const typename VccSame<T>::type *b, typename VccSame<T>::type *y, void *ws,
                                          size_t ws_bytes)
{
    conv_backward_data(rt, d, x, w, y, ws, ws_bytes);
    if (b) vcc__conv_bias_forward(d->N, d->C, vcc__conv_spatial(d->nsp, d->in), b, y);
}

/* conv_transpose_backward_filter: dw (K, C/G, *kernel) = d's filter gradient with input dy (N, C, *in) and
 * output gradient x (N, K, *out); db (C) = sum of dy over N and space, or NULL; overwritten */
template <class T>
static inline void conv_transpose_backward_filter(VccRt *rt, VccConvDesc *d, const T *x,
                                                  const typename VccSame<T>::type *dy, typename VccSame<T>::type *dw,
                                                  typename VccSame<T>::type *db, void *ws, size_t ws_bytes)
{
    conv_backward_filter(rt, d, dy, x, dw, (T *)NULL, ws, ws_bytes);
    if (db) vcc__conv_bias_backward(d->N, d->C, vcc__conv_spatial(d->nsp, d->in), dy, db);
}

#define VCC_KERNEL VCC_KERNEL_CHECK
#include "../proto/conv.h"
#undef VCC_KERNEL

#endif /* VCC_CUDA_CONV_CUH */
