/*
 * fuse.c — fused attention: scaled dot-product attention becomes one FusedAttention node
 * (ir/ops/attention.c), which saves the output and one log-sum-exp per query row instead of the L x L
 * scores and probabilities.
 *
 * Requires: shape (the forward graph, shapes known, topologically sorted). Produces: the same graph with
 *   every match below replaced (skipped with ctx->no_fuse_attention, --no-fuse-attention):
 *
 *     S  = MatMul(Q, B)          Q (..., Lq, D), B = K^T (..., D, Lk): B itself, or Transpose(K) that
 *                                swaps the last two dims (then K is read directly and the copy goes)
 *     S' = S * c | S / c | c * S a float scalar constant c (optional; scale = c or 1/c, else 1)
 *     S" = S' + M | M + S'       an additive mask or bias M that no parameter reaches (optional; M
 *                                broadcasts to S's shape and gets no gradient)
 *     P  = Softmax(S", axis -1)  the last axis (any opset's form)
 *     P' = Dropout(P)            optional: a drawing Dropout keeps its ratio, stream and seed, so the
 *                                fused op draws the very same mask; one that does not draw is a view
 *     O  = MatMul(P', V)         V (..., Lk, Dv); the leading dims of Q, B and V equal
 *
 *   where every intermediate (S, S', S", P, P') is read by the next step alone and is no graph output.
 *   The last MatMul becomes FusedAttention(Q, K or B, V [, M]) -> (O, lse) with attributes scale, k_t,
 *   ratio/stream/seed, and fused: the names of the nodes it replaces, in graph order (what --dump-ir
 *   reports); the replaced nodes and the constants only they read are removed.
 *
 * The pass also makes one Gelu (ir/ops/unary.c) of GELU as torch exports it below opset 20, Div by
 * sqrt(2) (or Mul by 1/sqrt(2)), Erf, Add 1, Mul by x, Mul by 0.5 (gelu_at): the gradient then reads x
 * alone where the graph as written saves three intermediates of the MLP's width. Likewise one Swish of
 * each x * Sigmoid(x) (SiLU, the activation of video diffusion UNets and X3D), whose gradient reads x
 * alone instead of x and the Sigmoid's output. And one GroupNormalization (per_channel=1) of each
 * GroupNorm as torch exports it below opset 18, Reshape to (N, G, -1), InstanceNormalization with unit
 * scale and zero bias, Reshape back, Mul by the weight, Add the bias (fuse_groupnorm): the gradient then
 * reads X alone where the graph as written saves X and the normalized values. Last, a Transpose that
 * swaps the last two dims of a MatMul's B is folded into the MatMul (transB=1, fold_transposed_b), so
 * backward reads a Linear layer's weight itself, not a saved transposed copy of it.
 *
 * Sources: the patterns of torch.nn.MultiheadAttention's export (q scaled before the first bmm, so no
 * scale node), of Hugging Face attention (matmul(q, k.transpose(-1, -2)) / sqrt(d), + mask, softmax,
 * dropout, matmul with v), and of timm/torchvision MViT/ViT blocks (q @ k.transpose(-2, -1) * scale).
 */
#include "passes.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The one node reading t (-1 if none, several, or t is a graph output). */
static int sole_reader(const VccGraph *g, int t, const int *nreaders, const int *reader) {
    for (int i = 0; i < g->noutputs; i++)
        if (g->outputs[i] == t) return -1;
    return nreaders[t] == 1 ? reader[t] : -1;
}

/* A float scalar constant with its value: *v. */
static bool scalar_const(const VccGraph *g, int t, float *v) {
    const VccTensor *x = &g->tensors[t];
    if (x->kind != VCC_T_CONST || !x->data || x->dtype != VCC_F32 || vcc_shape_numel(&x->shape) != 1) return false;
    memcpy(v, x->data, sizeof *v);
    return true;
}

/* Whether Transpose n swaps the last two of its dims and keeps the others (without perm, ONNX reverses
 * the dims: a swap of the last two at rank 2). */
static bool swaps_last_two(const VccNode *n, int rank) {
    int64_t perm[VCC_MAX_RANK];
    if (rank < 2) return false;
    if (!vcc_attr_get(n, "perm")) return rank == 2;
    if (vcc_attr_ints(n, "perm", perm, VCC_MAX_RANK) != rank) return false;
    for (int i = 0; i < rank; i++) {
        int64_t want = i == rank - 2 ? rank - 1 : i == rank - 1 ? rank - 2 : i;
        if (perm[i] != want) return false;
    }
    return true;
}

/* The tensor a Transpose swapped the last two dims of to make t (rank >= 2), when node k alone reads t
 * (the Transpose's copy can go); -1 otherwise. */
static int swapped_from(const VccGraph *g, int t, int k, const int *nreaders, const int *reader) {
    int tr = g->tensors[t].producer;
    if (tr < 0 || g->nodes[tr].op != VCC_OP_TRANSPOSE || g->nodes[tr].nin != 1 || g->nodes[tr].in[0] < 0 ||
        !swaps_last_two(&g->nodes[tr], g->tensors[t].shape.rank) || sole_reader(g, t, nreaders, reader) != k)
        return -1;
    return g->nodes[tr].in[0];
}

/* Equal leading (batch) dims of a and b, both of rank r. */
static bool same_batch(const VccShape *a, const VccShape *b) {
    if (a->rank != b->rank || a->rank < 2) return false;
    for (int i = 0; i < a->rank - 2; i++)
        if (a->dims[i] != b->dims[i]) return false;
    return true;
}

/* Per tensor: whether a parameter reaches it (forward graph, topological order). */
static bool *param_reach(const VccGraph *g) {
    bool *r = calloc((size_t)(g->ntensors ? g->ntensors : 1), sizeof *r);
    if (!r) return NULL;
    for (int t = 0; t < g->ntensors; t++) r[t] = g->tensors[t].kind == VCC_T_PARAM;
    for (int k = 0; k < g->nnodes; k++) {
        const VccNode *n = &g->nodes[k];
        bool any = false;
        for (int i = 0; i < n->nin; i++) any |= n->in[i] >= 0 && r[n->in[i]];
        for (int o = 0; o < n->nout; o++)
            if (n->out[o] >= 0) r[n->out[o]] |= any;
    }
    return r;
}

typedef struct {
    int q, k, v, bias, kt;
    float scale;
    int dropout;   /* the drawing Dropout node, -1 */
    int nodes[8];  /* the nodes replaced, last = the final MatMul */
    int nnodes;
} Match;

/* The match whose Softmax is node s, or false. */
static bool match_at(const VccGraph *g, int s, const int *nreaders, const int *reader, const bool *reach, Match *m) {
    const VccNode *sm = &g->nodes[s];
    if (sm->op != VCC_OP_SOFTMAX || sm->nin != 1 || sm->nout != 1) return false;
    const VccShape *ps = &g->tensors[sm->out[0]].shape;
    int64_t axis = vcc_attr_int(sm, "axis", -1);
    if (axis < 0) axis += ps->rank;
    if (ps->rank < 2 || axis != ps->rank - 1) return false;
    memset(m, 0, sizeof *m);
    m->bias = m->dropout = -1;
    m->scale = 1.0f;
    /* forward from P: an optional Dropout (or its view), then MatMul(P', V) */
    int t = sm->out[0], c = sole_reader(g, t, nreaders, reader);
    int after[2], nafter = 0;
    while (c >= 0 && (g->nodes[c].op == VCC_OP_DROPOUT || g->nodes[c].op == VCC_OP_IDENTITY) && nafter < 2) {
        const VccNode *dn = &g->nodes[c];
        if (dn->nout != 1 || dn->in[0] != t) return false;
        if (dn->op == VCC_OP_DROPOUT) {
            if (m->dropout >= 0) return false;
            m->dropout = c;
        }
        after[nafter++] = c;
        t = dn->out[0];
        c = sole_reader(g, t, nreaders, reader);
    }
    if (c < 0 || g->nodes[c].op != VCC_OP_MATMUL || g->nodes[c].nin != 2 || g->nodes[c].in[0] != t) return false;
    const int final = c;
    m->v = g->nodes[final].in[1];
    /* backward from the Softmax input: optional Add of a bias, optional scale, then MatMul(Q, B) */
    int before[4], nbefore = 0;
    t = sm->in[0];
    int p = g->tensors[t].producer;
    if (p >= 0 && g->nodes[p].op == VCC_OP_ADD && g->nodes[p].nin == 2 && sole_reader(g, t, nreaders, reader) == s) {
        const VccNode *an = &g->nodes[p];
        int side = -1;
        for (int i = 0; i < 2 && side < 0; i++) {
            int pp = g->tensors[an->in[i]].producer;
            if (pp >= 0 && (g->nodes[pp].op == VCC_OP_MATMUL || g->nodes[pp].op == VCC_OP_MUL ||
                            g->nodes[pp].op == VCC_OP_DIV) &&
                vcc_same_shape(&g->tensors[an->in[i]].shape, &g->tensors[t].shape) && !reach[an->in[1 - i]])
                side = i;
        }
        if (side >= 0) {
            m->bias = an->in[1 - side];
            before[nbefore++] = p;
            t = an->in[side];
            p = g->tensors[t].producer;
        }
    }
    if (p >= 0 && (g->nodes[p].op == VCC_OP_MUL || g->nodes[p].op == VCC_OP_DIV) && g->nodes[p].nin == 2 &&
        sole_reader(g, t, nreaders, reader) == (nbefore ? before[0] : s)) {
        const VccNode *xn = &g->nodes[p];
        float c0;
        int side = -1;
        if (scalar_const(g, xn->in[1], &c0)) side = 0;
        else if (xn->op == VCC_OP_MUL && scalar_const(g, xn->in[0], &c0)) side = 1;
        if (side >= 0 && (xn->op == VCC_OP_MUL || c0 != 0.0f)) {
            m->scale = xn->op == VCC_OP_MUL ? c0 : 1.0f / c0;
            before[nbefore++] = p;
            t = xn->in[side];
            p = g->tensors[t].producer;
        }
    }
    int reads = nbefore ? before[nbefore - 1] : s;
    if (p < 0 || g->nodes[p].op != VCC_OP_MATMUL || g->nodes[p].nin != 2 || sole_reader(g, t, nreaders, reader) != reads)
        return false;
    const VccNode *mm = &g->nodes[p];
    m->q = mm->in[0];
    m->k = mm->in[1];
    m->kt = 1;
    const VccShape *q = &g->tensors[m->q].shape, *b = &g->tensors[m->k].shape, *v = &g->tensors[m->v].shape;
    if (!same_batch(q, b) || !same_batch(q, v) || !vcc_same_shape(&g->tensors[t].shape, ps)) return false;
    int tr = g->tensors[m->k].producer, k = swapped_from(g, m->k, p, nreaders, reader);
    if (k >= 0) { /* K itself, its Transpose dropped */
        m->k = k;
        m->kt = 0;
        m->nodes[m->nnodes++] = tr;
    }
    m->nodes[m->nnodes++] = p;
    for (int i = nbefore - 1; i >= 0; i--) m->nodes[m->nnodes++] = before[i];
    m->nodes[m->nnodes++] = s;
    for (int i = 0; i < nafter; i++) m->nodes[m->nnodes++] = after[i];
    m->nodes[m->nnodes++] = final;
    return true;
}

/* Rewrite: the final MatMul becomes the FusedAttention node; the others lose their readers (the sweep
 * removes them). */
static void rewrite(VccGraph *g, const Match *m) {
    const int f = m->nodes[m->nnodes - 1];
    VccShape lse = g->tensors[g->nodes[f].out[0]].shape;
    lse.rank -= 1;
    int l = vcc_tensor_add_unique(g, VCC_F32, &lse, VCC_T_ACT, "%s.lse", g->nodes[f].name);
    size_t len = 1;
    for (int i = 0; i < m->nnodes; i++) len += strlen(g->nodes[m->nodes[i]].name) + 1;
    char *from = vcc_malloc(len);
    from[0] = '\0';
    for (int i = 0; i < m->nnodes; i++) {
        if (i) strcat(from, ",");
        strcat(from, g->nodes[m->nodes[i]].name);
    }
    VccNode *n = &g->nodes[f];
    int in[4] = {m->q, m->k, m->v, m->bias};
    n->in = vcc_realloc(n->in, sizeof(int) * 4);
    memcpy(n->in, in, sizeof in);
    n->nin = m->bias >= 0 ? 4 : 3;
    n->out = vcc_realloc(n->out, sizeof(int) * 2);
    n->out[1] = l;
    n->nout = 2;
    g->tensors[l].producer = f;
    n->op = VCC_OP_ATTENTION;
    free(n->onnx_op);
    n->onnx_op = NULL;
    while (n->nattrs) vcc_attr_drop(n, n->attrs[0].name);
    vcc_attr_set_float(n, "scale", m->scale);
    vcc_attr_set_int(n, "k_t", m->kt);
    if (m->dropout >= 0) {
        const VccNode *dn = &g->nodes[m->dropout];
        const VccAttr *seed = vcc_attr_get(dn, "seed");
        float ratio = vcc_attr_float(dn, "ratio", 0.0f);
        int64_t stream = vcc_attr_int(dn, "stream", 0), sv = seed ? seed->i : 0;
        n = &g->nodes[f];
        vcc_attr_set_float(n, "ratio", ratio);
        vcc_attr_set_int(n, "stream", stream);
        if (seed) vcc_attr_set_int(n, "seed", sv);
    }
    vcc_attr_set_string(&g->nodes[f], "fused", from);
    free(from);
}

/* Whether t is a float scalar constant within 1e-6 of want. */
static bool near_const(const VccGraph *g, int t, double want) {
    float v;
    return t >= 0 && scalar_const(g, t, &v) && fabs((double)v - want) <= 1e-6 * fabs(want);
}

/* The other input of binary node k than t (-1 when t is not one of its two inputs). */
static int other_input(const VccGraph *g, int k, int t) {
    const VccNode *n = &g->nodes[k];
    if (n->nin != 2) return -1;
    return n->in[0] == t ? n->in[1] : n->in[1] == t ? n->in[0] : -1;
}

/* GELU as torch exports nn.GELU / F.gelu (approximate none) below opset 20:
 *     a = x / sqrt(2) (or x * 1/sqrt(2)); e = Erf(a); p = e + 1; y = (x * p) * 0.5 or (x * 0.5) * p
 * with every intermediate read by the next step alone: the last Mul becomes Gelu(x) (ir/ops/unary.c),
 * whose gradient reads x alone, where the graph as written saves a, e + 1 and x * p for backward. The
 * node at erf is the Erf; *last receives the node that becomes the Gelu. */
static bool gelu_at(const VccGraph *g, int erf, const int *nreaders, const int *reader, int *x, int *last) {
    const VccNode *en = &g->nodes[erf];
    if (en->op != VCC_OP_ERF || en->nin != 1 || en->nout != 1) return false;
    int a = en->in[0], dv = g->tensors[a].producer;
    if (dv < 0 || sole_reader(g, a, nreaders, reader) != erf || g->nodes[dv].nin != 2) return false;
    const VccNode *dn = &g->nodes[dv];
    if (dn->op == VCC_OP_DIV && near_const(g, dn->in[1], 1.4142135623730951)) *x = dn->in[0];
    else if (dn->op == VCC_OP_MUL && near_const(g, dn->in[1], 0.7071067811865476)) *x = dn->in[0];
    else if (dn->op == VCC_OP_MUL && near_const(g, dn->in[0], 0.7071067811865476)) *x = dn->in[1];
    else return false;
    int ad = sole_reader(g, en->out[0], nreaders, reader);
    if (ad < 0 || g->nodes[ad].op != VCC_OP_ADD || !near_const(g, other_input(g, ad, en->out[0]), 1.0)) return false;
    int p = g->nodes[ad].out[0], m = sole_reader(g, p, nreaders, reader);
    if (m < 0 || g->nodes[m].op != VCC_OP_MUL) return false;
    int q = other_input(g, m, p);
    if (q == *x) { /* (x * p) * 0.5 */
        int h = sole_reader(g, g->nodes[m].out[0], nreaders, reader);
        if (h < 0 || g->nodes[h].op != VCC_OP_MUL || !near_const(g, other_input(g, h, g->nodes[m].out[0]), 0.5))
            return false;
        *last = h;
    } else { /* (x * 0.5) * p */
        int hp = q >= 0 ? g->tensors[q].producer : -1;
        if (hp < 0 || g->nodes[hp].op != VCC_OP_MUL || other_input(g, hp, *x) < 0 ||
            !near_const(g, other_input(g, hp, *x), 0.5) || sole_reader(g, q, nreaders, reader) != m)
            return false;
        *last = m;
    }
    const VccShape *xs = &g->tensors[*x].shape;
    return g->tensors[*x].dtype == VCC_F32 && vcc_same_shape(xs, &g->tensors[g->nodes[*last].out[0]].shape);
}

/* Readers of every tensor: returns nreaders[t] and sets *reader_out to reader[t] (the reader, when one);
 * both arrays of g->ntensors entries, the caller frees them. */
static int *count_readers(const VccGraph *g, int **reader_out) {
    size_t nt = (size_t)(g->ntensors ? g->ntensors : 1);
    int *nreaders = vcc_calloc(nt, sizeof(int)), *reader = vcc_calloc(nt, sizeof(int));
    *reader_out = reader;
    for (int k = 0; k < g->nnodes; k++)
        for (int i = 0; i < g->nodes[k].nin; i++) {
            int t = g->nodes[k].in[i];
            if (t < 0) continue;
            bool again = false;
            for (int j = 0; j < i; j++) again |= g->nodes[k].in[j] == t;
            if (!again) nreaders[t]++, reader[t] = k;
        }
    return nreaders;
}

/* Node n becomes op(x), an op of one input, with no attributes (the nodes it replaces, left without
 * readers, go at the pass's sweep). */
static void become_unary(VccNode *n, VccOp op, int x) {
    n->op = op;
    free(n->onnx_op);
    n->onnx_op = NULL;
    while (n->nattrs) vcc_attr_drop(n, n->attrs[0].name);
    n->in[0] = x;
    n->nin = 1;
}

/* Rewrite each GELU written out with Erf into one Gelu node; returns how many. */
static int fuse_gelu(VccGraph *g) {
    int fused = 0, *reader, *nreaders = count_readers(g, &reader);
    for (int e = 0; e < g->nnodes; e++) {
        int x, last;
        if (!gelu_at(g, e, nreaders, reader, &x, &last)) continue;
        VccNode *n = &g->nodes[last];
        become_unary(n, VCC_OP_GELU, x);
        vcc_attr_set_string(n, "approximate", "none");
        fused++;
    }
    free(nreaders);
    free(reader);
    return fused;
}

/* Rewrite each x * Sigmoid(x) (SiLU as torch exports F.silu / nn.SiLU below opset 24, either operand
 * order) whose Sigmoid output is read by that Mul alone into one Swish(x) (alpha 1); returns how many.
 * The gradient then reads x alone, where the graph as written saves x and the Sigmoid's output. */
static int fuse_swish(VccGraph *g) {
    int fused = 0, *reader, *nreaders = count_readers(g, &reader);
    for (int m = 0; m < g->nnodes; m++) {
        VccNode *n = &g->nodes[m];
        if (n->op != VCC_OP_MUL || n->nin != 2 || n->nout != 1) continue;
        for (int i = 0; i < 2; i++) {
            int sig = n->in[i], x = n->in[1 - i], p = sig >= 0 ? g->tensors[sig].producer : -1;
            if (p < 0 || x < 0 || g->nodes[p].op != VCC_OP_SIGMOID || g->nodes[p].nin != 1 ||
                g->nodes[p].in[0] != x || sole_reader(g, sig, nreaders, reader) != m ||
                g->tensors[x].dtype != VCC_F32 || !vcc_same_shape(&g->tensors[x].shape, &g->tensors[n->out[0]].shape))
                continue;
            become_unary(n, VCC_OP_SWISH, x);
            fused++;
            break;
        }
    }
    free(nreaders);
    free(reader);
    return fused;
}

/* t: a float constant whose every element is v. */
static bool all_const(const VccGraph *g, int t, float v) {
    const VccTensor *x = &g->tensors[t];
    if (x->kind != VCC_T_CONST || !x->data || x->dtype != VCC_F32) return false;
    const float *d = x->data;
    for (int64_t i = 0; i < vcc_shape_numel(&x->shape); i++)
        if (d[i] != v) return false;
    return true;
}

/* The (C) tensor a per-channel operand p of X (N, C, S...) of rank xrank comes from: the input of the
 * Unsqueeze / Reshape that made p from a (C) tensor, where p broadcasts to X along its channels (right-
 * aligned to X, p's dim at X's dim 1 is C and every other dim is 1: (C, 1, ...) of rank xrank - 1 or (1,
 * C, 1, ...) of rank xrank, how torch exports GroupNorm's weight and bias); -1 otherwise. */
static int channel_param(const VccGraph *g, int p, int64_t C, int xrank) {
    const VccShape *s = &g->tensors[p].shape;
    int pos = 1 - (xrank - s->rank), k = g->tensors[p].producer;
    if (g->tensors[p].dtype != VCC_F32 || pos < 0 || pos >= s->rank || s->dims[pos] != C || k < 0 ||
        (g->nodes[k].op != VCC_OP_UNSQUEEZE && g->nodes[k].op != VCC_OP_RESHAPE) || g->nodes[k].nin < 1 ||
        g->nodes[k].in[0] < 0)
        return -1;
    for (int i = 0; i < s->rank; i++)
        if (i != pos && s->dims[i] != 1) return -1;
    int src = g->nodes[k].in[0];
    const VccShape *ss = &g->tensors[src].shape;
    return ss->rank == 1 && ss->dims[0] == C && g->tensors[src].dtype == VCC_F32 ? src : -1;
}

/* Rewrite each GroupNorm as torch exports it below opset 18 (and 21 for a per-channel affine):
 *     r = Reshape(X, (N, G, -1)); n = InstanceNormalization(r, ones(G), zeros(G)); y = Reshape(n, X's shape);
 *     z = y * scale' (either order); out = z + B' (either order)
 * with X (N, C, S...), G dividing C, scale' and B' per channel ((C, 1, ...) from Unsqueeze of a (C)
 * tensor) and every intermediate read by the next step alone, into one GroupNormalization(X, scale, B)
 * with num_groups G, the InstanceNormalization's epsilon and statistics, and per_channel=1 (scale and B of
 * shape (C), as from opset 21). The same function: group g normalizes channels [g C/G, (g+1) C/G) of a
 * sample with their mean and biased variance. Its gradient reads X alone, where the graph as written
 * saves X for the InstanceNormalization's gradient and its output for the Mul's; returns how many. */
static int fuse_groupnorm(VccGraph *g) {
    int fused = 0, *reader, *nreaders = count_readers(g, &reader);
    for (int a = 0; a < g->nnodes; a++) {
        if (g->nodes[a].op != VCC_OP_ADD || g->nodes[a].nin != 2 || g->nodes[a].nout != 1) continue;
        for (int i = 0; i < 2; i++) {
            const VccNode *an = &g->nodes[a];
            int z = an->in[i], bias = an->in[1 - i], m = z >= 0 ? g->tensors[z].producer : -1;
            if (m < 0 || bias < 0 || g->nodes[m].op != VCC_OP_MUL || g->nodes[m].nin != 2 ||
                sole_reader(g, z, nreaders, reader) != a)
                continue;
            for (int j = 0; j < 2; j++) {
                const VccNode *mn = &g->nodes[m];
                int y = mn->in[j], scale = mn->in[1 - j], r2 = y >= 0 ? g->tensors[y].producer : -1;
                if (r2 < 0 || scale < 0 || g->nodes[r2].op != VCC_OP_RESHAPE ||
                    sole_reader(g, y, nreaders, reader) != m)
                    continue;
                int nrm = g->nodes[r2].in[0], in = nrm >= 0 ? g->tensors[nrm].producer : -1;
                if (in < 0 || g->nodes[in].op != VCC_OP_INSTANCENORM || g->nodes[in].nin != 3 ||
                    g->nodes[in].nout != 3 ||
                    sole_reader(g, nrm, nreaders, reader) != r2 || nreaders[g->nodes[in].out[1]] ||
                    nreaders[g->nodes[in].out[2]])
                    continue;
                int r = g->nodes[in].in[0], r1 = r >= 0 ? g->tensors[r].producer : -1;
                if (r1 < 0 || g->nodes[r1].op != VCC_OP_RESHAPE || sole_reader(g, r, nreaders, reader) != in) continue;
                int x = g->nodes[r1].in[0];
                const VccShape *xs = &g->tensors[x].shape, *rs = &g->tensors[r].shape;
                if (x < 0 || g->tensors[x].dtype != VCC_F32 || xs->rank < 3 || rs->rank != 3 ||
                    rs->dims[0] != xs->dims[0] || rs->dims[1] < 1 || xs->dims[1] % rs->dims[1] != 0 ||
                    !vcc_same_shape(xs, &g->tensors[y].shape) || !vcc_same_shape(xs, &g->tensors[z].shape) ||
                    !vcc_same_shape(xs, &g->tensors[an->out[0]].shape))
                    continue;
                int64_t G = rs->dims[1], C = xs->dims[1];
                if (!all_const(g, g->nodes[in].in[1], 1.0f) || !all_const(g, g->nodes[in].in[2], 0.0f)) continue;
                int sc = channel_param(g, scale, C, xs->rank), bc = channel_param(g, bias, C, xs->rank);
                if (sc < 0 || bc < 0) continue;
                float eps = vcc_attr_float(&g->nodes[in], "epsilon", 1e-5f);
                int mean = g->nodes[in].out[1], invstd = g->nodes[in].out[2], out = g->nodes[a].out[0];
                /* the InstanceNormalization's statistics (N, G) become the GroupNormalization's */
                g->nodes[in].out[1] = g->nodes[in].out[2] = -1;
                g->nodes[in].nout = 1;
                VccNode *n = &g->nodes[a];
                become_unary(n, VCC_OP_GROUPNORM, x);
                n->in = vcc_realloc(n->in, 3 * sizeof(int));
                n->in[1] = sc;
                n->in[2] = bc;
                n->nin = 3;
                n->out = vcc_realloc(n->out, 3 * sizeof(int));
                n->out[0] = out;
                n->out[1] = mean;
                n->out[2] = invstd;
                n->nout = 3;
                g->tensors[mean].producer = g->tensors[invstd].producer = a;
                vcc_attr_set_float(n, "epsilon", eps);
                vcc_attr_set_int(n, "num_groups", G);
                vcc_attr_set_int(n, "per_channel", 1);
                fused++;
                goto next;
            }
        }
    next:;
    }
    free(nreaders);
    free(reader);
    return fused;
}

/* Fold each Transpose that swaps the last two dims of a MatMul's B (rank >= 2; A of rank >= 2), read by
 * that MatMul alone, into the MatMul as transB=1 (ir/ops/matmul.c): the MatMul reads the Transpose's
 * input and the copy goes. torch exports nn.Linear on a batched input as MatMul(X, Transpose(W)) and
 * k.transpose(-1, -2) as a Transpose; as written, backward saves each copy (for dA = dY B^T), a second
 * copy of every such weight for the whole step. Runs after the attention fusion, which takes its own
 * Transpose. Returns how many. */
static int fold_transposed_b(VccGraph *g) {
    int folded = 0, *reader, *nreaders = count_readers(g, &reader);
    for (int k = 0; k < g->nnodes; k++) {
        VccNode *n = &g->nodes[k];
        if (n->op != VCC_OP_MATMUL || n->nin != 2 || n->nout != 1 || n->in[0] < 0 || n->in[1] < 0 ||
            g->tensors[n->in[0]].shape.rank < 2 || vcc_attr_int(n, "transB", 0))
            continue;
        int src = swapped_from(g, n->in[1], k, nreaders, reader);
        if (src < 0) continue;
        n->in[1] = src;
        vcc_attr_set_int(n, "transB", 1);
        folded++;
    }
    free(nreaders);
    free(reader);
    return folded;
}

VccStatus vcc_fuse_attention(VccCtx *ctx, VccGraph *g) {
    int fused = fuse_gelu(g) + fuse_swish(g) + fuse_groupnorm(g);
    if (ctx->no_fuse_attention) {
        if (fused + fold_transposed_b(g)) vcc_fold_sweep(g);
        return VCC_OK;
    }
    for (int s = 0; s < g->nnodes; s++) {
        if (g->nodes[s].op != VCC_OP_SOFTMAX) continue;
        int *reader, *nreaders = count_readers(g, &reader);
        bool *reach = param_reach(g);
        Match m;
        bool ok = reach && match_at(g, s, nreaders, reader, reach, &m);
        free(nreaders);
        free(reader);
        free(reach);
        if (!ok) continue;
        rewrite(g, &m);
        fused++;
    }
    fused += fold_transposed_b(g);
    if (fused) vcc_fold_sweep(g);
    return VCC_OK;
}
