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

/* vcc__conv_cudnn_dims: d's shapes as cuDNN takes them (both the legacy descriptors and the graph API): the
 * X, W and Y dims (N, C, spatial...; W as K, C/G, kernel...), and per spatial axis the padding, stride and
 * dilation; a 1-D convolution becomes 2-D with a trailing extent-1 axis. Returns the spatial rank given to
 * cuDNN (2 or 3); the arrays hold rank + 2 dims and rank axes. */
static inline int vcc__conv_cudnn_dims(const VccConvDesc *d, int64_t xd[5], int64_t wd[5], int64_t yd[5],
                                       int64_t pad[3], int64_t str[3], int64_t dil[3])
{
    int i, nd = d->nsp == 1 ? 2 : d->nsp;
    xd[0] = yd[0] = d->N;
    xd[1] = d->C;
    yd[1] = wd[0] = d->K;
    wd[1] = d->C / d->G;
    for (i = 0; i < nd; i++) {
        int sp = i < d->nsp;
        xd[2 + i] = sp ? d->in[i] : 1;
        yd[2 + i] = sp ? d->out[i] : 1;
        wd[2 + i] = sp ? d->kernel[i] : 1;
        pad[i] = sp ? d->pad_begin[i] : 0;
        str[i] = sp ? d->stride[i] : 1;
        dil[i] = sp ? d->dilation[i] : 1;
    }
    return nd;
}

/* vcc__conv_backend: the cuDNN descriptors of d for tensors of cuDNN type dt, created on first use (d must
 * fit cuDNN). Every direction of one descriptor runs on one type (exit with a message otherwise). */
static inline VccCudnnConv *vcc__conv_backend(VccRt *rt, VccConvDesc *d, cudnnDataType_t dt)
{
    VccCudnnConv *b;
    int nd, i, xdim[5], xstr[5], ydim[5], ystr[5], wdim[5], odim[5];
    int pad[3], str[3], dil[3];
    int64_t xs = 1, ys = 1, span, xd[5], wd[5], yd[5], pd[3], sd[3], dd[3];

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

    /* cuDNN's int dims, each checked to fit */
    nd = vcc__conv_cudnn_dims(d, xd, wd, yd, pd, sd, dd);
    for (i = 0; i < nd + 2; i++) {
        xdim[i] = vcc__int(xd[i], "conv input dim");
        ydim[i] = vcc__int(yd[i], "conv output dim");
        wdim[i] = vcc__int(wd[i], "conv weight dim");
    }
    for (i = 0; i < nd; i++) {
        pad[i] = vcc__int(pd[i], "conv padding");
        str[i] = vcc__int(sd[i], "conv stride");
        dil[i] = vcc__int(dd[i], "conv dilation");
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

/* vcc__cudnn_log_on: whether the environment variable VCC_CUDNN_LOG is set (read once): the convolutions'
 * cuDNN searches and choices then go to stderr, a line each. */
static inline int vcc__cudnn_log_on(void)
{
    static int on = -1;
    if (on < 0) on = getenv("VCC_CUDNN_LOG") != NULL;
    return on;
}

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
    char geo[160];
    int i, k = 0;
    if (!vcc__cudnn_log_on()) return;
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
            if (vcc__cudnn_log_on()) fprintf(stderr, "vcc cudnn: %s chose algo %d (ws %zu, math %d)\n", dir, (int)*algo, need, (int)*math);
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
            if (vcc__cudnn_log_on()) fprintf(stderr, "vcc cudnn: %s chose fallback algo %d (ws %zu, math %d)\n", dir, (int)*algo, need, (int)*math);
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

/* ---- cuDNN's graph API (cuDNN API docs, "Graph API": the backend descriptors) ----
 * The legacy calls above offer few algorithms for 3-D convolutions: on an H200 (cuDNN 9) r3d_18's convolutions
 * got only algorithms 0, 1 and 3, none on tensor cores, and its tf32 and bf16 steps ran 8 and 20 times slower
 * than PyTorch's, which reaches cuDNN's engines through the graph API. Each direction of a VccCudnnConv
 * therefore first tries that API: one convolution operation (the same tensors, packed NCDHW strides, and the
 * same padding, strides, dilations and groups as the legacy descriptors), cuDNN's engine heuristics (mode A,
 * then the fallback list), and of the engine configurations whose plan finalizes, needs at most the planned
 * workspace and whose numerical notes the precision allows, the fastest when timing is allowed
 * (vcc__conv_may_time's conditions, --cudnn-search time: each candidate runs once untimed, then once timed
 * with CUDA events), else the first. Numerical notes refused:
 *   fp32    TENSOR_CORE (TF32 for float32 data), DOWN_CONVERT_INPUTS, REDUCED_PRECISION_REDUCTION, FFT and
 *           WINOGRAD (the legacy fp32 path ran none of those on these convolutions; the float32 step checks
 *           hold the trainer to PyTorch float32's own distance from float64);
 *   tf32    DOWN_CONVERT_INPUTS (half precision) and REDUCED_PRECISION_REDUCTION;
 *   bf16    REDUCED_PRECISION_REDUCTION (sums stay float32).
 * Engines that compile their kernels at run time (behavior note RUNTIME_COMPILATION) are taken only when no
 * other fits (their plans compile kernels as they are finalized), unless VCC_CUDNN_RTC is set in the
 * environment: then they compete with the others in cuDNN's order. A direction for which nothing fits, or any graph-API call
 * fails, runs on the legacy path, as every direction of bfloat16 tensors does by default and every direction
 * with VCC_CUDNN_API=legacy in the environment (VccRt.conv_api, cuda/base.cuh, says why). */

#define VCC_GRAPH_TRY(call) \
    do { \
        if ((call) != CUDNN_STATUS_SUCCESS) goto fail; \
    } while (0)

/* vcc__graph_align: the largest power of two, at most 16, that divides every non-NULL pointer of ptrs (the
 * byte alignment a plan may assume; PyTorch's cuDNN graph-API convolutions take the same, capped at 16). */
static inline int64_t vcc__graph_align(void *const ptrs[3])
{
    int64_t a = 16;
    for (int i = 0; i < 3; i++)
        while (ptrs[i] && a > 1 && ((uintptr_t)ptrs[i] & (uintptr_t)(a - 1))) a /= 2;
    return a;
}

/* vcc__graph_tensor: a finalized tensor descriptor (dims n, packed row-major strides) of type dt, unique id
 * uid and byte alignment align; NULL on failure. */
static inline cudnnBackendDescriptor_t vcc__graph_tensor(cudnnDataType_t dt, int n, const int64_t *dims, int64_t uid,
                                                         int64_t align)
{
    cudnnBackendDescriptor_t t = NULL;
    int64_t str[8], s = 1;
    int i;
    for (i = n - 1; i >= 0; i--) {
        str[i] = s;
        s *= dims[i];
    }
    VCC_GRAPH_TRY(cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, &t));
    VCC_GRAPH_TRY(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt));
    VCC_GRAPH_TRY(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, n, dims));
    VCC_GRAPH_TRY(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, n, str));
    VCC_GRAPH_TRY(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid));
    VCC_GRAPH_TRY(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align));
    VCC_GRAPH_TRY(cudnnBackendFinalize(t));
    return t;
fail:
    if (t) (void)cudnnBackendDestroyDescriptor(t);
    return NULL;
}

/* the unique ids of a direction's three tensors in its variant pack */
enum { VCC_GRAPH_X = 1, VCC_GRAPH_W = 2, VCC_GRAPH_Y = 3 };

/* vcc__graph_notes_ok: whether an engine's numerical notes suit b's precision (the list above), and in *rtc
 * whether it compiles at run time. 0 when the notes cannot be read. */
static inline int vcc__graph_notes_ok(const VccCudnnConv *b, cudnnBackendDescriptor_t cfg, int *rtc)
{
    cudnnBackendDescriptor_t eng = NULL;
    cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    cudnnBackendBehaviorNote_t beh[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
    int64_t n = 0, nb = 0, i, ok = 1;
    *rtc = 0;
    VCC_GRAPH_TRY(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng));
    VCC_GRAPH_TRY(cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &eng));
    VCC_GRAPH_TRY(cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                           CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n, notes));
    if (cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                                 CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &nb, beh) != CUDNN_STATUS_SUCCESS)
        nb = 0;
    for (i = 0; i < nb; i++)
        if (beh[i] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION) *rtc = 1;
    for (i = 0; i < n; i++) {
        cudnnBackendNumericalNote_t m = notes[i];
        if (m == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION) ok = 0;
        if (b->dtype == CUDNN_DATA_BFLOAT16) continue;
        if (m == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS) ok = 0;
#if !VCC_PRECISION_TF32
        if (m == CUDNN_NUMERICAL_NOTE_TENSOR_CORE || m == CUDNN_NUMERICAL_NOTE_FFT ||
            m == CUDNN_NUMERICAL_NOTE_WINOGRAD || m == CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_4x4 ||
            m == CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_6x6 || m == CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_13x13)
            ok = 0;
#endif
    }
    (void)cudnnBackendDestroyDescriptor(eng);
    return (int)ok;
fail:
    if (eng) (void)cudnnBackendDestroyDescriptor(eng);
    return 0;
}

/* vcc__graph_exec: run plan on the three pointers (in VCC_GRAPH_X, _W, _Y order) and the workspace. */
static inline cudnnStatus_t vcc__graph_exec(VccRt *rt, cudnnBackendDescriptor_t plan, void *const ptrs[3], void *ws)
{
    cudnnBackendDescriptor_t vp = NULL;
    int64_t uids[3] = {VCC_GRAPH_X, VCC_GRAPH_W, VCC_GRAPH_Y};
    cudnnStatus_t st;
    if ((st = cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &vp)) != CUDNN_STATUS_SUCCESS) return st;
    if ((st = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, ptrs)) ==
            CUDNN_STATUS_SUCCESS &&
        (st = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids)) ==
            CUDNN_STATUS_SUCCESS &&
        (st = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws)) ==
            CUDNN_STATUS_SUCCESS &&
        (st = cudnnBackendFinalize(vp)) == CUDNN_STATUS_SUCCESS)
        st = cudnnBackendExecute(rt->cudnn, plan, vp);
    (void)cudnnBackendDestroyDescriptor(vp);
    return st;
}

/* vcc__conv_graph_pick: choose b's plan for direction dir (VCC_CONV_FWD, _BWD_DATA, _BWD_FILTER) against the
 * planned workspace (ws, ws_bytes), as the comment above says, into b->gplan/gws/gstate; ptrs are the call's
 * tensors (VCC_GRAPH_X, _W, _Y order), run by the timed search when timed. */
static inline void vcc__conv_graph_pick(VccRt *rt, const VccConvDesc *d, VccCudnnConv *b, int dir, void *const ptrs[3],
                                        void *ws, size_t ws_bytes, int timed)
{
    static const char *const names[3] = {"forward", "backward data", "backward filter"};
    enum { MAX_CAND = 8 };
    cudnnBackendDescriptor_t tx = NULL, tw = NULL, ty = NULL, conv = NULL, op = NULL, graph = NULL;
    cudnnBackendDescriptor_t heur[2] = {NULL, NULL}, cfgs[2][64], cand[MAX_CAND];
    int64_t ncfg[2] = {0, 0}, xd[5], wd[5], yd[5], pad[3], str[3], dil[3], nsp, h, k, nd;
    size_t cand_ws[MAX_CAND];
    int ncand = 0, best = -1, i, pass, rtc, logging = vcc__cudnn_log_on();
    const int rtc_any = getenv("VCC_CUDNN_RTC") != NULL; /* run-time compiled engines in the first pass */
    float best_ms = 0.0f, one = 1.0f, zero = 0.0f;
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    /* per direction: the operation's descriptor type and its attributes for x, w, y, the convolution,
     * alpha and beta (cuDNN API docs, CUDNN_BACKEND_OPERATION_CONVOLUTION_*_DESCRIPTOR) */
    static const struct {
        cudnnBackendDescriptorType_t type;
        cudnnBackendAttributeName_t x, w, y, conv, alpha, beta;
    } ops[3] = {
        {CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
         CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
         CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
         CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA},
        {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA},
        {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA}};
    cudnnBackendHeurMode_t modes[2] = {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK};

    if (b->gplan[dir]) (void)cudnnBackendDestroyDescriptor(b->gplan[dir]);
    b->gplan[dir] = NULL;
    b->gstate[dir] = -1;
    memset(cfgs, 0, sizeof cfgs);
    /* the legacy descriptors' shapes */
    nsp = nd = vcc__conv_cudnn_dims(d, xd, wd, yd, pad, str, dil);
    b->galign[dir] = vcc__graph_align(ptrs);
    tx = vcc__graph_tensor(b->dtype, (int)nd + 2, xd, VCC_GRAPH_X, b->galign[dir]);
    tw = vcc__graph_tensor(b->dtype, (int)nd + 2, wd, VCC_GRAPH_W, b->galign[dir]);
    ty = vcc__graph_tensor(b->dtype, (int)nd + 2, yd, VCC_GRAPH_Y, b->galign[dir]);
    if (!tx || !tw || !ty) goto fail;
    VCC_GRAPH_TRY(cudnnBackendCreateDescriptor(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, &conv));
    VCC_GRAPH_TRY(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &nsp));
    VCC_GRAPH_TRY(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp));
    VCC_GRAPH_TRY(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode));
    VCC_GRAPH_TRY(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, nsp, dil));
    VCC_GRAPH_TRY(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, nsp, str));
    VCC_GRAPH_TRY(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, nsp, pad));
    VCC_GRAPH_TRY(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, nsp, pad));
    VCC_GRAPH_TRY(cudnnBackendFinalize(conv));
    VCC_GRAPH_TRY(cudnnBackendCreateDescriptor(ops[dir].type, &op));
    VCC_GRAPH_TRY(cudnnBackendSetAttribute(op, ops[dir].x, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &tx));
    VCC_GRAPH_TRY(cudnnBackendSetAttribute(op, ops[dir].w, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &tw));
    VCC_GRAPH_TRY(cudnnBackendSetAttribute(op, ops[dir].y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &ty));
    VCC_GRAPH_TRY(cudnnBackendSetAttribute(op, ops[dir].conv, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv));
    VCC_GRAPH_TRY(cudnnBackendSetAttribute(op, ops[dir].alpha, CUDNN_TYPE_FLOAT, 1, &one));
    VCC_GRAPH_TRY(cudnnBackendSetAttribute(op, ops[dir].beta, CUDNN_TYPE_FLOAT, 1, &zero));
    VCC_GRAPH_TRY(cudnnBackendFinalize(op));
    VCC_GRAPH_TRY(cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &graph));
    VCC_GRAPH_TRY(cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op));
    VCC_GRAPH_TRY(cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &rt->cudnn));
    VCC_GRAPH_TRY(cudnnBackendFinalize(graph));
    /* the engine configurations of heuristics mode A, then of the fallback list */
    for (h = 0; h < 2; h++) {
        int64_t n = 0;
        if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur[h]) != CUDNN_STATUS_SUCCESS) {
            heur[h] = NULL;
            continue;
        }
        if (cudnnBackendSetAttribute(heur[h], CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                     &graph) != CUDNN_STATUS_SUCCESS ||
            cudnnBackendSetAttribute(heur[h], CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &modes[h]) !=
                CUDNN_STATUS_SUCCESS ||
            cudnnBackendFinalize(heur[h]) != CUDNN_STATUS_SUCCESS ||
            cudnnBackendGetAttribute(heur[h], CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &n,
                                     NULL) != CUDNN_STATUS_SUCCESS)
            continue;
        if (n > 64) n = 64;
        for (k = 0; k < n; k++)
            if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfgs[h][k]) != CUDNN_STATUS_SUCCESS) {
                cfgs[h][k] = NULL;
                break;
            }
        n = k;
        if (cudnnBackendGetAttribute(heur[h], CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, n,
                                     &ncfg[h], cfgs[h]) != CUDNN_STATUS_SUCCESS)
            ncfg[h] = 0;
        for (k = 0; k < n; k++) /* created but not filled: not candidates, destroyed below */
            if (k >= ncfg[h] && cfgs[h][k]) (void)cudnnBackendDestroyDescriptor(cfgs[h][k]), cfgs[h][k] = NULL;
    }
    /* the candidates: plans that finalize, fit the workspace and whose notes the precision allows; engines
     * compiled at run time only in a second pass, when the first found none */
    for (pass = 0; pass < (rtc_any ? 1 : 2) && ncand == 0; pass++)
        for (h = 0; h < 2 && ncand < (timed ? MAX_CAND : 1); h++)
            for (k = 0; k < ncfg[h] && ncand < (timed ? MAX_CAND : 1); k++) {
                cudnnBackendDescriptor_t plan = NULL;
                int64_t need = 0, got = 0;
                if (!cfgs[h][k] || !vcc__graph_notes_ok(b, cfgs[h][k], &rtc) || (!rtc_any && rtc != pass)) continue;
                if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan) != CUDNN_STATUS_SUCCESS)
                    continue;
                if (cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &rt->cudnn) ==
                        CUDNN_STATUS_SUCCESS &&
                    cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                             CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfgs[h][k]) == CUDNN_STATUS_SUCCESS &&
                    cudnnBackendFinalize(plan) == CUDNN_STATUS_SUCCESS &&
                    cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &got,
                                             &need) == CUDNN_STATUS_SUCCESS &&
                    need >= 0 && (size_t)need <= ws_bytes) {
                    cand_ws[ncand] = (size_t)need;
                    cand[ncand++] = plan;
                } else {
                    (void)cudnnBackendDestroyDescriptor(plan);
                }
            }
    if (ncand == 0) goto fail;
    best = 0;
    if (timed && ncand > 1) {
        cudaEvent_t e0, e1;
        cudaStream_t stream = 0;
        VCC_CUDNN_CHECK(cudnnGetStream(rt->cudnn, &stream)); /* the events time the stream cuDNN runs on */
        VCC_CUDA_CHECK(cudaEventCreate(&e0));
        VCC_CUDA_CHECK(cudaEventCreate(&e1));
        best = -1;
        for (i = 0; i < ncand; i++) {
            float ms = 0.0f;
            if (vcc__graph_exec(rt, cand[i], ptrs, ws) != CUDNN_STATUS_SUCCESS) { /* the untimed run */
                (void)cudaGetLastError();
                continue;
            }
            VCC_CUDA_CHECK(cudaEventRecord(e0, stream));
            if (vcc__graph_exec(rt, cand[i], ptrs, ws) != CUDNN_STATUS_SUCCESS) {
                (void)cudaGetLastError();
                continue;
            }
            VCC_CUDA_CHECK(cudaEventRecord(e1, stream));
            VCC_CUDA_CHECK(cudaEventSynchronize(e1));
            VCC_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
            if (logging)
                fprintf(stderr, "vcc cudnn graph: %s candidate %d: %.4f ms, ws %zu\n", names[dir], i, (double)ms,
                        cand_ws[i]);
            if (best < 0 || ms < best_ms) best = i, best_ms = ms;
        }
        VCC_CUDA_CHECK(cudaEventDestroy(e0));
        VCC_CUDA_CHECK(cudaEventDestroy(e1));
        if (best < 0) goto fail;
    }
    b->gplan[dir] = cand[best];
    b->gws[dir] = cand_ws[best];
    b->gstate[dir] = 1;
    if (logging)
        fprintf(stderr, "vcc cudnn graph: %s chose candidate %d of %d (ws %zu of %zu planned, %s)\n", names[dir], best,
                ncand, cand_ws[best], ws_bytes, timed && ncand > 1 ? "timed" : "first fitting");
fail:
    if (b->gstate[dir] != 1 && logging)
        fprintf(stderr, "vcc cudnn graph: %s: no plan of the graph API fits (%d candidates); the legacy path runs it\n",
                names[dir], ncand);
    for (i = 0; i < ncand; i++)
        if (i != best || b->gstate[dir] != 1) (void)cudnnBackendDestroyDescriptor(cand[i]);
    for (h = 0; h < 2; h++) {
        for (k = 0; k < 64; k++)
            if (cfgs[h][k]) (void)cudnnBackendDestroyDescriptor(cfgs[h][k]);
        if (heur[h]) (void)cudnnBackendDestroyDescriptor(heur[h]);
    }
    if (graph) (void)cudnnBackendDestroyDescriptor(graph);
    if (op) (void)cudnnBackendDestroyDescriptor(op);
    if (conv) (void)cudnnBackendDestroyDescriptor(conv);
    if (tx) (void)cudnnBackendDestroyDescriptor(tx);
    if (tw) (void)cudnnBackendDestroyDescriptor(tw);
    if (ty) (void)cudnnBackendDestroyDescriptor(ty);
}

/* vcc__conv_graph_run: direction dir of d on the graph API's plan (choosing it at the first call, and again
 * when a call's planned workspace is smaller than the plan needs): 1 when it ran, 0 when the legacy path must
 * run it (rt->conv_api says so for b's data type, or no plan fits). ptrs: the tensors in VCC_GRAPH_X, _W, _Y order (x, w, y
 * forward; dx, w, dy backward data; x, dw, dy backward filter), the last written one overwritten (beta 0).
 * A plan whose execution cuDNN refuses sends the direction to the legacy path. Its choice is made again when
 * a call's pointers are less aligned than the plan assumed. */
static inline int vcc__conv_graph_run(VccRt *rt, const VccConvDesc *d, VccCudnnConv *b, int dir, void *const ptrs[3],
                                      void *ws, size_t ws_bytes, int timed)
{
    cudnnStatus_t st;
    if (rt->conv_api == VCC_CONV_API_LEGACY || (rt->conv_api == VCC_CONV_API_AUTO && b->dtype != CUDNN_DATA_FLOAT))
        return 0;
    if (b->gstate[dir] == 0 ||
        (b->gstate[dir] == 1 && (b->gws[dir] > ws_bytes || vcc__graph_align(ptrs) < b->galign[dir])))
        vcc__conv_graph_pick(rt, d, b, dir, ptrs, ws, ws_bytes, timed);
    if (b->gstate[dir] != 1) return 0;
    st = vcc__graph_exec(rt, b->gplan[dir], ptrs, ws);
    if (st != CUDNN_STATUS_SUCCESS) { /* refused at launch: this direction goes to the legacy path for good */
        if (vcc__cudnn_log_on())
            fprintf(stderr, "vcc cudnn graph: execution refused (%s); the legacy path runs this direction\n",
                    cudnnGetErrorString(st));
        (void)cudnnBackendDestroyDescriptor(b->gplan[dir]);
        b->gplan[dir] = NULL;
        b->gstate[dir] = -1;
        return 0;
    }
    return 1;
}
#undef VCC_GRAPH_TRY

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
        const size_t fb = sizeof(T);
        void *const ptrs[3] = {(void *)x, (void *)w, (void *)y};
        if (!ws) ws_bytes = 0;
        int timed = vcc__conv_may_time(rt, zero, y, fb * vcc__conv_elems(d, d->N, d->K, d->out),
                                       x, fb * vcc__conv_elems(d, d->N, d->C, d->in),
                                       w, fb * vcc__conv_elems(d, d->K, d->C / d->G, d->kernel), ws, ws_bytes);
        if (!vcc__conv_graph_run(rt, d, c, VCC_CONV_FWD, ptrs, ws, ws_bytes, timed)) {
            if (!c->have_fwd || c->fwd_ws > ws_bytes) vcc__conv_pick_fwd(rt, d, c, x, w, y, ws, ws_bytes, timed);
            vcc__conv_set_math(c, c->fwd_math);
            VCC_CUDNN_CHECK(cudnnConvolutionForward(rt->cudnn, &one, c->x, x, c->w, w, c->conv, c->fwd_algo,
                                                    ws, ws_bytes, &zero, c->y, y));
        }
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
    const size_t fb = sizeof(T);
    void *const ptrs[3] = {(void *)dx, (void *)w, (void *)dy};
    int timed = vcc__conv_may_time(rt, zero, dx, fb * vcc__conv_elems(d, d->N, d->C, d->in),
                                   dy, fb * vcc__conv_elems(d, d->N, d->K, d->out),
                                   w, fb * vcc__conv_elems(d, d->K, d->C / d->G, d->kernel), ws, ws_bytes);
    if (vcc__conv_graph_run(rt, d, c, VCC_CONV_BWD_DATA, ptrs, ws, ws_bytes, timed)) return;
    if (!c->have_bwd_data || c->bwd_data_ws > ws_bytes) vcc__conv_pick_bwd_data(rt, d, c, dy, w, dx, ws, ws_bytes, timed);
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
        const size_t fb = sizeof(T);
        void *const ptrs[3] = {(void *)x, (void *)dw, (void *)dy};
        if (!ws) ws_bytes = 0;
        int timed = vcc__conv_may_time(rt, zero, dw, fb * vcc__conv_elems(d, d->K, d->C / d->G, d->kernel),
                                       x, fb * vcc__conv_elems(d, d->N, d->C, d->in),
                                       dy, fb * vcc__conv_elems(d, d->N, d->K, d->out), ws, ws_bytes);
        if (!vcc__conv_graph_run(rt, d, c, VCC_CONV_BWD_FILTER, ptrs, ws, ws_bytes, timed)) {
            if (!c->have_bwd_filter || c->bwd_filter_ws > ws_bytes)
                vcc__conv_pick_bwd_filter(rt, d, c, x, dy, dw, ws, ws_bytes, timed);
            vcc__conv_set_math(c, c->bwd_filter_math);
            VCC_CUDNN_CHECK(cudnnConvolutionBackwardFilter(rt->cudnn, &one, c->x, x, c->y, dy, c->conv,
                                                           c->bwd_filter_algo, ws, ws_bytes, &zero, c->w, dw));
        }
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
