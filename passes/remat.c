/*
 * remat.c — recomputation under a memory budget (vcc --memory-limit).
 *
 * Requires: memplan (a schedule with live intervals, in-place sharing and offsets); ctx->memory_limit.
 * Produces: with no limit, or an arena already within it, nothing changes. Otherwise, one saved value at a
 *   time, a forward value Y that backward reads (a saved tensor) is recomputed right before its first
 *   backward reader instead of being kept from the forward: the nodes that make it (a chain of cheap
 *   forward nodes, cloned into the backward phase and named "<node>.recompute", their outputs new tensors
 *   "<value>.recompute") run again from values that are live at that step anyway, the backward readers
 *   of Y read the clone's output, and Y dies after its last forward reader. After each one liveness,
 *   inplace and memplan run again, until the arena is within ctx->memory_limit. Backward readers of a
 *   view of Y (Identity, Reshape, Flatten... of forward view nodes) read a clone of that view on the
 *   recomputed Y.
 *   Cheap nodes: BatchNormalization in training mode, whose clone is a BatchNormApply with the batch
 *   statistics the forward saved (no statistics recomputed, no running statistics updated: InPlace-ABN,
 *   Rota Bulo et al., CVPR 2018, recomputes a BN output from its saved statistics in the same way), the
 *   row normalizations (LayerNormalization, GroupNormalization, InstanceNormalization) likewise by a
 *   RowNormApply from their saved row statistics, the elementwise ops (the unary family, Add, Sub, Mul,
 *   Div, Pow, Where, Not: VCC_OPF_INPLACE), never Dropout or a random op, and the poolings (MaxPool,
 *   AveragePool and their global forms, without Indices: a pool's output, read by the next conv's
 *   weight gradient, made again from its input, which MaxPool's own gradient keeps anyway), and the
 *   data-movement copies (Concat, Slice, Transpose, Expand, Tile, Resize, Gather, Pad: a SlowFast
 *   pathway's strided Slice of the clip, an Inception block's Concat, read by the next weight gradient,
 *   made again from values live in backward anyway). Once no
 *   cheap value live at the peak step can be recomputed, whole segments:
 *   a forward Conv or ConvTranspose may be cloned too (with a workspace of its own, as large as the
 *   forward's, so it runs the same kernel the same way), from its input live at that step or itself
 *   recomputed (a block's convolutions from its input, saved for the first convolution's weight gradient).
 *   A clone runs the forward node's kernel on the same bytes, so its output is bit-identical to the
 *   original and training computes exactly the numbers of the unlimited plan (until a workspace is
 *   halved, below).
 *   Choice (greedy, Chen et al. 2016, "Training Deep Nets with Sublinear Memory Cost", with a cost per
 *   value): among the saved values live at the step where the planned bytes peak whose chain can be
 *   recomputed, the one freeing the most bytes per extra FLOP (ties: the earliest value); a chain reads
 *   parameters not yet updated at that step, values live there, and values live at the peak step that
 *   die before it: those are kept until the clone reads them (a SlowFast pathway's Slice made again from
 *   the clip, whose last reader ran two steps earlier), where no step they then reach holds more bytes
 *   than the peak step once the value is recomputed, and where no other tensor has taken their bytes in
 *   place. It stops when nothing recomputable is live at the peak step.
 *   Second copies: when no saved value at the peak step is left to recompute, not even by convolutions,
 *   a value this pass already recomputes (a cheap clone's output: BatchNormApply, RowNormApply,
 *   elementwise) that is live across the peak step without being read there is made again, by clones of
 *   its clone chain ("<node>.recompute.recompute"), right before its first reader after the peak; the
 *   readers before keep the first copy, which then dies before the peak (a ReLU output read by a weight
 *   gradient and, after the ConvGradData at the peak, by the ReLU's gradient). A second copy is not
 *   copied again (copies of copies could chase a peak they do not lower, step by step).
 *   With ctx->recompute_flops_max >= 0 (--recompute-flops P), a value whose chain would take the extra
 *   FLOPs past P percent of the step is not taken.
 *   Workspaces: when nothing at the peak step is left to recompute and --workspace-limit was not given,
 *   the conv workspace made at the peak step is halved (vcc_conv_ws_halved: half the im2col columns per
 *   chunk, down to VCC_WORKSPACE_MIN_COLS; under --cpu-conv dnnl, where oneDNN's direct convolution
 *   runs, down to oneDNN's need, then to its need on fewer samples per execution), a forward
 *   convolution's together with its clones' so each clone still makes its original's bytes, and
 *   recomputation starts again from cheap values at the new peak. Those convolutions then sum in
 *   smaller chunks, so from the first halving on the numbers differ from the unlimited plan's by
 *   rounding. Picks never depend on the limit, so any limit at or above the
 *   smallest arena reached before the first halving is met with the unlimited plan's numbers exactly.
 *   Two orders from the first halving on: the one above, and one that halves the workspace at the peak
 *   as soon as no cheap value there is left, before recomputing a convolution (a halving adds no
 *   FLOPs, but a convolution recomputed early may be one the halvings would have made unneeded). Neither
 *   is better for every model, so both run from the graph as it was just before the first halving (the
 *   nodes and tensors made since are dropped and the rest put back) and the better is kept: the one
 *   that meets the limit, then the one meeting it without a halving, then the fewer FLOPs; when neither
 *   meets it, the smaller arena reached (VccCtx.remat_policies runs one alone).
 *   With and without copies: a recomputed data-movement copy frees its bytes cheaply but leads the
 *   greedy choice elsewhere, to a larger arena for some models (S3D's Concats at batch 2). Where the
 *   graph has one, the search runs again from the start without them, and the better of the two is
 *   kept (the same ordering; the first is run once more when it was the better, unless neither met the
 *   limit). The smallest arenas an error names are the smaller of the two searches' (so a limit at
 *   the first one named is met with the unlimited plan's numbers).
 *   Planning: after each step liveness and in-place sharing run again, but offsets (memplan) only when
 *   the arena's lower bound (vcc_plan_lower_bound) is within the limit: a state above it cannot meet
 *   the limit whatever its plan, so every choice and the end are those of planning every state. Where
 *   the limit is not met, the searches run again for the smallest arenas the error names (not with
 *   ctx->remat_no_figures: then the error names none), each search planning only the states whose lower
 *   bound leaves them a chance to set one (search_figures), on every processor: the same figures as
 *   planning every state (VCC_REMAT_PLAN_ALL), s3d_small at batch 2 refused in 15.4 s on 2 processors
 *   instead of 46.1 s.
 *   Sets g->remat_values (recomputed values), g->remat_flops (their FLOPs), g->step_flops (an estimate of
 *   one training step's FLOPs, vcc_step_flops), g->arena_unlimited_bytes (the arena before) and
 *   g->remat_ws_shrunk / g->remat_ws_shrunk_bytes (the halvings and the bytes they took off their steps).
 * Errors: VCC_ERR_UNSUPPORTED when the limit cannot be met, naming the smallest arena recomputation
 *   reaches with the unlimited plan's numbers and, where halving workspaces goes lower, that arena too
 *   (with ctx->remat_no_figures, neither).
 */
#define _POSIX_C_SOURCE 200809L /* sysconf */
#include "passes.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REMAT_MAX_CHAIN 8 /* nodes recomputed for one value at most */
#define REMAT_MAX_KEPT 8  /* values one recomputation keeps past their last reader at most */

/* What a search may recompute besides the normalizations, elementwise ops and poolings (bits) */
enum {
    REMAT_CONVS = 1u << 0,  /* forward convolutions, with a workspace of their own */
    REMAT_LAYOUT = 1u << 1, /* data-movement copies (cheap_layout) */
};

/* FLOPs of node n: 2 * multiply-adds for the convolutions and matrix products (forward form; their
 * gradients are counted as two more of the same by vcc_step_flops), one per window tap of a pooling
 * (per input element of a global one), one per output element otherwise. */
static double node_flops(const VccGraph *g, const VccNode *n, bool *matmul_like) {
    *matmul_like = false;
    double out = 0;
    for (int i = 0; i < n->nout; i++)
        if (n->out[i] >= 0 && g->tensors[n->out[i]].kind != VCC_T_WORKSPACE) {
            int64_t e = vcc_shape_numel(&g->tensors[n->out[i]].shape);
            if (e > 0) out += (double)e;
        }
    const VccTensor *a = n->nin > 0 && n->in[0] >= 0 ? &g->tensors[n->in[0]] : NULL;
    const VccTensor *w = n->nin > 1 && n->in[1] >= 0 ? &g->tensors[n->in[1]] : NULL;
    int64_t wn = w ? vcc_shape_numel(&w->shape) : -1;
    if ((n->op == VCC_OP_CONV || n->op == VCC_OP_CONV_TRANSPOSE) && a && w && w->shape.rank >= 2 && wn > 0) {
        *matmul_like = true;
        /* Conv: each output element of K channels reads numel(W)/K weights; ConvTranspose: each input
         * element of Cin channels reaches numel(W)/Cin outputs */
        if (n->op == VCC_OP_CONV)
            return 2.0 * out * (double)wn / (double)w->shape.dims[0];
        int64_t xn = vcc_shape_numel(&a->shape);
        return 2.0 * (double)(xn > 0 ? xn : 0) * (double)wn / (double)w->shape.dims[0];
    }
    if ((n->op == VCC_OP_MAXPOOL || n->op == VCC_OP_AVGPOOL) && a) { /* one per window tap */
        int64_t k[VCC_MAX_RANK], taps = 1;
        int nk = vcc_attr_ints(n, "kernel_shape", k, VCC_MAX_RANK);
        for (int i = 0; i < nk; i++) taps *= k[i] > 0 ? k[i] : 1;
        return out * (double)taps;
    }
    if ((n->op == VCC_OP_GLOBALMAXPOOL || n->op == VCC_OP_GLOBALAVGPOOL) && a) { /* one per input element */
        int64_t xn = vcc_shape_numel(&a->shape);
        return (double)(xn > 0 ? xn : 0);
    }
    if ((n->op == VCC_OP_MATMUL || n->op == VCC_OP_GEMM) && a && a->shape.rank >= 1) {
        *matmul_like = true;
        int64_t k = a->shape.dims[a->shape.rank - 1];
        if (n->op == VCC_OP_GEMM && a->shape.rank == 2 && vcc_attr_int(n, "transA", 0)) k = a->shape.dims[0];
        return 2.0 * out * (double)k;
    }
    return out;
}

double vcc_step_flops(const VccGraph *g) {
    double total = 0;
    for (int k = 0; k < g->nnodes; k++) {
        const VccNode *n = &g->nodes[k];
        bool mm;
        double f = node_flops(g, n, &mm);
        if (!mm) total += f;
        else if (n->phase == VCC_PHASE_FORWARD) total += 3.0 * f; /* forward, input and weight gradients */
    }
    return total;
}

/* Whether node n is an elementwise ONNX op of one output that draws nothing (not Dropout,
 * RandomUniformLike, RandomNormalLike): an in-place-able op or one of the unary family. */
static bool cheap_elementwise(const VccNode *n) {
    if (!vcc_op_is_onnx(n->op) || n->nout != 1 || n->op == VCC_OP_DROPOUT || n->op == VCC_OP_RANDOM_UNIFORM_LIKE ||
        n->op == VCC_OP_RANDOM_NORMAL_LIKE)
        return false;
    return (vcc_op_def(n->op)->flags & VCC_OPF_INPLACE) || strcmp(vcc_op_family(n->op), "unary") == 0;
}

/* Whether node n is a forward data-movement op of one float32 output: a layout-family copy (Concat, Slice,
 * Transpose, Expand, Tile, Resize, Gather; not a view, which has no bytes of its own, nor Split, which has
 * several outputs; at most 8 inputs) or Pad. Each output element is one input element (Resize: a fixed
 * weighting of a few), read the same way every time, so a clone's output is the original's bytes. */
static bool cheap_layout(const VccGraph *g, const VccNode *n) {
    if (n->nout != 1 || n->out[0] < 0 || n->nin > 8 || n->op == VCC_OP_SPLIT ||
        (vcc_op_def(n->op)->flags & VCC_OPF_VIEW) || g->tensors[n->out[0]].dtype != VCC_F32)
        return false;
    return n->op == VCC_OP_PAD || (vcc_op_is_onnx(n->op) && strcmp(vcc_op_family(n->op), "layout") == 0);
}

/* Whether node n is a pooling (MaxPool, AveragePool, GlobalMaxPool, GlobalAveragePool) of one float
 * output (no Indices): one pass over its windows, deterministic, no workspace. */
static bool cheap_pool(const VccGraph *g, const VccNode *n) {
    if (n->op != VCC_OP_MAXPOOL && n->op != VCC_OP_AVGPOOL && n->op != VCC_OP_GLOBALMAXPOOL &&
        n->op != VCC_OP_GLOBALAVGPOOL)
        return false;
    for (int i = 1; i < n->nout; i++)
        if (n->out[i] >= 0) return false;
    return n->nout >= 1 && n->out[0] >= 0 && g->tensors[n->out[0]].dtype == VCC_F32;
}

/* Whether node n is a cheap clone this pass made ("<node>.recompute" in the backward phase: a
 * BatchNormApply, a RowNormApply, an elementwise op or a pooling), which may run a second time for the
 * readers of its output after the peak. */
static bool cheap_clone(const VccGraph *g, const VccNode *n) {
    if (n->phase != VCC_PHASE_BACKWARD || !vcc_has_suffix(n->name, ".recompute") || n->nout != 1) return false;
    return n->op == VCC_OP_BATCHNORM_APPLY || n->op == VCC_OP_ROWNORM_APPLY || cheap_elementwise(n) ||
           cheap_pool(g, n) || cheap_layout(g, n);
}

/* Whether node n is a second copy ("<node>.recompute.recompute"), which is not copied again: copies of
 * copies could chase a peak step they do not lower, one step at a time, without end. */
static bool second_copy(const VccNode *n) { return vcc_has_suffix(n->name, ".recompute.recompute"); }

/* Whether node n is one remat may run twice: cheap, deterministic, a single output (a data-movement copy
 * only with REMAT_LAYOUT among kinds). */
static bool cheap(const VccGraph *g, const VccNode *n, unsigned kinds) {
    if (cheap_clone(g, n)) return true;
    if (n->phase != VCC_PHASE_FORWARD) return false;
    bool stats = n->nout >= 3 && n->out[1] >= 0 && n->out[2] >= 0;
    if (n->op == VCC_OP_BATCHNORM) return vcc_attr_int(n, "training_mode", 1) != 0 && stats;
    if (n->op == VCC_OP_LAYERNORM || n->op == VCC_OP_GROUPNORM || n->op == VCC_OP_INSTANCENORM) return stats;
    return cheap_elementwise(n) || cheap_pool(g, n) || ((kinds & REMAT_LAYOUT) && cheap_layout(g, n));
}

/* Node n's conv workspace (its last output, a VCC_T_WORKSPACE tensor), or -1. */
static int workspace_of(const VccGraph *g, const VccNode *n) {
    int t = n->nout ? n->out[n->nout - 1] : -1;
    return t >= 0 && g->tensors[t].kind == VCC_T_WORKSPACE ? t : -1;
}

/* Whether node n's outputs are a value and its workspace (a forward convolution's). */
static bool has_workspace(const VccGraph *g, const VccNode *n) {
    return n->nout == 2 && n->out[0] >= 0 && workspace_of(g, n) >= 0;
}

/* Whether node n may be run twice: cheap, or with REMAT_CONVS among kinds a forward Conv or ConvTranspose
 * (its output and its workspace; the clone gets a workspace of the same size, so it runs the same kernel
 * the same way). */
static bool recomputable(const VccGraph *g, const VccNode *n, unsigned kinds) {
    if (cheap(g, n, kinds)) return true;
    return (kinds & REMAT_CONVS) && n->phase == VCC_PHASE_FORWARD &&
           (n->op == VCC_OP_CONV || n->op == VCC_OP_CONV_TRANSPOSE) && has_workspace(g, n);
}

/* The operands of node n's clone into in[] (at most 8); returns their count. A normalization's clone
 * (BatchNormApply, RowNormApply) reads X, scale, B (-1: none) and the saved mean and invstd; another
 * node's clone reads what it reads. */
static int clone_inputs(const VccNode *n, int *in) {
    if (n->op == VCC_OP_BATCHNORM || n->op == VCC_OP_LAYERNORM || n->op == VCC_OP_GROUPNORM ||
        n->op == VCC_OP_INSTANCENORM) {
        int v[5] = {n->in[0], n->in[1], n->nin > 2 ? n->in[2] : -1, n->out[1], n->out[2]};
        memcpy(in, v, sizeof v);
        return 5;
    }
    VCC_ASSERT(n->nin <= 8);
    memcpy(in, n->in, sizeof(int) * (size_t)n->nin);
    return n->nin;
}

/* The tensor whose bytes view t is (alias_of followed to the end). */
static int base_of(const VccGraph *g, int t) {
    while (g->tensors[t].alias_of >= 0) t = g->tensors[t].alias_of;
    return t;
}

/* A plan of recomputing one value: the forward nodes to clone, in forward order, and the values it keeps
 * past their last reader (need). */
typedef struct {
    int nodes[REMAT_MAX_CHAIN];
    int n;
    double flops;
    int kept[REMAT_MAX_KEPT];
    int nkept;
} Chain;

/* Tensor x's bytes in the arena: its size rounded up to VCC_ARENA_ALIGN. */
static int64_t footprint(const VccTensor *x) {
    return (vcc_tensor_bytes(x) + VCC_ARENA_ALIGN - 1) / VCC_ARENA_ALIGN * VCC_ARENA_ALIGN;
}

/* The planned bytes live at each step (per root buffer, its union interval: the lower bound's sweep) and
 * what a chain may extend: live[0..g->nnodes], the step s where they peak (the first such), each tensor's
 * root buffer and each root's last step; cap, set per candidate, is the most bytes a step may hold
 * after a chain input's interval is extended (need). */
typedef struct {
    int s;
    int64_t *live, cap;
    int *roots, *ge;
} Profile;

static void profile_make(const VccGraph *g, Profile *pf) {
    int nt = g->ntensors, ns = g->nnodes + 2;
    pf->roots = vcc_tensor_roots(g);
    int *gs = vcc_malloc(sizeof(int) * (size_t)(nt ? nt : 1));
    pf->ge = vcc_malloc(sizeof(int) * (size_t)(nt ? nt : 1));
    pf->live = vcc_calloc((size_t)ns, sizeof(int64_t));
    vcc_root_intervals(g, pf->roots, gs, pf->ge);
    for (int t = 0; t < nt; t++)
        if (pf->roots[t] == t && gs[t] >= 0 && !vcc_tensor_is_persistent(&g->tensors[t])) {
            int64_t b = footprint(&g->tensors[t]);
            pf->live[gs[t]] += b;
            pf->live[pf->ge[t] + 1] -= b;
        }
    int64_t top = -1, acc = 0;
    pf->s = 0;
    for (int s = 0; s <= g->nnodes; s++) {
        acc += pf->live[s];
        pf->live[s] = acc;
        if (acc > top) top = acc, pf->s = s;
    }
    pf->cap = top;
    free(gs);
}

/* The aligned bytes of the buffer value b is in. */
static int64_t kept_bytes(const VccGraph *g, const Profile *pf, int b) { return footprint(&g->tensors[pf->roots[b]]); }

static void profile_free(Profile *pf) {
    free(pf->live);
    free(pf->roots);
    free(pf->ge);
}

/* Whether tensor t can be read at step p by a chain (then *c holds the nodes it needs): a persistent
 * tensor not updated before p, a value live at p (its bytes intact), a value live at the peak step
 * pf->s that dies before p (its interval then reaches p: only where it is the last of the tensors
 * sharing its bytes, nothing written in place on it, and no step from its end to p then holds more than
 * pf->cap bytes with the values c keeps already; at most REMAT_MAX_KEPT, listed in c->kept; NULL pf:
 * none), or one a recomputable node (cheap, or with REMAT_CONVS among kinds a convolution too) can make again
 * from such tensors. */
static bool need(const VccGraph *g, int t, int p, Chain *c, int depth, unsigned kinds, const Profile *pf) {
    int b = base_of(g, t);
    const VccTensor *x = &g->tensors[b];
    if (x->start < 0) { /* persistent: a parameter must not be updated yet (its update writes it) */
        if (x->kind == VCC_T_BUFFER) return false;
        for (int k = 0; k < p; k++)
            if (g->nodes[k].phase == VCC_PHASE_UPDATE)
                for (int i = 0; i < g->nodes[k].nin; i++)
                    if (g->nodes[k].in[i] >= 0 && base_of(g, g->nodes[k].in[i]) == b) return false;
        return true;
    }
    if (x->start <= p && x->end >= p) return true;
    if (pf && x->start <= pf->s && pf->s <= x->end && x->end < p && pf->ge[pf->roots[b]] == x->end) {
        for (int i = 0; i < c->nkept; i++)
            if (c->kept[i] == b) return true;
        bool fits = c->nkept < REMAT_MAX_KEPT;
        for (int k = x->end + 1; k <= p && fits; k++) { /* with what the chain keeps already */
            int64_t at = pf->live[k] + kept_bytes(g, pf, b);
            for (int i = 0; i < c->nkept; i++)
                if (g->tensors[c->kept[i]].end < k) at += kept_bytes(g, pf, c->kept[i]);
            fits = at <= pf->cap;
        }
        if (fits) {
            c->kept[c->nkept++] = b;
            return true;
        }
    }
    if (t != b || x->producer < 0 || depth >= REMAT_MAX_CHAIN) return false;
    for (int i = 0; i < c->n; i++)
        if (c->nodes[i] == x->producer) return true;
    const VccNode *n = &g->nodes[x->producer];
    if (!recomputable(g, n, kinds) || n->out[0] != t || c->n == REMAT_MAX_CHAIN) return false;
    int in[8], nin = clone_inputs(n, in);
    for (int i = 0; i < nin; i++)
        if (in[i] >= 0 && !need(g, in[i], p, c, depth + 1, kinds, pf)) return false;
    if (c->n == REMAT_MAX_CHAIN) return false;
    bool mm;
    c->nodes[c->n++] = x->producer;
    c->flops += node_flops(g, n, &mm);
    return true;
}

/* Whether x is t or a view of t made by forward view nodes (Identity, Reshape, Flatten...: VCC_OPF_VIEW,
 * which a recomputation clones too). */
static bool is_or_views(const VccGraph *g, int x, int t) {
    for (; x != t; x = g->tensors[x].alias_of) {
        int p = g->tensors[x].producer;
        if (g->tensors[x].alias_of < 0 || p < 0 || g->nodes[p].phase != VCC_PHASE_FORWARD ||
            !(vcc_op_def(g->nodes[p].op)->flags & VCC_OPF_VIEW) || g->nodes[p].in[0] != g->tensors[x].alias_of)
            return false;
    }
    return true;
}

/* The first backward step reading t or a view of it, and the last forward step reading them (t's
 * producer when none); -1 for the first when a backward node reads a view of t that is_or_views does not
 * accept (t stays as it is then). */
static void uses(const VccGraph *g, int t, int *first_bwd, int *last_fwd) {
    *first_bwd = -1;
    *last_fwd = g->tensors[t].producer;
    for (int k = 0; k < g->nnodes; k++) {
        const VccNode *n = &g->nodes[k];
        for (int i = 0; i < n->nin; i++) {
            int x = n->in[i];
            if (x < 0 || base_of(g, x) != base_of(g, t)) continue;
            bool mine = is_or_views(g, x, t);
            if (n->phase == VCC_PHASE_BACKWARD) {
                if (!mine) {
                    *first_bwd = -1;
                    return;
                }
                if (*first_bwd < 0) *first_bwd = k;
            } else if (mine && k > *last_fwd) {
                *last_fwd = k;
            }
        }
    }
}

/* The recomputed copy of x (y or a view of y, is_or_views) given map[] for what has one: a view's copy is
 * a clone of its view node on its base's copy, appended (the caller moves it into place). */
static int copy_of(VccGraph *g, int x, int *map) {
    if (map[x] != x) return map[x];
    const VccTensor *xt = &g->tensors[x];
    int base = copy_of(g, xt->alias_of, map);
    VccShape shape = xt->shape;
    int nc = vcc_tensor_add_unique(g, xt->dtype, &shape, VCC_T_ACT, "%s.recompute", xt->name);
    g->tensors[nc].bf16_bytes = g->tensors[x].bf16_bytes;
    VccNode src = g->nodes[g->tensors[x].producer];
    int *in = vcc_malloc(sizeof(int) * (size_t)src.nin);
    memcpy(in, src.in, sizeof(int) * (size_t)src.nin);
    in[0] = base;
    char *name = vcc_strfmt("%s.recompute", src.name);
    int k = vcc_node_add(g, src.op, name, in, src.nin, &nc, 1, VCC_PHASE_BACKWARD);
    free(name);
    free(in);
    vcc_attr_copy_all(&g->nodes[k], &g->nodes[g->tensors[x].producer]);
    g->tensors[nc].alias_of = base;
    map[x] = nc;
    return nc;
}

/* Clone chain c before step p; the backward readers of value y read the clone's output. */
static void apply(VccGraph *g, const Chain *c, int y, int p) {
    int *map = vcc_malloc(sizeof(int) * (size_t)g->ntensors); /* tensor -> its recomputed copy, or itself */
    int nt0 = g->ntensors;
    for (int t = 0; t < nt0; t++) map[t] = t;
    int from = g->nnodes;
    for (int i = 0; i < c->n; i++) {
        VccNode src = g->nodes[c->nodes[i]]; /* copy: the node array grows */
        int o = src.out[0];
        const VccTensor *ot = &g->tensors[o];
        VccShape shape = ot->shape;
        int nc = vcc_tensor_add_unique(g, ot->dtype, &shape, VCC_T_ACT, "%s.recompute", g->tensors[o].name);
        g->tensors[nc].bf16_bytes = g->tensors[o].bf16_bytes;
        int in[8], nin = clone_inputs(&src, in);
        for (int j = 0; j < nin; j++) in[j] = in[j] >= 0 ? map[in[j]] : -1;
        int64_t lay[6];
        bool rows = vcc_rownorm_layout(g, &src, lay);
        VccOp op = src.op == VCC_OP_BATCHNORM ? VCC_OP_BATCHNORM_APPLY : rows ? VCC_OP_ROWNORM_APPLY : src.op;
        int outs[2] = {nc, -1}, nout = 1;
        if (has_workspace(g, &src)) {
            /* a convolution: its clone's own workspace, as large as the forward's */
            VccShape ws = g->tensors[src.out[1]].shape;
            outs[nout++] = vcc_tensor_add_unique(g, g->tensors[src.out[1]].dtype, &ws, VCC_T_WORKSPACE, "%s.recompute",
                                                 g->tensors[src.out[1]].name);
        }
        char *name = vcc_strfmt("%s.recompute", src.name);
        int k = vcc_node_add(g, op, name, in, nin, outs, nout, VCC_PHASE_BACKWARD);
        free(name);
        if (op == src.op) vcc_attr_copy_all(&g->nodes[k], &g->nodes[c->nodes[i]]);
        const char *attr[6] = {"rows", "cols", "scale_m", "scale_s", "bias_m", "bias_s"};
        for (int j = 0; rows && j < 6; j++) vcc_attr_set_int(&g->nodes[k], attr[j], lay[j]);
        map[o] = nc;
    }
    for (int k = p; k < from; k++) {
        if (g->nodes[k].phase != VCC_PHASE_BACKWARD) continue;
        for (int i = 0; i < g->nodes[k].nin; i++) {
            int x = g->nodes[k].in[i];
            if (x >= 0 && x < nt0 && is_or_views(g, x, y)) {
                int xc = copy_of(g, x, map); /* may grow the node array */
                g->nodes[k].in[i] = xc;
            }
        }
    }
    free(map);
    vcc_nodes_move(g, from, p);
}

/* Liveness, in-place sharing and offsets again for the changed graph. With light, when the arena's lower
 * bound (vcc_plan_lower_bound) is already above ctx->memory_limit, no offsets: g->arena_bytes (and
 * g->lower_bound_bytes, as memplan sets it) is set to that bound, which is enough to know the limit is
 * not met (the tensors' offsets are then stale, and
 * nothing reads them before the next plan). */
static VccStatus replan(VccCtx *ctx, VccGraph *g, bool light) {
    for (int t = 0; t < g->ntensors; t++) g->tensors[t].inplace_of = -1;
    VccStatus st = vcc_liveness(ctx, g);
    if (!st) st = vcc_inplace(ctx, g);
    if (!st) st = vcc_liveness(ctx, g);
    if (!st && light) {
        int64_t lb = vcc_plan_lower_bound(g);
        if (lb > ctx->memory_limit) {
            g->arena_bytes = g->lower_bound_bytes = lb;
            return VCC_OK;
        }
    }
    if (!st) st = vcc_memplan(ctx, g);
    return st;
}

/* The chain that makes value t again before step p, scored by bytes per FLOP: taken into *pick_t,
 * *best and *best_p when feasible (at most REMAT_MAX_CHAIN nodes, at most budget FLOPs when budget >= 0)
 * and better than *best_score. */
static void try_chain(const VccGraph *g, int t, int p, unsigned kinds, double budget, Profile *pf,
                      double *best_score, int *pick_t, Chain *best, int *best_p) {
    const VccTensor *x = &g->tensors[t];
    Chain c = {{0}, 0, 0, {0}, 0};
    /* an input extended to p may raise no step above what the peak step holds once t is recomputed */
    pf->cap = pf->live[pf->s] - footprint(x);
    /* the value itself is recomputed, whatever its liveness says */
    const VccNode *n = &g->nodes[x->producer];
    int in[8], nin = clone_inputs(n, in);
    bool ok = true;
    for (int i = 0; i < nin && ok; i++) ok = in[i] < 0 || need(g, in[i], p, &c, 1, kinds, pf);
    if (!ok || c.n == REMAT_MAX_CHAIN) return;
    bool mm;
    c.nodes[c.n++] = x->producer;
    c.flops += node_flops(g, n, &mm);
    if (budget >= 0 && c.flops > budget) return;
    double score = (double)vcc_tensor_bytes(x) / (c.flops > 1 ? c.flops : 1);
    if (score > *best_score) {
        *best_score = score;
        *pick_t = t;
        *best = c;
        *best_p = p;
    }
}

/* Pick the value to recompute: live across the peak step pf->s, recomputable (by the kinds of node kinds
 * names) with at most budget FLOPs (negative: any), the most bytes per FLOP; with copies, when there is
 * none, a second copy. Returns it (-1: none) with its chain and the step its clone goes before. */
static int pick(const VccGraph *g, Profile *pf, Chain *best, int *best_p, unsigned kinds, bool copies, double budget) {
    int pick_t = -1, s = pf->s;
    double best_score = 0;
    for (int t = 0; t < g->ntensors; t++) {
        const VccTensor *x = &g->tensors[t];
        if (!x->saved || x->alias_of >= 0 || x->start < 0 || x->producer < 0 || x->end >= g->nnodes ||
            x->kind != VCC_T_ACT || !recomputable(g, &g->nodes[x->producer], kinds) ||
            g->nodes[x->producer].out[0] != t)
            continue;
        int p, lf;
        uses(g, t, &p, &lf);
        if (p < 0 || !(lf < s && s < p)) continue;
        try_chain(g, t, p, kinds, budget, pf, &best_score, &pick_t, best, best_p);
    }
    /* With copies, only when no saved value is left: a first copy live across the peak without a reader
     * there, made a second time for its readers after the peak (its readers before keep the first copy). */
    for (int t = 0; copies && pick_t < 0 && t < g->ntensors; t++) {
        const VccTensor *x = &g->tensors[t];
        if (x->alias_of >= 0 || x->start < 0 || x->producer < 0 || x->kind != VCC_T_ACT ||
            !(x->start < s && s < x->end) || !cheap_clone(g, &g->nodes[x->producer]) ||
            second_copy(&g->nodes[x->producer]) || g->nodes[x->producer].out[0] != t)
            continue;
        int p = -1;
        bool read_at_s = false;
        for (int k = x->producer + 1; k < g->nnodes && !read_at_s; k++)
            for (int i = 0; i < g->nodes[k].nin; i++) {
                int y = g->nodes[k].in[i];
                if (y < 0 || base_of(g, y) != t) continue;
                if (y != t) p = -2; /* read through a view: left as it is */
                if (k == s) read_at_s = true;
                if (k > s && p == -1) p = k;
            }
        if (read_at_s || p < 0) continue;
        try_chain(g, t, p, kinds, budget, pf, &best_score, &pick_t, best, best_p);
    }
    return pick_t;
}

/* b bytes as a reader takes them in: "0.281 GiB", "1.8 MiB", "0.9 KiB" (GiB from 1 GiB on, MiB from 1 MiB
 * on), into buf. */
static const char *size_text(char *buf, size_t len, int64_t b) {
    double d = (double)b;
    if (d >= 1073741824.0) snprintf(buf, len, "%.3f GiB", d / 1073741824.0);
    else if (d >= 1048576.0) snprintf(buf, len, "%.1f MiB", d / 1048576.0);
    else snprintf(buf, len, "%.1f KiB", d / 1024.0);
    return buf;
}

/* The limit as the refusals name it: "--memory-limit 1 byte", "--memory-limit 8388608 bytes (8.0 MiB)". */
static const char *limit_text(char *buf, size_t len, int64_t b) {
    char unit[32];
    if (b < 1024) snprintf(buf, len, "--memory-limit %" PRId64 " byte%s", b, b == 1 ? "" : "s");
    else snprintf(buf, len, "--memory-limit %" PRId64 " bytes (%s)", b, size_text(unit, sizeof unit, b));
    return buf;
}

/* The workspace of the conv made at step s, halved (vcc_conv_ws_halved: half the im2col columns per
 * chunk, at least VCC_WORKSPACE_MIN_COLS, or oneDNN's execution on fewer samples). A forward
 * convolution's recomputed clones ("<node>.recompute", their clones "<node>.recompute.recompute") are
 * halved with it and a clone with its forward node, so a clone still runs in its original's chunks and
 * makes its bytes. Returns the bytes taken off at s (0: no workspace at s could shrink). */
static int64_t shrink_ws_at(VccCtx *ctx, VccGraph *g, int s) {
    if (s < 0 || s >= g->nnodes) return 0;
    const VccNode *n = &g->nodes[s];
    int ws = workspace_of(g, n);
    if (ws < 0) return 0;
    int64_t bytes = vcc_tensor_bytes(&g->tensors[ws]), smaller = vcc_conv_ws_halved(ctx, g, s, bytes, true);
    if (smaller >= bytes) return 0;
    /* the forward node's name: the part before the first ".recompute" */
    const char *mark = strstr(n->name, ".recompute");
    size_t len = mark ? (size_t)(mark - n->name) : strlen(n->name);
    for (int k = 0; k < g->nnodes; k++) {
        const VccNode *m = &g->nodes[k];
        int mws = workspace_of(g, m);
        if (m->op != n->op || mws < 0 || strncmp(m->name, n->name, len) ||
            (m->name[len] && strncmp(m->name + len, ".recompute", 10)) || vcc_tensor_bytes(&g->tensors[mws]) != bytes)
            continue;
        g->tensors[mws].shape = (VccShape){1, {smaller / 4}};
    }
    return bytes - smaller;
}

/* One run of the search: its policy and what it reached. */
typedef struct {
    bool light; /* planned only where the lower bound is within the limit (replan): the limit is met or
                   not exactly as with every state planned, but same and smallest are not figures then */
    bool figures; /* for the figures of an unmet limit (not light): each state's bounds first, then only
                     the states that can set a figure planned (search_figures) */
    bool halve_first; /* after the first halving: halve the workspace at the peak before recomputing a
                         convolution there (false: only once nothing, not even a second copy, is left) */
    bool convs, copies, ws_lever;
    bool layout; /* data-movement copies may be recomputed (REMAT_LAYOUT) */
    /* the smallest arena before any workspace was shrunk (the same numbers as the unlimited plan), and
     * the smallest of all, with the values, FLOPs and halvings that reached them */
    int64_t same, smallest;
    int n_same, n_smallest, ws_smallest;
    double flops_same, flops_smallest;
} Run;

/* The graph as a run found it just before its first halving: what later steps change (appended tensors
 * and nodes, the node order, readers' operands, workspace shapes, the plan) so that another policy can
 * start from the same point. The tensors and nodes are shallow copies: the originals own their memory. */
typedef struct {
    bool taken;
    int ntensors, nnodes;
    VccTensor *tensors;
    VccNode *nodes;
    int *ins; /* every node's operand list, one after another */
    int values, ws_shrunk;
    int64_t ws_shrunk_bytes;
    double flops;
    Run run;
} Snapshot;

static void snapshot_take(const VccGraph *g, const Run *r, Snapshot *s) {
    s->taken = true;
    s->ntensors = g->ntensors;
    s->nnodes = g->nnodes;
    s->tensors = vcc_malloc(sizeof(VccTensor) * (size_t)g->ntensors);
    memcpy(s->tensors, g->tensors, sizeof(VccTensor) * (size_t)g->ntensors);
    s->nodes = vcc_malloc(sizeof(VccNode) * (size_t)g->nnodes);
    memcpy(s->nodes, g->nodes, sizeof(VccNode) * (size_t)g->nnodes);
    size_t nin = 0;
    for (int k = 0; k < g->nnodes; k++) nin += (size_t)g->nodes[k].nin;
    s->ins = vcc_malloc(sizeof(int) * (nin ? nin : 1));
    nin = 0;
    for (int k = 0; k < g->nnodes; k++) {
        memcpy(s->ins + nin, g->nodes[k].in, sizeof(int) * (size_t)g->nodes[k].nin);
        nin += (size_t)g->nodes[k].nin;
    }
    s->values = g->remat_values;
    s->flops = g->remat_flops;
    s->ws_shrunk = g->remat_ws_shrunk;
    s->ws_shrunk_bytes = g->remat_ws_shrunk_bytes;
    s->run = *r;
}

/* Put g back as it was when s was taken: the nodes and tensors made since are freed, the others get
 * their order, operands, shapes and fields back, and the plan is made again. */
static VccStatus snapshot_restore(VccCtx *ctx, VccGraph *g, const Snapshot *s) {
    for (int k = 0; k < g->nnodes; k++) {
        bool original = false;
        for (int j = 0; j < s->nnodes && !original; j++) original = s->nodes[j].name == g->nodes[k].name;
        if (!original) vcc_node_release(&g->nodes[k]);
    }
    memcpy(g->nodes, s->nodes, sizeof(VccNode) * (size_t)s->nnodes);
    g->nnodes = s->nnodes;
    size_t nin = 0;
    for (int k = 0; k < g->nnodes; k++) {
        memcpy(g->nodes[k].in, s->ins + nin, sizeof(int) * (size_t)g->nodes[k].nin);
        nin += (size_t)g->nodes[k].nin;
    }
    vcc_tensors_truncate(g, s->ntensors);
    memcpy(g->tensors, s->tensors, sizeof(VccTensor) * (size_t)s->ntensors);
    g->remat_values = s->values;
    g->remat_flops = s->flops;
    g->remat_ws_shrunk = s->ws_shrunk;
    g->remat_ws_shrunk_bytes = s->ws_shrunk_bytes;
    return replan(ctx, g, s->run.light);
}

static void snapshot_free(Snapshot *s) {
    free(s->tensors);
    free(s->nodes);
    free(s->ins);
}

/* What a state planned for the figures reached: its arena, the values recomputed, their FLOPs and the
 * workspace halvings by then. */
typedef struct {
    int64_t arena;
    int values, ws_shrunk;
    double flops;
} Reached;

/* Record state a in r's smallest figures (the first state of the least arena keeps them). */
static void note_reached(Run *r, const Reached *a) {
    if (a->arena < r->same && !a->ws_shrunk) {
        r->same = a->arena;
        r->n_same = a->values;
        r->flops_same = a->flops;
    }
    if (a->arena < r->smallest) {
        r->smallest = a->arena;
        r->n_smallest = a->values;
        r->flops_smallest = a->flops;
        r->ws_smallest = a->ws_shrunk;
    }
}

/* What g's state reached, with its arena as g holds it. */
static Reached reached(const VccGraph *g) {
    return (Reached){g->arena_bytes, g->remat_values, g->remat_ws_shrunk, g->remat_flops};
}

/* Record the arena just planned in r's smallest figures. */
static void note_arena(const VccGraph *g, Run *r) {
    Reached a = reached(g);
    note_reached(r, &a);
}

/* The states of one search for search_figures: in the sweep, each state's lower bound and whether a
 * workspace was halved by then; in a replay, which states to plan. With batch (the last replay), the
 * marked states whose lower bound is above the limit are planned after the replay, on several threads
 * (VccPlanBatch), each in pending with its batch index (-1: planned at once, its arena known). */
typedef struct {
    bool replay;
    int n, cap; /* states met so far; room in the arrays */
    int64_t *lb;
    bool *shrunk, *plan;
    VccPlanBatch *batch;
    Reached *pending;
    int *job, npending, cap_pending;
} Sweep;

/* One state of a search with a sweep: the sweep records its lower bound (planning it only where that is
 * within the limit, as replan's light mode); a replay plans it where marked, or with a batch adds it
 * there. *noted: whether the state was planned for the figures now (note_arena). */
static VccStatus sweep_state(VccCtx *ctx, VccGraph *g, Sweep *sw, bool *noted) {
    int i = sw->n++;
    if (sw->replay) {
        *noted = i < sw->cap && sw->plan[i];
        if (!*noted || !sw->batch) return replan(ctx, g, !*noted);
        /* the state's lower bound; planned at once only where that is within the limit (arena known) */
        *noted = false;
        VccStatus st = replan(ctx, g, true);
        if (st) return st;
        if (sw->npending == sw->cap_pending) {
            sw->cap_pending = sw->cap_pending ? 2 * sw->cap_pending : 64;
            sw->pending = vcc_realloc(sw->pending, sizeof(Reached) * (size_t)sw->cap_pending);
            sw->job = vcc_realloc(sw->job, sizeof(int) * (size_t)sw->cap_pending);
        }
        bool later = g->lower_bound_bytes > ctx->memory_limit;
        sw->job[sw->npending] = later ? vcc_plan_batch_add(sw->batch, g) : -1;
        sw->pending[sw->npending++] = reached(g); /* its arena set once the batch is planned */
        return VCC_OK;
    }
    *noted = false;
    VccStatus st = replan(ctx, g, true);
    if (st) return st;
    if (i == sw->cap) {
        sw->cap = sw->cap ? 2 * sw->cap : 64;
        sw->lb = vcc_realloc(sw->lb, sizeof(int64_t) * (size_t)sw->cap);
        sw->shrunk = vcc_realloc(sw->shrunk, sizeof(bool) * (size_t)sw->cap);
    }
    sw->lb[i] = g->lower_bound_bytes; /* replan's, planned or not */
    sw->shrunk[i] = g->remat_ws_shrunk > 0;
    return VCC_OK;
}

/* The threads that plan a batch: the processors online, at least one (vcc_plan_batch_run takes 16 at
 * most). */
static int plan_threads(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 1 ? (int)(n < 16 ? n : 16) : 1;
}

/* The states sw's batch holds so far planned (on plan_threads() threads) and noted in r in their order;
 * none held after. */
static VccStatus flush_pending(VccCtx *ctx, Sweep *sw, Run *r) {
    if (!sw || !sw->batch) return VCC_OK;
    vcc_plan_batch_run(sw->batch, plan_threads());
    VccStatus st = VCC_OK;
    for (int i = 0; !st && i < sw->npending; i++) {
        if (sw->job[i] >= 0) sw->pending[i].arena = vcc_plan_batch_arena(sw->batch, sw->job[i]);
        if (sw->pending[i].arena < 0) {
            vcc_error(ctx, "internal: the memory planner rejected its input");
            st = VCC_ERR_INTERNAL;
        } else {
            note_reached(r, &sw->pending[i]);
        }
    }
    sw->npending = 0;
    return st;
}

/* Recompute and halve until the arena is within ctx->memory_limit or nothing at the peak is left to
 * change; with snap, the graph just before the first halving is kept there (snapshot_take); with sw, the
 * states are swept or replayed (sweep_state) instead of planned as r says. */
static VccStatus search(VccCtx *ctx, VccGraph *g, Run *r, Snapshot *snap, Sweep *sw) {
    /* cheap values first; convolutions once no cheap value is left at the peak; second copies last; then
     * the conv workspace at the peak halved, and the same again from cheap values (with halve_first, after
     * the first halving, the workspace at the peak is halved before a convolution is recomputed) */
    while (g->arena_bytes > ctx->memory_limit) {
        Chain c;
        double budget = -1; /* the FLOPs --recompute-flops leaves (negative: no bound) */
        if (ctx->recompute_flops_max >= 0) {
            budget = ctx->recompute_flops_max / 100.0 * g->step_flops - g->remat_flops;
            if (budget < 0) budget = 0;
        }
        unsigned kinds = (r->convs ? REMAT_CONVS : 0u) | (r->layout ? REMAT_LAYOUT : 0u);
        Profile pf;
        profile_make(g, &pf);
        int s = pf.s, p = -1, y = pick(g, &pf, &c, &p, kinds, r->copies, budget);
        profile_free(&pf);
        if (y >= 0) {
            apply(g, &c, y, p);
            g->remat_values++;
            g->remat_flops += c.flops;
        } else {
            /* with halve_first, once a workspace was halved: the workspace at the peak before convolutions */
            bool early = r->halve_first && g->remat_ws_shrunk && !r->convs;
            if (!early && !r->copies) {
                r->copies = r->convs;
                r->convs = true;
                continue;
            }
            bool first = snap && !snap->taken && !g->remat_ws_shrunk;
            if (first) {
                /* the snapshot keeps r's figures so far: the states planned later are noted first */
                VccStatus st = flush_pending(ctx, sw, r);
                if (st) return st;
                snapshot_take(g, r, snap);
            }
            int64_t off = r->ws_lever ? shrink_ws_at(ctx, g, s) : 0;
            if (!off) {
                if (first) {
                    snapshot_free(snap);
                    *snap = (Snapshot){0};
                }
                if (!early) break;
                r->copies = r->convs;
                r->convs = true;
                continue;
            }
            g->remat_ws_shrunk++;
            g->remat_ws_shrunk_bytes += off;
            r->convs = r->copies = false;
        }
        bool noted = true;
        VccStatus st = sw ? sweep_state(ctx, g, sw, &noted) : replan(ctx, g, r->light);
        if (st) return st;
        if (noted) note_arena(g, r);
    }
    return VCC_OK;
}

/* search from the graph as begin holds it, planning the states sw->plan marks (r's figures: note_arena
 * at those states only); *snap is taken again at the same state. */
static VccStatus replay(VccCtx *ctx, VccGraph *g, Run *r, Snapshot *snap, const Snapshot *begin, Sweep *sw) {
    if (snap && snap->taken) {
        snapshot_free(snap);
        *snap = (Snapshot){0};
    }
    VccStatus st = snapshot_restore(ctx, g, begin);
    sw->replay = true;
    sw->n = 0;
    return st ? st : search(ctx, g, r, snap, sw);
}

/* search for the figures of a limit that is not met, without planning every state. A sweep records each
 * state's lower bound; the search then runs again from the same graph (its choices depend on live
 * intervals alone, so it meets the same states) planning the states of least lower bound, overall and
 * before a halving, whose arenas bound the figures from above; a state can set a figure (note_arena: the
 * smallest arena, or the smallest before a halving) only where its lower bound is at most that bound, and
 * a last run plans those states alone, on several threads (a VccPlanBatch, planned when the run ends and
 * before its first halving, and noted in the order of the states). The figures, choices and end are
 * those of planning every state (VCC_REMAT_PLAN_ALL). */
static VccStatus search_figures(VccCtx *ctx, VccGraph *g, Run *r, Snapshot *snap) {
    Snapshot begin = {0};
    snapshot_take(g, r, &begin);
    Sweep sw = {0};
    Run q = *r;
    VccStatus st = search(ctx, g, &q, snap, &sw);
    int lo = -1, lo_same = -1, n = sw.n;
    for (int i = 0; i < n; i++) {
        if (lo < 0 || sw.lb[i] < sw.lb[lo]) lo = i;
        if (!sw.shrunk[i] && (lo_same < 0 || sw.lb[i] < sw.lb[lo_same])) lo_same = i;
    }
    sw.plan = vcc_calloc((size_t)(sw.cap ? sw.cap : 1), sizeof(bool));
    if (!st && lo >= 0) {
        sw.plan[lo] = true;
        if (lo_same >= 0) sw.plan[lo_same] = true;
        Run bound = *r;
        st = replay(ctx, g, &bound, snap, &begin, &sw);
        for (int i = 0; i < n; i++)
            sw.plan[i] = sw.lb[i] <= bound.smallest || (!sw.shrunk[i] && sw.lb[i] <= bound.same);
        /* the last replay adds the states to plan to a batch, planned once it ends, and noted in order */
        sw.batch = vcc_plan_batch_new();
        if (!st) st = replay(ctx, g, r, snap, &begin, &sw);
        if (!st) st = flush_pending(ctx, &sw, r);
    } else if (!st) {
        *r = q; /* no state: q's figures are r's */
    }
    vcc_plan_batch_free(sw.batch);
    free(sw.pending);
    free(sw.job);
    free(sw.lb);
    free(sw.shrunk);
    free(sw.plan);
    snapshot_free(&begin);
    return st;
}

/* search as r asks: search_figures for r->figures. */
static VccStatus run_search(VccCtx *ctx, VccGraph *g, Run *r, Snapshot *snap) {
    return r->figures ? search_figures(ctx, g, r, snap) : search(ctx, g, r, snap, NULL);
}

/* Whether run b ended better than run a (arena_b, arena_a their final arenas; shrunk_b, shrunk_a whether
 * they halved a workspace): the one that meets the limit, then the one that meets it with the unlimited
 * plan's numbers (no halving), then the fewer FLOPs; when neither meets it, the smaller arena reached,
 * then the fewer FLOPs. */
static bool better(const VccCtx *ctx, const Run *b, int64_t arena_b, double flops_b, bool shrunk_b, const Run *a,
                   int64_t arena_a, double flops_a, bool shrunk_a) {
    bool met_a = arena_a <= ctx->memory_limit, met_b = arena_b <= ctx->memory_limit;
    if (met_a != met_b) return met_b;
    if (met_b && shrunk_a != shrunk_b) return !shrunk_b;
    if (met_b) return flops_b < flops_a;
    if (b->smallest != a->smallest) return b->smallest < a->smallest;
    return b->flops_smallest < a->flops_smallest;
}

/* One search from g as it is, in both orders from its first halving on (the second from the graph as the
 * first found it just before that halving); g is left as the better run ended and *r is that run. */
static VccStatus both_orders(VccCtx *ctx, VccGraph *g, Run *r) {
    Snapshot snap = {0};
    int orders = ctx->remat_policies & (VCC_REMAT_CONVS_FIRST | VCC_REMAT_HALVE_FIRST);
    VccStatus st = run_search(ctx, g, r, orders ? NULL : &snap);
    if (!st && snap.taken) {
        /* from the first halving on, the other policy too (halving before convolutions is better for some
         * models, worse for others); the better run is kept, the first one again if it was better */
        Run a = *r, b = snap.run;
        int64_t arena_a = g->arena_bytes;
        double flops_a = g->remat_flops;
        b.halve_first = true;
        st = snapshot_restore(ctx, g, &snap);
        if (!st) st = run_search(ctx, g, &b, NULL);
        if (!st && better(ctx, &b, g->arena_bytes, g->remat_flops, true, &a, arena_a, flops_a, true)) {
            *r = b;
        } else if (!st) {
            *r = snap.run;
            st = snapshot_restore(ctx, g, &snap);
            if (!st) st = run_search(ctx, g, r, NULL);
        }
    }
    snapshot_free(&snap);
    return st;
}

/* Every search from the start (g as snapshot start holds it, base the run to begin with): both orders
 * with data-movement copies, and where copies (the graph has one) both without them, the better kept.
 * g is left as the kept run ended; *fig gets the smallest arenas any run reached (for the error). */
static VccStatus all_searches(VccCtx *ctx, VccGraph *g, Run base, bool copies, const Snapshot *start, Run *fig) {
    Run r = base;
    r.layout = !(ctx->remat_policies & VCC_REMAT_NO_COPIES);
    VccStatus st = both_orders(ctx, g, &r);
    *fig = r;
    if (!st && copies) {
        /* Recomputing a data-movement copy frees bytes cheaply but leads the greedy choice elsewhere, to a
         * larger arena for some models (S3D's Concats): the search without them too, the better kept. A
         * limit at or above either search's arena before its first halving is then met with the unlimited
         * plan's numbers. */
        Run a = r, b = base;
        int64_t arena_a = g->arena_bytes;
        double flops_a = g->remat_flops;
        bool shrunk_a = g->remat_ws_shrunk > 0;
        st = snapshot_restore(ctx, g, start);
        if (!st) st = both_orders(ctx, g, &b);
        if (!st) {
            if (b.same < fig->same) fig->same = b.same, fig->n_same = b.n_same, fig->flops_same = b.flops_same;
            if (b.smallest < fig->smallest)
                fig->smallest = b.smallest, fig->n_smallest = b.n_smallest, fig->flops_smallest = b.flops_smallest,
                fig->ws_smallest = b.ws_smallest;
        }
        /* the first search again when it was the better one, unless neither met the limit (an error,
         * after which the graph is not used) */
        bool met = arena_a <= ctx->memory_limit || g->arena_bytes <= ctx->memory_limit;
        if (!st && met && !better(ctx, &b, g->arena_bytes, g->remat_flops, g->remat_ws_shrunk > 0, &a, arena_a, flops_a,
                                  shrunk_a)) {
            r = base;
            r.layout = true;
            st = snapshot_restore(ctx, g, start);
            if (!st) st = both_orders(ctx, g, &r);
        }
    }
    return st;
}

VccStatus vcc_remat(VccCtx *ctx, VccGraph *g) {
    g->arena_unlimited_bytes = g->arena_bytes;
    g->step_flops = vcc_step_flops(g);
    g->remat_values = 0;
    g->remat_flops = 0;
    g->remat_ws_shrunk = 0;
    g->remat_ws_shrunk_bytes = 0;
    if (ctx->memory_limit <= 0 || ctx->forward_only || ctx->eval || g->arena_bytes <= ctx->memory_limit) return VCC_OK;
    int orders = ctx->remat_policies & (VCC_REMAT_CONVS_FIRST | VCC_REMAT_HALVE_FIRST);
    Run base = {.halve_first = orders == VCC_REMAT_HALVE_FIRST, .ws_lever = !ctx->workspace_limit_fixed,
                .same = g->arena_bytes, .smallest = g->arena_bytes},
        fig;
    bool copies = false; /* whether a second search, without data-movement copies, can differ */
    for (int k = 0; k < g->nnodes && !copies; k++)
        copies = g->nodes[k].phase == VCC_PHASE_FORWARD && cheap_layout(g, &g->nodes[k]);
    copies = copies && !(ctx->remat_policies & (VCC_REMAT_COPIES | VCC_REMAT_NO_COPIES));
    Snapshot start = {0};
    snapshot_take(g, &base, &start);
    /* First with states planned only where their lower bound is within the limit: the same runs, the
     * same choices and the same end where the limit is met, without planning the many states on the way
     * that cannot meet it. Where it is not met, the error names the smallest arenas reached, so the
     * searches run again with every state planned. */
    base.light = !(ctx->remat_policies & VCC_REMAT_PLAN_ALL);
    VccStatus st = all_searches(ctx, g, base, copies, &start, &fig);
    if (!st && base.light && !ctx->remat_no_figures && g->arena_bytes > ctx->memory_limit) {
        base.light = false;
        base.figures = true;
        st = snapshot_restore(ctx, g, &start);
        if (!st) st = all_searches(ctx, g, base, copies, &start, &fig);
    }
    snapshot_free(&start);
    if (st) return st;
    int64_t same = fig.same, smallest = fig.smallest;
    int n_same = fig.n_same, n_smallest = fig.n_smallest, ws_smallest = fig.ws_smallest;
    double flops_same = fig.flops_same, flops_smallest = fig.flops_smallest;
    if (g->arena_bytes <= ctx->memory_limit) return VCC_OK;
    char limit[96], u1[32], u2[32], u3[32];
    limit_text(limit, sizeof limit, ctx->memory_limit);
    if (base.light) {
        vcc_error(ctx, "%s cannot be met by recomputation", limit);
        return VCC_ERR_UNSUPPORTED;
    }
    char budget_text[64] = "", ws_text[512] = "";
    if (ctx->recompute_flops_max >= 0)
        snprintf(budget_text, sizeof budget_text, " within --recompute-flops %g%%", ctx->recompute_flops_max);
    if (smallest < same)
        snprintf(ws_text, sizeof ws_text,
                 "; with conv workspaces at the peak shrunk too (%d halving%s: smaller im2col "
                 "chunks%s in the C trainer, cuDNN algorithms within less workspace in the CUDA trainer, so "
                 "those convolutions round differently from the unlimited plan's) it is %" PRId64
                 " bytes (%s; %d value%s recomputed, +%.2f%% FLOPs)",
                 ws_smallest, ws_smallest == 1 ? "" : "s",
                 ctx->cpu_conv_dnnl ? " or oneDNN executions on fewer samples" : "", smallest, size_text(u1, sizeof u1, smallest), n_smallest, n_smallest == 1 ? "" : "s",
                 g->step_flops > 0 ? 100.0 * flops_smallest / g->step_flops : 0.0);
    vcc_error(ctx,
              "%s cannot be met: the smallest arena reachable by recomputation%s is %" PRId64 " bytes (%s; %d value%s "
              "recomputed, +%.2f%% FLOPs), the arena without recomputation %" PRId64 " bytes (%s)%s",
              limit, budget_text, same, size_text(u2, sizeof u2, same), n_same, n_same == 1 ? "" : "s",
              g->step_flops > 0 ? 100.0 * flops_same / g->step_flops : 0.0, g->arena_unlimited_bytes,
              size_text(u3, sizeof u3, g->arena_unlimited_bytes), ws_text);
    return VCC_ERR_UNSUPPORTED;
}
