/*
 * cpu/conv_dnnl.h - oneDNN (DNNL 2.x C API, dnnl.h) as the C target's convolution backend for
 * conv_forward, conv_backward_data and conv_backward_filter (cpu/conv.h calls vcc_dnnl_conv first and
 * falls back to its chunked im2col path when it returns 0: OpenBLAS's sgemm, oneDNN's dnnl_sgemm for the
 * weight gradients). Compiled only with
 * -DVCC_CONV_DNNL (vcc --cpu-conv dnnl writes that define into the program); link with -ldnnl and build
 * with -fopenmp (Debian's libdnnl 2.6 threads with GCC's OpenMP runtime, libgomp).
 *
 * Shapes as in cpu/conv.h: x (N, C, *in), w (K, C/G, *kernel), b (K), y (N, K, *out), row-major
 * (oneDNN's ncw/nchw/ncdhw and oiw/oihw/oidhw, goiw/goihw/goidhw for groups > 1).
 *
 * Memory: every byte oneDNN touches is either a kernel argument (arena tensors) or inside the op's
 * planned workspace ws (ws_bytes). Each primitive is created with dnnl_scratchpad_mode_user, so its
 * scratchpad is a slice of ws; where the primitive prefers a blocked layout (format_tag any, e.g.
 * nCdhw8c on AVX2) the blocked copies of its operands are slices of ws too, filled and emptied by
 * reorder primitives (their own scratchpads share the conv's slice: they never run at the same time).
 * ws is laid out as [operand 0 | operand 1 | operand 2 | accumulator | scratchpad], each slice 64-byte
 * aligned; the accumulator (the plain weight gradient, (K, C/G, *kernel)) only for a weight-gradient
 * pass that runs in batch chunks.
 * The sizes are known only once the primitive is created (they depend on the CPU's ISA and the
 * thread count), so the program queries them at the first call of each pass of each descriptor (and
 * workspace size) and uses oneDNN only when they fit ws_bytes; otherwise that pass of that conv stays on
 * im2col for the whole run (the decision is cached, so one run always takes the same path).
 * Executions: the whole batch, else nb samples (the largest divisor of N that fits), else, for the
 * forward and backward-data passes of a conv with a spatial dim of kernel 1, stride 1 and no padding
 * (R(2+1)D's (1, 3, 3) and (3, 1, 1) convolutions, 1x1x1 ones), one sample in slabs along that dim:
 * an output position there reads only the input position of the same index, so each slab is a
 * convolution of its own, and x and y are viewed through oneDNN memory descriptors with the whole
 * tensors' strides. Each output element sums the same products as in one execution.
 *
 * Winograd: the weight-gradient passes (ConvGradFilter, ConvTransposeGradFilter) of a convolution with a
 * 3x3 kernel of stride 1 and pads 1 over 2-D images and channels in multiples of 16 run as oneDNN's
 * Winograd F(4x4, 3x3) convolution where that fits ws (AVX-512:
 * jit_wino_4x3): a 2-D conv; a 3-D one with one live depth tap (mc3_18's and R(2+1)D's (1, 3, 3)
 * convolutions), the depth positions of one sample as its batch of images (vcc_dnnl_wino_tiles); a 3x3x3
 * one (r3d_18's) as three 2-D ones, one per depth tap, that add up (VccDnnlTaps). It does about half the
 * work of the direct kernel (bench/README.md, "Winograd"); its scratchpad holds the transformed weights
 * and tiles, which ir/ops/conv.c's dnnl_wino_ws_bytes sizes the workspace for. Its sums round
 * differently, a few float32 ulps further from float64 than a direct sum, so the passes whose values feed
 * others stay on the direct kernels: the forward passes (Conv's, and ConvTranspose's through the
 * backward-data pass, VCC_DNNL_FORWARD_ROLE), as every later value of the step inherits their rounding
 * (with mc3_18's forward through Winograd too, a layer4 gradient landed 3 times PyTorch float32's own
 * distance from float64: e2e_grads_mc3_18_dnnl), and the backward-data passes, as every gradient upstream
 * inherits theirs (through Winograd, s3d_small's second step on an AVX-512 Xeon had BN parameter updates
 * up to 138 times their allowance: e2e_model_steps_s3d_small_dnnl). A weight gradient's rounding stays in
 * that gradient.
 *
 * Cache: the primitives, their memory objects and the decision live in d->backend (VccDnnlConv),
 * created once per descriptor, workspace size and pass; the engine and stream in rt->conv_state (VccDnnlState), which
 * also lists the descriptors so vcc_rt_destroy frees everything at exit.
 *
 * Weight gradients: only through a direct (JIT) implementation. Where oneDNN's choice is its gemm
 * convolution (every shape on AVX2, the small-spatial ones on AVX-512), that is no faster than the
 * im2col path here and needs a scratchpad of about (threads + 1) times the weights (bench/conv), so the
 * pass stays on im2col. The batch is a sum there, so a pass over nb < N samples per execution writes
 * the first chunk's gradient into dw and each later chunk's into the accumulator, added into dw in
 * chunk order (a fixed order for a fixed ws and thread count).
 *
 * Dead taps: kernel taps that read only zero padding for every output position (a 3x3x3 kernel on a clip
 * down to depth 1, as in r3d_18's layer4) are left out: oneDNN runs the kernel cut to the taps that read
 * the input, with the pads cut to match, and reads the weights (writes their gradient, whose dropped
 * taps are set to 0) through a window of the whole tensor (vcc_dnnl_live_taps). Its blocked weight copy
 * is that much smaller too (a third for r3d_18's layer4, which then fits the default workspace).
 *
 * Layouts: VCC_DNNL_PLAIN (compile-time define) asks oneDNN for the operands' own layouts (its gemm
 * convolution, im2col inside the scratchpad); without it, format_tag any (its direct JIT kernels
 * on blocked layouts) with reorders. bench/conv measures both.
 *
 * Errors: a oneDNN call that fails while running a primitive that was created aborts with the
 * status (an internal error, as in cpu/base.h); a descriptor oneDNN does not take (negative pads of a
 * cropping ConvTranspose, a shape it refuses) makes creation fail, and that pass uses im2col.
 * Source: oneDNN 2.6 developer guide, "Convolution", "Memory Format Propagation", "Primitive
 * Attributes: Scratchpad", "Reorder" (https://oneapi-src.github.io/oneDNN/v2.6/).
 */
#ifndef VCC_CPU_CONV_DNNL_H
#define VCC_CPU_CONV_DNNL_H

#include "base.h"
#include "conv_rules.h" /* the slab, live-tap and Winograd rules, shared with the compiler */
#include <dnnl.h>

/* The passes of one convolution descriptor (the forward pass with and without a bias are two
 * primitives: one descriptor may serve a Conv with a bias and one without). */
enum { VCC_DNNL_FWD = 0, VCC_DNNL_BWD_DATA = 1, VCC_DNNL_BWD_WEIGHTS = 2, VCC_DNNL_FWD_BIAS = 3 };
/* With VCC_DNNL_BWD_DATA: the pass computes a forward op's output (ConvTranspose's), and runs as a forward
 * pass does (no Winograd; its own cached decision, slot VCC_DNNL_SLOTS - 1). */
#define VCC_DNNL_FORWARD_ROLE 8
#define VCC_DNNL_SLOTS 5

/* One pass of one descriptor: the conv primitive, for each of its three operands (inputs 0 and 1,
 * output 2, in the order of the pass's kernel arguments) the user's memory object (plain layout, the
 * arena pointer set at each call) and, when the primitive wants another layout, its memory object in
 * ws and the reorder between them; the scratchpad slice; state 0 not tried, 1 usable, -1 use im2col. */
typedef struct {
    int state;
    dnnl_primitive_t conv;
    dnnl_memory_t user[3], prim[3], bias, scratch;
    dnnl_primitive_t reorder[3];
    size_t off[3], acc_off, scratch_off, bytes; /* slices of ws; bytes: what the pass needs in all */
    int64_t nb;                        /* samples per execution (a divisor of N) */
    int64_t slab;                      /* 0, or with nb 1: positions of spatial dim vcc_dnnl_slab_dim(d) per
                                          execution (a divisor of that dim's extent) */
    int64_t woff;                      /* floats from w (dw) to its box of live taps (vcc_dnnl_live_taps) */
    int trimmed;                       /* the box is smaller than the kernel */
    int wino;                          /* oneDNN's Winograd convolution (vcc_dnnl_wino_tiles); for a 3-D conv,
                                          slab: depth positions per execution, the batch of a 2-D one */
} VccDnnlPass;

/* The weight-gradient pass of a 3x3x3 convolution as three 2-D Winograd convolutions, one per depth tap
 * (vcc_dnnl_taps_ok): per tap t (0, 1, 2: the depth offsets -1, 0, +1) its primitive over the images it
 * reaches; the D-image views of one sample's x and dy (user) and their blocked copies (blk), per tap the
 * memory objects that see a range of those copies; the reorders between them; the weight gradient's view
 * per tap and its blocked copy; state 0 not tried, 1 usable, -1 not. */
typedef struct {
    int state;
    dnnl_primitive_t conv[3], rin[2], rw[3];
    dnnl_memory_t user[2], blk[2], tap[3][2], wuser[3], wblk, scratch;
    size_t off[2], wblk_off, acc_off, scratch_off, img[2], bytes;
} VccDnnlTaps;

/* d->backend under this backend: the four passes for one workspace size, the descriptor's passes for
 * its other workspace sizes (alt: nodes of one geometry whose workspaces the plan shrank differently
 * each decide for their own bytes), and the next one in VccDnnlState's list. */
typedef struct VccDnnlConv {
    VccDnnlPass pass[VCC_DNNL_SLOTS];
    VccDnnlTaps taps; /* the weight-gradient pass's, where it runs as three Winograd taps */
    size_t ws_bytes;
    struct VccDnnlConv *alt, *next;
} VccDnnlConv;

/* rt->conv_state: the CPU engine and an in-order stream, and every VccDnnlConv made. */
typedef struct {
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    VccDnnlConv *convs;
} VccDnnlState;

#define VCC_DNNL_CALL(call)                                                                      \
    do {                                                                                         \
        dnnl_status_t st_ = (call);                                                              \
        VCC_CPU_CHECK(st_ == dnnl_success, "oneDNN: %s returned status %d", #call, (int)st_);    \
    } while (0)

/* vcc_dnnl_pass_free: destroy what vcc_dnnl_pass_make created (NULL members are skipped). */
VCC_CPU_FN void vcc_dnnl_pass_free(VccDnnlPass *p)
{
    int i;
    if (p->conv) dnnl_primitive_destroy(p->conv);
    for (i = 0; i < 3; i++) {
        if (p->user[i]) dnnl_memory_destroy(p->user[i]);
        if (p->prim[i]) dnnl_memory_destroy(p->prim[i]);
        if (p->reorder[i]) dnnl_primitive_destroy(p->reorder[i]);
    }
    if (p->bias) dnnl_memory_destroy(p->bias);
    if (p->scratch) dnnl_memory_destroy(p->scratch);
    memset(p, 0, sizeof *p);
}

/* vcc_dnnl_taps_free: destroy what vcc_dnnl_taps_make created (NULL members are skipped). */
VCC_CPU_FN void vcc_dnnl_taps_free(VccDnnlTaps *t)
{
    int i, j;
    for (i = 0; i < 3; i++) {
        if (t->conv[i]) dnnl_primitive_destroy(t->conv[i]);
        if (t->rw[i]) dnnl_primitive_destroy(t->rw[i]);
        if (t->wuser[i]) dnnl_memory_destroy(t->wuser[i]);
        for (j = 0; j < 2; j++)
            if (t->tap[i][j]) dnnl_memory_destroy(t->tap[i][j]);
    }
    for (i = 0; i < 2; i++) {
        if (t->rin[i]) dnnl_primitive_destroy(t->rin[i]);
        if (t->user[i]) dnnl_memory_destroy(t->user[i]);
        if (t->blk[i]) dnnl_memory_destroy(t->blk[i]);
    }
    if (t->wblk) dnnl_memory_destroy(t->wblk);
    if (t->scratch) dnnl_memory_destroy(t->scratch);
    memset(t, 0, sizeof *t);
}

/* vcc_dnnl_state_free: rt->conv_state_free for this backend: every descriptor's primitives, the
 * stream and the engine. */
VCC_CPU_FN void vcc_dnnl_state_free(void *state)
{
    VccDnnlState *s = (VccDnnlState *)state;
    VccDnnlConv *c, *next;
    int i;
    for (c = s->convs; c; c = next) {
        next = c->next;
        for (i = 0; i < VCC_DNNL_SLOTS; i++) vcc_dnnl_pass_free(&c->pass[i]);
        vcc_dnnl_taps_free(&c->taps);
        free(c);
    }
    if (s->stream) dnnl_stream_destroy(s->stream);
    if (s->engine) dnnl_engine_destroy(s->engine);
    free(s);
}

/* vcc_dnnl_state: rt's engine and stream, made at the first call (aborts when oneDNN has no CPU
 * engine). */
VCC_CPU_FN VccDnnlState *vcc_dnnl_state(VccRt *rt)
{
    VccDnnlState *s = (VccDnnlState *)rt->conv_state;
    if (s) return s;
    s = (VccDnnlState *)calloc(1, sizeof *s);
    VCC_CPU_CHECK(s != NULL, "out of memory for oneDNN's state");
    VCC_DNNL_CALL(dnnl_engine_create(&s->engine, dnnl_cpu, 0));
    VCC_DNNL_CALL(dnnl_stream_create(&s->stream, s->engine, dnnl_stream_default_flags));
    rt->conv_state = s;
    rt->conv_state_free = vcc_dnnl_state_free;
    return s;
}

/* vcc_dnnl_weight_floats: the elements of d's weights (K, C/G, *kernel). */
VCC_CPU_FN int64_t vcc_dnnl_weight_floats(const VccConvDesc *d)
{
    int64_t ne = d->K * (d->C / d->G);
    int i;
    for (i = 0; i < d->nsp; i++) ne *= d->kernel[i];
    return ne;
}

/* The most images per Winograd execution (a build-time cap, for tests: -DVCC_DNNL_WINO_MAX_IMAGES=k makes a
 * 3-D conv run in slabs of depth positions; default no cap). */
#ifndef VCC_DNNL_WINO_MAX_IMAGES
#define VCC_DNNL_WINO_MAX_IMAGES ((int64_t)1 << 40)
#endif

/* vcc_dnnl_view: md as the plain (row-major) tensor of dims full[0..nd-1] seen through a window of
 * dims win[0..nd-1] (a slab: the same strides as the whole tensor). */
VCC_CPU_FN int vcc_dnnl_view(dnnl_memory_desc_t *md, int nd, const dnnl_dim_t *full, const dnnl_dim_t *win)
{
    dnnl_dims_t st;
    int i;
    st[nd - 1] = 1;
    for (i = nd - 2; i >= 0; i--) st[i] = st[i + 1] * full[i + 1];
    return dnnl_memory_desc_init_by_strides(md, nd, win, dnnl_f32, st) != dnnl_success;
}

/* vcc_dnnl_mds: d's memory descriptors for nb samples in the user's (plain) layouts: x (nb, C, *in),
 * w, y (nb, K, *out), b ((K), tag x); with slab > 0 (and nb 1), x and y are windows of slab positions
 * along spatial dim vcc_dnnl_slab_dim(d), with the strides of the whole tensors; where live[i] (the taps
 * vcc_dnnl_live_taps keeps) is below a kernel extent, w is the window of live[] taps of the whole
 * weights (its offset is the caller's). */
VCC_CPU_FN int vcc_dnnl_mds(const VccConvDesc *d, int64_t nb, int64_t slab, const int64_t *live,
                            dnnl_memory_desc_t *x, dnnl_memory_desc_t *w, dnnl_memory_desc_t *y,
                            dnnl_memory_desc_t *b)
{
    static const dnnl_format_tag_t act[3] = {dnnl_ncw, dnnl_nchw, dnnl_ncdhw};
    static const dnnl_format_tag_t wt[3] = {dnnl_oiw, dnnl_oihw, dnnl_oidhw};
    static const dnnl_format_tag_t gwt[3] = {dnnl_goiw, dnnl_goihw, dnnl_goidhw};
    dnnl_dims_t xd, wd, yd, bd;
    int i, g = d->G > 1, wn = 2 + d->nsp + g;
    xd[0] = yd[0] = nb;
    xd[1] = d->C;
    yd[1] = d->K;
    if (g) {
        wd[0] = d->G;
        wd[1] = d->K / d->G;
        wd[2] = d->C / d->G;
    } else {
        wd[0] = d->K;
        wd[1] = d->C;
    }
    for (i = 0; i < d->nsp; i++) {
        xd[2 + i] = d->in[i];
        yd[2 + i] = d->out[i];
        wd[2 + g + i] = d->kernel[i];
    }
    bd[0] = d->K;
    if (dnnl_memory_desc_init_by_tag(b, 1, bd, dnnl_f32, dnnl_x) != dnnl_success) return 1;
    {
        dnnl_dims_t ww;
        int trimmed = 0;
        memcpy(ww, wd, sizeof ww);
        for (i = 0; i < d->nsp; i++) {
            ww[2 + g + i] = live[i];
            trimmed |= live[i] < d->kernel[i];
        }
        if (trimmed ? vcc_dnnl_view(w, wn, wd, ww)
                    : dnnl_memory_desc_init_by_tag(w, wn, wd, dnnl_f32, g ? gwt[d->nsp - 1] : wt[d->nsp - 1]) !=
                          dnnl_success)
            return 1;
    }
    if (slab > 0) {
        int c = vcc_dnnl_slab_dim(d);
        dnnl_dims_t xw, yw;
        if (c < 0) return 1;
        memcpy(xw, xd, sizeof xw);
        memcpy(yw, yd, sizeof yw);
        xw[2 + c] = yw[2 + c] = slab;
        return vcc_dnnl_view(x, 2 + d->nsp, xd, xw) || vcc_dnnl_view(y, 2 + d->nsp, yd, yw);
    }
    return dnnl_memory_desc_init_by_tag(x, 2 + d->nsp, xd, dnnl_f32, act[d->nsp - 1]) != dnnl_success ||
           dnnl_memory_desc_init_by_tag(y, 2 + d->nsp, yd, dnnl_f32, act[d->nsp - 1]) != dnnl_success;
}

/* vcc_dnnl_wino_mds: d's memory descriptors for a Winograd pass (vcc_dnnl_wino_tiles), as a 2-D
 * convolution: a 2-D conv's x (nb, C, H, W), w (K, C, 3, 3), y (nb, K, H, W); a 3-D conv's one sample
 * seen as slab images (depth positions) through windows with the whole tensors' strides, x (slab, C, H, W),
 * y (slab, K, H, W), and w (K, C, 3, 3) the window of its live depth tap (its offset is the caller's). */
VCC_CPU_FN int vcc_dnnl_wino_mds(const VccConvDesc *d, int64_t nb, int64_t slab, dnnl_memory_desc_t *x,
                                 dnnl_memory_desc_t *w, dnnl_memory_desc_t *y, dnnl_memory_desc_t *b)
{
    const int64_t H = d->in[d->nsp - 2], W = d->in[d->nsp - 1], kd = d->nsp == 3 ? d->kernel[0] : 1;
    const int64_t D = d->nsp == 3 ? d->in[0] : 1;
    dnnl_dims_t xd = {d->nsp == 3 ? slab : nb, d->C, H, W}, yd = {xd[0], d->K, H, W}, wd = {d->K, d->C, 3, 3};
    /* strides: a 2-D conv's own; a 3-D one's images one depth position apart, channels D positions */
    dnnl_dims_t xs = {H * W, D * H * W, W, 1}, ys = {H * W, D * H * W, W, 1};
    dnnl_dims_t ws = {d->C * kd * 9, kd * 9, 3, 1}, bd = {d->K};
    if (d->nsp == 2) {
        xs[0] = d->C * H * W;
        ys[0] = d->K * H * W;
    }
    return dnnl_memory_desc_init_by_tag(b, 1, bd, dnnl_f32, dnnl_x) != dnnl_success ||
           dnnl_memory_desc_init_by_strides(x, 4, xd, dnnl_f32, xs) != dnnl_success ||
           dnnl_memory_desc_init_by_strides(y, 4, yd, dnnl_f32, ys) != dnnl_success ||
           dnnl_memory_desc_init_by_strides(w, 4, wd, dnnl_f32, ws) != dnnl_success;
}

/* vcc_dnnl_any: md with the layout left to the primitive (VCC_DNNL_PLAIN: md itself). */
VCC_CPU_FN dnnl_memory_desc_t vcc_dnnl_any(const dnnl_memory_desc_t *md)
{
    dnnl_memory_desc_t a = *md;
#ifndef VCC_DNNL_PLAIN
    if (dnnl_memory_desc_init_by_tag(&a, md->ndims, md->dims, dnnl_f32, dnnl_format_tag_any) != dnnl_success)
        a = *md;
#endif
    return a;
}

/* vcc_dnnl_pd_scratch: the bytes of the scratchpad primitive descriptor pd needs (0: none). */
VCC_CPU_FN size_t vcc_dnnl_pd_scratch(const_dnnl_primitive_desc_t pd)
{
    const dnnl_memory_desc_t *m = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    return m ? dnnl_memory_desc_get_size(m) : 0;
}

/* vcc_dnnl_scratch_make: *mem, a memory object of `bytes` bytes (u8, its handle set at each call) for a
 * pass's scratchpad; nonzero when oneDNN refuses it. */
VCC_CPU_FN int vcc_dnnl_scratch_make(VccDnnlState *s, size_t bytes, dnnl_memory_t *mem)
{
    dnnl_memory_desc_t sm;
    dnnl_dims_t sd;
    sd[0] = (dnnl_dim_t)bytes;
    return dnnl_memory_desc_init_by_tag(&sm, 1, sd, dnnl_u8, dnnl_x) != dnnl_success ||
           dnnl_memory_create(mem, &sm, s->engine, DNNL_MEMORY_NONE) != dnnl_success;
}

/* vcc_dnnl_reorder_make: *r, the reorder from layout `from` to `to` (its scratchpad user-managed by attr),
 * *scratch raised to its scratchpad's bytes; nonzero when oneDNN refuses it. */
VCC_CPU_FN int vcc_dnnl_reorder_make(VccDnnlState *s, const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to,
                                     const_dnnl_primitive_attr_t attr, dnnl_primitive_t *r, size_t *scratch)
{
    dnnl_primitive_desc_t rpd = NULL;
    dnnl_status_t st = dnnl_reorder_primitive_desc_create(&rpd, from, s->engine, to, s->engine, attr);
    size_t sz;
    if (st != dnnl_success) return 1;
    sz = vcc_dnnl_pd_scratch(rpd);
    if (sz > *scratch) *scratch = sz;
    st = dnnl_primitive_create(r, rpd);
    dnnl_primitive_desc_destroy(rpd);
    return st != dnnl_success;
}

/* vcc_dnnl_round: n rounded up to a multiple of 64 (the slices of ws). */
VCC_CPU_FN size_t vcc_dnnl_round(size_t n) { return (n + 63) & ~(size_t)63; }

/* vcc_dnnl_pass_try: create pass `which` of d for nb samples (and, slab > 0, slab positions along
 * vcc_dnnl_slab_dim(d)) per execution into p (p->state 1), or leave p->state -1 (p->bytes: what it would
 * need, 0 when unknown) when oneDNN refuses the descriptor or the pass needs more than ws_bytes. With
 * wino, oneDNN's Winograd convolution (vcc_dnnl_wino_tiles) for nb images of a 2-D conv, or one sample
 * of a 3-D conv in slabs of slab depth positions. */
VCC_CPU_FN void vcc_dnnl_pass_try(VccDnnlState *s, const VccConvDesc *d, int which, int64_t nb, int64_t slab,
                                  int wino, VccDnnlPass *p, size_t ws_bytes)
{
    dnnl_memory_desc_t x, w, y, b, xa, wa, ya;
    dnnl_convolution_desc_t fd, cd;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t hint = NULL, pd = NULL;
    dnnl_dims_t strides, dil, pl, pr;
    int64_t live[3];
    const dnnl_memory_desc_t *user[3], *want[3];
    static const dnnl_query_t q[4][3] = {
        {dnnl_query_src_md, dnnl_query_weights_md, dnnl_query_dst_md},
        {dnnl_query_diff_dst_md, dnnl_query_weights_md, dnnl_query_diff_src_md},
        {dnnl_query_src_md, dnnl_query_diff_dst_md, dnnl_query_diff_weights_md},
        {dnnl_query_src_md, dnnl_query_weights_md, dnnl_query_dst_md}};
    const int fwd = which == VCC_DNNL_FWD || which == VCC_DNNL_FWD_BIAS;
    const dnnl_alg_kind_t alg = wino ? dnnl_convolution_winograd : dnnl_convolution_direct;
    size_t scratch = 0, off = 0;
    int i, ok = 0;
    memset(p, 0, sizeof *p);
    p->state = -1;
    p->nb = nb;
    p->slab = slab;
    p->wino = wino;
    for (i = 0; i < d->nsp; i++) {
        int64_t lo, j, wstride = 1;
        if (d->pad_begin[i] < 0 || d->pad_end[i] < 0) return; /* a cropping ConvTranspose: im2col */
        vcc_dnnl_live_taps(d, i, &lo, &live[i]);
        for (j = i + 1; j < d->nsp; j++) wstride *= d->kernel[j];
        p->woff += lo * wstride;
        p->trimmed |= live[i] < d->kernel[i];
        strides[i] = d->stride[i];
        dil[i] = d->dilation[i] - 1; /* oneDNN counts dilation from 0 */
        pl[i] = d->pad_begin[i] - lo * d->dilation[i];
        pr[i] = d->pad_end[i] - (d->kernel[i] - lo - live[i]) * d->dilation[i];
    }
    if (wino) { /* a 2-D convolution: 3x3, stride 1, pads 1 (the depth tap's offset is in p->woff) */
        for (i = 0; i < 2; i++) {
            strides[i] = 1;
            dil[i] = 0;
            pl[i] = pr[i] = 1;
        }
        if (vcc_dnnl_wino_mds(d, nb, slab, &x, &w, &y, &b)) return;
    } else if (vcc_dnnl_mds(d, nb, slab, live, &x, &w, &y, &b)) {
        return;
    }
    xa = vcc_dnnl_any(&x);
    wa = vcc_dnnl_any(&w);
    ya = vcc_dnnl_any(&y);
    if (dnnl_primitive_attr_create(&attr) != dnnl_success) return;
    if (dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) != dnnl_success) goto done;
    if (dnnl_dilated_convolution_forward_desc_init(&fd, dnnl_forward_training, alg, &xa, &wa,
                                                   which == VCC_DNNL_FWD_BIAS ? &b : NULL, &ya, strides, dil, pl,
                                                   pr) != dnnl_success)
        goto done;
    if (fwd) {
        cd = fd;
    } else {
        if (dnnl_primitive_desc_create(&hint, &fd, attr, s->engine, NULL) != dnnl_success) goto done;
        if ((which == VCC_DNNL_BWD_DATA
                 ? dnnl_dilated_convolution_backward_data_desc_init(&cd, alg, &xa, &wa, &ya, strides, dil, pl, pr)
                 : dnnl_dilated_convolution_backward_weights_desc_init(&cd, alg, &xa, &wa, NULL, &ya, strides, dil,
                                                                       pl, pr)) !=
            dnnl_success)
            goto done;
    }
    if (dnnl_primitive_desc_create(&pd, &cd, attr, s->engine, hint) != dnnl_success) goto done;
    if (which == VCC_DNNL_BWD_WEIGHTS) { /* a direct kernel only: the gemm convolution is refused */
        const char *impl = NULL;
        if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success || !impl ||
            strstr(impl, "gemm"))
            goto done;
    }
    user[0] = which == VCC_DNNL_BWD_DATA ? &y : &x;
    user[1] = which == VCC_DNNL_BWD_WEIGHTS ? &y : &w;
    user[2] = fwd ? &y : which == VCC_DNNL_BWD_DATA ? &x : &w;
    scratch = vcc_dnnl_pd_scratch(pd);
    for (i = 0; i < 3; i++) {
        want[i] = dnnl_primitive_desc_query_md(pd, q[which][i], 0);
        if (!want[i]) goto done;
        if (dnnl_memory_create(&p->user[i], user[i], s->engine, DNNL_MEMORY_NONE) != dnnl_success) goto done;
        p->off[i] = off;
        if (dnnl_memory_desc_equal(want[i], user[i])) continue;
        /* a blocked copy in ws and the reorder into it (inputs) or out of it (the output) */
        if (vcc_dnnl_reorder_make(s, i < 2 ? user[i] : want[i], i < 2 ? want[i] : user[i], attr, &p->reorder[i],
                                  &scratch))
            goto done;
        if (dnnl_memory_create(&p->prim[i], want[i], s->engine, DNNL_MEMORY_NONE) != dnnl_success) goto done;
        off += vcc_dnnl_round(dnnl_memory_desc_get_size(want[i]));
    }
    p->acc_off = off;
    if (which == VCC_DNNL_BWD_WEIGHTS && (nb < d->N || (wino && d->nsp == 3 && slab < d->in[0])))
        off += vcc_dnnl_round(vcc_dnnl_weight_floats(d) * sizeof(float));
    p->scratch_off = off;
    p->bytes = off + scratch;
    if (p->bytes > ws_bytes) goto done;
    /* as large as the largest of the conv's and the reorders' scratchpads */
    if (scratch && vcc_dnnl_scratch_make(s, scratch, &p->scratch)) goto done;
    if (which == VCC_DNNL_FWD_BIAS && dnnl_memory_create(&p->bias, &b, s->engine, DNNL_MEMORY_NONE) != dnnl_success)
        goto done;
    if (dnnl_primitive_create(&p->conv, pd) != dnnl_success) goto done;
    ok = 1;
done:
    if (!ok) {
        size_t need = p->bytes;
        vcc_dnnl_pass_free(p);
        p->bytes = need;
        p->nb = nb;
        p->slab = slab;
    }
    p->state = ok ? 1 : -1;
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (hint) dnnl_primitive_desc_destroy(hint);
    dnnl_primitive_attr_destroy(attr);
}

/* vcc_dnnl_pass_make: pass `which` of d into p. First, with wino (a weight-gradient pass) where d runs as a
 * Winograd convolution (vcc_dnnl_wino_tiles), the most images per execution (a 2-D conv's samples, a 3-D conv's depth positions
 * of one sample; a divisor of N or D) that fit ws_bytes and hold at least VCC_DNNL_WINO_MIN_TILES tiles.
 * Else the direct convolution: N samples per execution, else the largest divisor of N
 * whose copies, accumulator (backward weights) and scratchpad fit ws_bytes; else, for the forward and
 * backward-data passes, one sample and the largest divisor of the extent of vcc_dnnl_slab_dim(d) that
 * fits. p->state -1 when none fits or oneDNN refuses d (p->bytes 0: refused, then no smaller execution
 * is tried). The choice depends on d, ws_bytes, the ISA and the thread count only: one program on one
 * machine always takes the same one. */
VCC_CPU_FN void vcc_dnnl_pass_make(VccDnnlState *s, const VccConvDesc *d, int which, VccDnnlPass *p,
                                   size_t ws_bytes, int wino)
{
    int64_t nb, slab, tiles = wino ? vcc_dnnl_wino_tiles(d) : 0;
    int c = vcc_dnnl_slab_dim(d);
    if (tiles > 0) {
        const int64_t n = d->nsp == 3 ? d->in[0] : d->N; /* images: depth positions, or samples */
        for (nb = n; nb >= 1 && nb * tiles >= VCC_DNNL_WINO_MIN_TILES; nb--) {
            if (n % nb || nb > VCC_DNNL_WINO_MAX_IMAGES) continue;
            vcc_dnnl_pass_try(s, d, which, d->nsp == 3 ? 1 : nb, d->nsp == 3 ? nb : 0, 1, p, ws_bytes);
            if (p->state > 0) return;
            if (p->bytes == 0) break; /* refused: the direct convolution */
        }
    }
    for (nb = d->N; nb >= 1; nb--) {
        if (d->N % nb) continue;
        vcc_dnnl_pass_try(s, d, which, nb, 0, 0, p, ws_bytes);
        if (p->state > 0 || p->bytes == 0) return; /* fits, or refused */
    }
    if (which == VCC_DNNL_BWD_WEIGHTS || c < 0) return;
    for (slab = d->in[c] - 1; slab >= 1; slab--) {
        if (d->in[c] % slab) continue;
        vcc_dnnl_pass_try(s, d, which, 1, slab, 0, p, ws_bytes);
        if (p->state > 0 || p->bytes == 0) return;
    }
}

/* vcc_dnnl_reorder: run reorder r from memory a to memory b with the pass's scratchpad (NULL: none). */
VCC_CPU_FN void vcc_dnnl_reorder(VccDnnlState *s, dnnl_primitive_t r, dnnl_memory_t a, dnnl_memory_t b,
                                 dnnl_memory_t scratch)
{
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_FROM, a}, {DNNL_ARG_TO, b}, {DNNL_ARG_SCRATCHPAD, scratch}};
    VCC_DNNL_CALL(dnnl_primitive_execute(r, s->stream, scratch ? 3 : 2, args));
}

/* vcc_dnnl_taps_md: md with the blocked layout of want (a tap's operand over some images) for n images:
 * the layouts of oneDNN's blocked activations do not depend on the image count, so a range of n images of a
 * D-image blocked copy is that tensor. */
VCC_CPU_FN dnnl_memory_desc_t vcc_dnnl_taps_md(const dnnl_memory_desc_t *want, int64_t n)
{
    dnnl_memory_desc_t m = *want;
    m.dims[0] = m.padded_dims[0] = n;
    return m;
}

/* vcc_dnnl_taps_make: create the three taps of d's weight-gradient pass into t (t->state 1), for one
 * sample per execution round; t->state -1 when oneDNN refuses one (no Winograd kernel on this CPU), their
 * layouts disagree, or the pass needs more than ws_bytes (t->bytes). ws is laid out as [blocked x | blocked
 * dy | blocked weight gradient | accumulator (N > 1) | scratchpad], as ir/ops/conv.c's dnnl_wino_ws_bytes
 * sizes it. */
VCC_CPU_FN void vcc_dnnl_taps_make(VccDnnlState *s, const VccConvDesc *d, VccDnnlTaps *t, size_t ws_bytes)
{
    const int64_t D = d->in[0], H = d->in[1], W = d->in[2];
    const int64_t ch[2] = {d->C, d->K}; /* the operands: x and dy */
    dnnl_memory_desc_t user[2], any[2], uw, wa;
    const dnnl_memory_desc_t *want[3][2], *wwant[3];
    dnnl_primitive_desc_t pd[3] = {NULL, NULL, NULL}, hint = NULL;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_dims_t st = {1, 1}, pad = {1, 1};
    size_t scratch = 0, off = 0, sz;
    int i, k, ok = 0;
    memset(t, 0, sizeof *t);
    t->state = -1;
    for (k = 0; k < 2; k++) {
        dnnl_dims_t dims = {D, ch[k], H, W}, str = {H * W, D * H * W, W, 1};
        if (dnnl_memory_desc_init_by_strides(&user[k], 4, dims, dnnl_f32, str) != dnnl_success) goto done;
    }
    {
        /* the user's weight gradient of one tap: a window of (K, C, 3, 3, 3) */
        dnnl_dims_t wd = {d->K, d->C, 3, 3}, ws = {d->C * 27, 27, 3, 1};
        if (dnnl_memory_desc_init_by_strides(&uw, 4, wd, dnnl_f32, ws) != dnnl_success ||
            dnnl_memory_desc_init_by_tag(&wa, 4, wd, dnnl_f32, dnnl_format_tag_any) != dnnl_success)
            goto done;
    }
    if (dnnl_primitive_attr_create(&attr) != dnnl_success ||
        dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) != dnnl_success)
        goto done;
    for (i = 0; i < 3; i++) { /* tap i over n images: the middle one first, over all D */
        const int64_t n = i == 1 ? D : D - 1;
        dnnl_convolution_desc_t fd, cd;
        const char *impl = NULL;
        for (k = 0; k < 2; k++) {
            dnnl_dims_t dims = {n, ch[k], H, W};
            if (dnnl_memory_desc_init_by_tag(&any[k], 4, dims, dnnl_f32, dnnl_format_tag_any) != dnnl_success)
                goto done;
        }
        /* x as src, dy as dst */
        if (dnnl_convolution_forward_desc_init(&fd, dnnl_forward_training, dnnl_convolution_winograd, &any[0], &wa,
                                               NULL, &any[1], st, pad, pad) != dnnl_success ||
            dnnl_primitive_desc_create(&hint, &fd, attr, s->engine, NULL) != dnnl_success ||
            dnnl_convolution_backward_weights_desc_init(&cd, dnnl_convolution_winograd, &any[0], &wa, NULL, &any[1],
                                                        st, pad, pad) != dnnl_success ||
            dnnl_primitive_desc_create(&pd[i], &cd, attr, s->engine, hint) != dnnl_success)
            goto done;
        dnnl_primitive_desc_destroy(hint);
        hint = NULL;
        if (dnnl_primitive_desc_query(pd[i], dnnl_query_impl_info_str, 0, &impl) != dnnl_success || !impl ||
            !strstr(impl, "wino"))
            goto done;
        want[i][0] = dnnl_primitive_desc_query_md(pd[i], dnnl_query_src_md, 0);
        want[i][1] = dnnl_primitive_desc_query_md(pd[i], dnnl_query_diff_dst_md, 0);
        wwant[i] = dnnl_primitive_desc_query_md(pd[i], dnnl_query_diff_weights_md, 0);
        sz = vcc_dnnl_pd_scratch(pd[i]);
        if (sz > scratch) scratch = sz;
    }
    /* the blocked D-image copies of x and dy, and each tap's view of a range of them */
    for (k = 0; k < 2; k++) {
        dnnl_memory_desc_t full = vcc_dnnl_taps_md(want[1][k], D);
        if (!dnnl_memory_desc_equal(&full, want[1][k])) goto done;
        for (i = 0; i < 3; i++) {
            dnnl_memory_desc_t m = vcc_dnnl_taps_md(want[1][k], i == 1 ? D : D - 1);
            if (!dnnl_memory_desc_equal(&m, want[i][k]) ||
                dnnl_memory_create(&t->tap[i][k], want[i][k], s->engine, DNNL_MEMORY_NONE) != dnnl_success)
                goto done;
        }
        if (dnnl_memory_create(&t->user[k], &user[k], s->engine, DNNL_MEMORY_NONE) != dnnl_success ||
            dnnl_memory_create(&t->blk[k], want[1][k], s->engine, DNNL_MEMORY_NONE) != dnnl_success ||
            vcc_dnnl_reorder_make(s, &user[k], want[1][k], attr, &t->rin[k], &scratch))
            goto done;
        t->off[k] = off;
        t->img[k] = dnnl_memory_desc_get_size(want[1][k]) / (size_t)D;
        off += vcc_dnnl_round(dnnl_memory_desc_get_size(want[1][k]));
    }
    /* the weight gradient of each tap: its user view, and one blocked copy reused tap after tap */
    t->wblk_off = off;
    for (i = 0; i < 3; i++) {
        if (dnnl_memory_create(&t->wuser[i], &uw, s->engine, DNNL_MEMORY_NONE) != dnnl_success) goto done;
        if (dnnl_memory_desc_equal(wwant[i], &uw)) continue;
        if (!dnnl_memory_desc_equal(wwant[i], wwant[1]) ||
            vcc_dnnl_reorder_make(s, wwant[i], &uw, attr, &t->rw[i], &scratch))
            goto done;
        if (!t->wblk) {
            if (dnnl_memory_create(&t->wblk, wwant[i], s->engine, DNNL_MEMORY_NONE) != dnnl_success) goto done;
            off += vcc_dnnl_round(dnnl_memory_desc_get_size(wwant[i]));
        }
    }
    t->acc_off = off;
    if (d->N > 1) off += vcc_dnnl_round((size_t)vcc_dnnl_weight_floats(d) * sizeof(float));
    t->scratch_off = off;
    t->bytes = off + scratch;
    if (t->bytes > ws_bytes) goto done;
    if (scratch && vcc_dnnl_scratch_make(s, scratch, &t->scratch)) goto done;
    for (i = 0; i < 3; i++)
        if (dnnl_primitive_create(&t->conv[i], pd[i]) != dnnl_success) goto done;
    ok = 1;
done:
    if (!ok) {
        size_t need = t->bytes;
        vcc_dnnl_taps_free(t);
        t->bytes = need;
    }
    t->state = ok ? 1 : -1;
    for (i = 0; i < 3; i++)
        if (pd[i]) dnnl_primitive_desc_destroy(pd[i]);
    if (hint) dnnl_primitive_desc_destroy(hint);
    if (attr) dnnl_primitive_attr_destroy(attr);
}

/* vcc_dnnl_taps_run: d's weight gradient through its taps t (made): x (N, C, D, H, W), dy (N, K, D, H, W),
 * dw (K, C, 3, 3, 3) OVERWRITTEN, base its workspace. One sample at a time: its x and dy reordered into
 * their blocked copies and the taps run (the middle one over all D images, then the taps -1 and +1 over
 * D - 1: x from image 0 and dy from 1, x from 1 and dy from 0), each writing its depth slice of the
 * gradient, the later samples' into the accumulator, added into dw in sample order. */
VCC_CPU_FN void vcc_dnnl_taps_run(VccDnnlState *s, const VccConvDesc *d, VccDnnlTaps *t, const float *x,
                                  const float *dy, float *dw, unsigned char *base)
{
    const int64_t D = d->in[0], HW = d->in[1] * d->in[2], ne = vcc_dnnl_weight_floats(d);
    static const int order[3] = {1, 0, 2};
    float *acc = (float *)(base + t->acc_off);
    dnnl_exec_arg_t args[4];
    int64_t s0, e;
    int j, k, n;
    for (k = 0; k < 2; k++) VCC_DNNL_CALL(dnnl_memory_set_data_handle(t->blk[k], base + t->off[k]));
    if (t->wblk) VCC_DNNL_CALL(dnnl_memory_set_data_handle(t->wblk, base + t->wblk_off));
    if (t->scratch) VCC_DNNL_CALL(dnnl_memory_set_data_handle(t->scratch, base + t->scratch_off));
    for (s0 = 0; s0 < d->N; s0++) {
        float *g = s0 ? acc : dw;
        VCC_DNNL_CALL(dnnl_memory_set_data_handle(t->user[0], (void *)(x + s0 * d->C * D * HW)));
        vcc_dnnl_reorder(s, t->rin[0], t->user[0], t->blk[0], t->scratch);
        VCC_DNNL_CALL(dnnl_memory_set_data_handle(t->user[1], (void *)(dy + s0 * d->K * D * HW)));
        vcc_dnnl_reorder(s, t->rin[1], t->user[1], t->blk[1], t->scratch);
        for (j = 0; j < 3; j++) {
            const int i = order[j];
            /* tap i: output image o reads input image o + i - 1 */
            const int64_t in_off = i > 1 ? 1 : 0, out_off = i < 1 ? 1 : 0;
            dnnl_memory_t wm = t->rw[i] ? t->wblk : t->wuser[i];
            VCC_DNNL_CALL(dnnl_memory_set_data_handle(t->tap[i][0], base + t->off[0] + in_off * t->img[0]));
            VCC_DNNL_CALL(dnnl_memory_set_data_handle(t->tap[i][1], base + t->off[1] + out_off * t->img[1]));
            VCC_DNNL_CALL(dnnl_memory_set_data_handle(t->wuser[i], g + i * 9));
            n = 0;
            args[n].arg = DNNL_ARG_SRC;
            args[n++].memory = t->tap[i][0];
            args[n].arg = DNNL_ARG_DIFF_DST;
            args[n++].memory = t->tap[i][1];
            args[n].arg = DNNL_ARG_DIFF_WEIGHTS;
            args[n++].memory = wm;
            if (t->scratch) {
                args[n].arg = DNNL_ARG_SCRATCHPAD;
                args[n++].memory = t->scratch;
            }
            VCC_DNNL_CALL(dnnl_primitive_execute(t->conv[i], s->stream, n, args));
            if (t->rw[i]) vcc_dnnl_reorder(s, t->rw[i], t->wblk, t->wuser[i], t->scratch);
        }
        if (s0 > 0) {
            VCC_DNNL_CALL(dnnl_stream_wait(s->stream));
            VCC_CPU_PARALLEL_MAP
            for (e = 0; e < ne; e++) dw[e] += acc[e];
        }
    }
    VCC_DNNL_CALL(dnnl_stream_wait(s->stream));
}

/* vcc_dnnl_conv: pass `which` of descriptor d through oneDNN, when it takes d and fits ws:
 *   VCC_DNNL_FWD          a = x (N, C, *in), b = w (K, C/G, *k), bias (K) or NULL, out = y (N, K, *out)
 *                         (with a bias it runs pass VCC_DNNL_FWD_BIAS)
 *   VCC_DNNL_BWD_DATA     a = dy (N, K, *out), b = w, out = dx (N, C, *in), OVERWRITTEN (with
 *                         VCC_DNNL_FORWARD_ROLE: a ConvTranspose's output, computed as a forward value)
 *   VCC_DNNL_BWD_WEIGHTS  a = x, b = dy, out = dw (K, C/G, *k), OVERWRITTEN: the sum over the batch's
 *                         chunks of nb samples, in order (the bias gradient is the caller's)
 * ws: the node's planned workspace of ws_bytes (the blocked copies and the scratchpad). Returns 1 when
 * the pass was computed, 0 when the caller must compute it (oneDNN refused the descriptor, or the pass
 * needs more than ws_bytes; decided at the first call with these ws_bytes and kept). */
VCC_CPU_FN int vcc_dnnl_conv(VccRt *rt, VccConvDesc *d, int which, const float *a, const float *b,
                             const float *bias, float *out, void *ws, size_t ws_bytes)
{
    static const int arg[4][3] = {{DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST},
                                  {DNNL_ARG_DIFF_DST, DNNL_ARG_WEIGHTS, DNNL_ARG_DIFF_SRC},
                                  {DNNL_ARG_SRC, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_WEIGHTS},
                                  {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST}};
    VccDnnlState *s = vcc_dnnl_state(rt);
    const size_t wb = ws ? ws_bytes : 0;
    VccDnnlConv *c = (VccDnnlConv *)d->backend;
    VccDnnlPass *p;
    dnnl_exec_arg_t args[6];
    void *ptr[3];
    unsigned char *base = (unsigned char *)ws;
    int64_t in_s, out_s, step[3], zstep[3] = {0, 0, 0}, s0, z, nz = 1, ne;
    int i, n = 0, slot, wino;
    while (c && c->ws_bytes != wb) c = c->alt;
    if (!c) {
        c = (VccDnnlConv *)calloc(1, sizeof *c);
        VCC_CPU_CHECK(c != NULL, "out of memory for oneDNN's primitives");
        c->ws_bytes = wb;
        c->alt = (VccDnnlConv *)d->backend;
        c->next = s->convs;
        s->convs = c;
        d->backend = c;
    }
    if (which == VCC_DNNL_FWD && bias) which = VCC_DNNL_FWD_BIAS;
    /* the weight-gradient passes run Winograd where they can: its sums round differently, and a forward
     * or backward-data pass's output feeds every value after it, so those stay on the direct kernels */
    wino = which == VCC_DNNL_BWD_WEIGHTS; /* VCC_DNNL_FORWARD_ROLE marks a backward-data pass only */
    slot = which & VCC_DNNL_FORWARD_ROLE ? VCC_DNNL_SLOTS - 1 : which;
    which &= ~VCC_DNNL_FORWARD_ROLE;
    if (wino && vcc_dnnl_taps_ok(d)) { /* a 3x3x3 convolution as three 2-D Winograd ones, where they fit */
        VccDnnlTaps *t = &c->taps;
        if (t->state == 0) vcc_dnnl_taps_make(s, d, t, wb);
        if (t->state > 0) {
            vcc_dnnl_taps_run(s, d, t, a, b, out, base);
            return 1;
        }
    }
    p = &c->pass[slot];
    if (p->state == 0) vcc_dnnl_pass_make(s, d, which, p, wb, wino);
    if (p->state < 0) return 0;
    /* floats per sample of the pass's operands (0: the weights, the same for every execution) */
    in_s = d->C;
    out_s = d->K;
    for (i = 0; i < d->nsp; i++) {
        in_s *= d->in[i];
        out_s *= d->out[i];
    }
    step[0] = which == VCC_DNNL_BWD_DATA ? out_s : in_s;
    step[1] = which == VCC_DNNL_BWD_DATA ? 0 : which == VCC_DNNL_BWD_WEIGHTS ? out_s : 0;
    step[2] = which == VCC_DNNL_BWD_DATA ? in_s : which == VCC_DNNL_BWD_WEIGHTS ? 0 : out_s;
    for (i = 0; i < 3; i++)
        if (p->prim[i]) VCC_DNNL_CALL(dnnl_memory_set_data_handle(p->prim[i], base + p->off[i]));
    if (p->scratch) VCC_DNNL_CALL(dnnl_memory_set_data_handle(p->scratch, base + p->scratch_off));
    if (which == VCC_DNNL_FWD_BIAS) VCC_DNNL_CALL(dnnl_memory_set_data_handle(p->bias, (void *)bias));
    for (i = 0; i < 3; i++) {
        args[n].arg = arg[which][i];
        args[n++].memory = p->prim[i] ? p->prim[i] : p->user[i];
    }
    if (which == VCC_DNNL_FWD_BIAS) {
        args[n].arg = DNNL_ARG_BIAS;
        args[n++].memory = p->bias;
    }
    if (p->scratch) {
        args[n].arg = DNNL_ARG_SCRATCHPAD;
        args[n++].memory = p->scratch;
    }
    /* slabs: floats from one slab to the next in x and in y (positions past the slab dim; a Winograd
     * pass's are along depth) */
    if (p->slab > 0) {
        int c = p->wino ? 0 : vcc_dnnl_slab_dim(d);
        int64_t xs = p->slab, ys = p->slab;
        for (i = c + 1; i < d->nsp; i++) {
            xs *= d->in[i];
            ys *= d->out[i];
        }
        zstep[0] = which == VCC_DNNL_BWD_DATA ? ys : xs;
        zstep[1] = which == VCC_DNNL_BWD_WEIGHTS ? ys : 0; /* dy of a Winograd weight gradient's slab */
        zstep[2] = which == VCC_DNNL_BWD_DATA ? xs : ys;
        nz = d->in[c] / p->slab;
    }
    ne = vcc_dnnl_weight_floats(d);
    if (p->trimmed && which == VCC_DNNL_BWD_WEIGHTS) { /* the dropped taps' gradient is 0: never written */
        memset(out, 0, (size_t)ne * sizeof(float));
        if (p->nb < d->N || nz > 1) memset(base + p->acc_off, 0, (size_t)ne * sizeof(float));
    }
    for (s0 = 0; s0 < d->N; s0 += p->nb)
    for (z = 0; z < nz; z++) {
        /* a weight gradient's later chunks (and slabs): into the accumulator, then added into dw */
        const int acc = which == VCC_DNNL_BWD_WEIGHTS && (s0 > 0 || z > 0);
        /* the weights (dw) through the window of live taps: p->woff floats in */
        ptr[0] = (void *)(a + s0 * step[0] + z * zstep[0]);
        ptr[1] = (void *)(b + s0 * step[1] + z * zstep[1] + (step[1] ? 0 : p->woff));
        ptr[2] = acc ? (void *)((float *)(base + p->acc_off) + p->woff)
                     : (void *)(out + s0 * step[2] + z * zstep[2] + (step[2] ? 0 : p->woff));
        for (i = 0; i < 3; i++) VCC_DNNL_CALL(dnnl_memory_set_data_handle(p->user[i], ptr[i]));
        for (i = 0; i < 2; i++)
            if (p->reorder[i] && ((s0 == 0 && z == 0) || step[i])) /* weights: reordered once */
                vcc_dnnl_reorder(s, p->reorder[i], p->user[i], p->prim[i], p->scratch);
        VCC_DNNL_CALL(dnnl_primitive_execute(p->conv, s->stream, n, args));
        if (p->reorder[2]) vcc_dnnl_reorder(s, p->reorder[2], p->prim[2], p->user[2], p->scratch);
        if (acc) {
            const float *g = (const float *)(base + p->acc_off);
            int64_t e;
            VCC_DNNL_CALL(dnnl_stream_wait(s->stream));
            VCC_CPU_PARALLEL_MAP
            for (e = 0; e < ne; e++) out[e] += g[e];
        }
    }
    VCC_DNNL_CALL(dnnl_stream_wait(s->stream));
    return 1;
}

#endif /* VCC_CPU_CONV_DNNL_H */
