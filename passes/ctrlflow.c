/*
 * ctrlflow.c — static control flow: If, Loop and the sequence ops expanded into ordinary nodes.
 *
 * Called by passes/shape for each such node when its turn comes, so every value it depends on that can
 * fold has folded (a condition computed from a Shape, a trip count from a size).
 *   - If whose condition is a constant: the chosen branch's nodes (tensors renamed "<If>/<name>",
 *     enclosing-scope names resolved) take the If's place, Identity nodes bind its outputs.
 *   - Loop whose trip count is a constant and whose condition is absent or a constant: one iteration at
 *     a time, the body's nodes (iteration number and condition as constants, loop-carried values wired)
 *     then a Loop for the remaining iterations, which reads the body's condition output: that has folded
 *     by its turn, or the loop is refused. When the loop ends, its scan outputs are the Concat of their
 *     per-iteration values Unsqueezed on a new axis 0.
 *   - Sequences with static lengths are compile-time lists of tensors (VccSeqs): SequenceEmpty and
 *     SequenceInsert build them, SequenceAt with a constant position picks one, SequenceLength is a
 *     constant, ConcatFromSequence a Concat, SplitToSequence (constant split, or none) a Split whose
 *     outputs are the items (each Squeezed on the axis when keepdims is 0 and there is no split).
 * A condition, trip count or position computed at run time is an error naming the node, its op and the
 * value. The expansion's nodes get their canonical form and shapes as the pass reaches them.
 * Source: ONNX operator spec, If-16, Loop-16, SequenceEmpty-11, SequenceInsert-11, SequenceAt-11,
 * SequenceLength-11, ConcatFromSequence-11, SplitToSequence-11.
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

static const char *const ctrl_ops[] = {"If", "Loop", "SequenceEmpty", "SequenceInsert", "SequenceAt",
                                       "SequenceLength", "ConcatFromSequence", "SplitToSequence"};

const char *vcc_ctrl_op_name(int i) {
    return i >= 0 && i < (int)(sizeof ctrl_ops / sizeof *ctrl_ops) ? ctrl_ops[i] : NULL;
}

bool vcc_ctrl_op(const VccNode *n) {
    if (n->op != VCC_OP_UNSUPPORTED || n->domain || !n->onnx_op) return false;
    for (size_t i = 0; i < sizeof ctrl_ops / sizeof *ctrl_ops; i++)
        if (strcmp(n->onnx_op, ctrl_ops[i]) == 0) return true;
    return false;
}

void vcc_seqs_free(VccSeqs *s) {
    for (int t = 0; t < s->cap; t++) free(s->items[t]);
    free(s->items);
    free(s->n);
    memset(s, 0, sizeof *s);
}

/* Tensor t is the sequence items[0..n). */
static void seq_set(VccSeqs *s, int t, const int *items, int n) {
    if (t >= s->cap) {
        int cap = t + 64;
        s->items = vcc_realloc(s->items, sizeof(int *) * (size_t)cap);
        s->n = vcc_realloc(s->n, sizeof(int) * (size_t)cap);
        for (int i = s->cap; i < cap; i++) s->items[i] = NULL, s->n[i] = -1;
        s->cap = cap;
    }
    free(s->items[t]);
    s->items[t] = vcc_malloc(sizeof(int) * (size_t)(n + 1));
    if (n) memcpy(s->items[t], items, sizeof(int) * (size_t)n);
    s->n[t] = n;
}

/* The length of sequence t, -1 when t is not a known sequence. */
static int seq_len(const VccSeqs *s, int t) { return t >= 0 && t < s->cap ? s->n[t] : -1; }

static bool known(const VccGraph *g, int t) {
    return t >= 0 && g->tensors[t].kind == VCC_T_CONST && g->tensors[t].data && g->tensors[t].dtype != VCC_DT_UNDEF;
}

/* The first element of constant t as an int64 (bool, integers, floats truncated). */
static int64_t const_i64(const VccGraph *g, int t) {
    const VccTensor *x = &g->tensors[t];
    if (!x->data_bytes) return 0;
    switch (x->dtype) {
    case VCC_BOOL: case VCC_U8: return *(const uint8_t *)x->data;
    case VCC_I8: return *(const int8_t *)x->data;
    case VCC_I16: return *(const int16_t *)x->data;
    case VCC_U16: return *(const uint16_t *)x->data;
    case VCC_I32: return *(const int32_t *)x->data;
    case VCC_U32: return *(const uint32_t *)x->data;
    case VCC_F32: return (int64_t) * (const float *)x->data;
    case VCC_F64: return (int64_t) * (const double *)x->data;
    default: return *(const int64_t *)x->data;
    }
}

/* A new constant: an int64 vector of n values (rank 0 when scalar) or a bool scalar. */
static int new_const(VccGraph *g, VccDType dt, const int64_t *v, int n, bool scalar, const char *name) {
    VccShape sh = {.rank = scalar ? 0 : 1, .dims = {n}};
    int t = vcc_tensor_add_unique(g, dt, &sh, VCC_T_CONST, "%s", name);
    size_t es = dt == VCC_BOOL ? 1 : 8;
    g->tensors[t].data = vcc_calloc((size_t)(n ? n : 1), es);
    g->tensors[t].data_bytes = es * (size_t)n;
    for (int i = 0; i < n; i++) {
        if (dt == VCC_BOOL) ((uint8_t *)g->tensors[t].data)[i] = v[i] != 0;
        else ((int64_t *)g->tensors[t].data)[i] = v[i];
    }
    return t;
}

/* A new node of ONNX op type `op` (ops.def's row), its canonical form left for its turn in passes/shape. */
static int add_node(VccGraph *g, const char *op, const char *name, const int *in, int nin, const int *out, int nout) {
    VccOp vop = vcc_op_from_onnx(op);
    VCC_ASSERT(vop != VCC_OP_COUNT);
    int id = vcc_node_add(g, vop, name, in, nin, out, nout, VCC_PHASE_FORWARD);
    g->nodes[id].onnx_op = vcc_strdup(op);
    g->nodes[id].canon_later = vcc_op_def(vop)->canon != NULL;
    return id;
}

/* Tensor dst takes the value of src: the same list for a sequence, else an Identity node. */
static void bind(VccGraph *g, VccSeqs *s, int src, int dst, const char *name) {
    if (dst < 0) return;
    if (seq_len(s, src) >= 0) {
        seq_set(s, dst, s->items[src], s->n[src]);
        return;
    }
    char *nm = vcc_strfmt("%s/bind", name);
    add_node(g, "Identity", nm, &src, 1, &dst, 1);
    free(nm);
}

/* The extra inputs of node n: the values of enclosing scopes its subgraphs read (VccSubgraph). */
static int nouter_of(const VccGraph *g, const VccNode *n) {
    int c = 0;
    for (int s = 0; s < 2; s++)
        if (n->sub[s] > 0 && n->sub[s] <= g->nsubs) c += g->subs[n->sub[s] - 1].nouter;
    return c;
}

/* Copy subgraph `sub` (1-based) of node k into g: its inputs bound to ins (nins of them), its values of
 * enclosing scopes resolved, its constants copied, its other values new tensors "<prefix>/<name>"; the
 * tensors its outputs became in outs (malloc'd, *nouts). */
static VccStatus splice(VccCtx *ctx, VccGraph *g, int k, int sub, const int *ins, int nins, const char *prefix,
                        int **outs, int *nouts) {
    *outs = NULL;
    if (sub <= 0 || sub > g->nsubs) {
        vcc_error(ctx, "node '%s' (%s): its subgraph is missing", g->nodes[k].name, g->nodes[k].onnx_op);
        return VCC_ERR_PARSE;
    }
    const VccSubgraph *S = &g->subs[sub - 1];
    const VccGraph *G = S->g;
    if (G->ninputs != nins) {
        vcc_error(ctx, "node '%s' (%s): its subgraph has %d inputs, expected %d", g->nodes[k].name,
                  g->nodes[k].onnx_op, G->ninputs, nins);
        return VCC_ERR_PARSE;
    }
    int *map = vcc_malloc(sizeof(int) * (size_t)(G->ntensors + 1));
    for (int t = 0; t < G->ntensors; t++) map[t] = -3;
    for (int i = 0; i < nins; i++) map[G->inputs[i]] = ins[i];
    /* the values of enclosing scopes: the node's extra inputs (sub[0]'s, then sub[1]'s) */
    const VccNode *nk = &g->nodes[k];
    int at = nk->nin - nouter_of(g, nk) + (sub == nk->sub[1] && nk->sub[0] > 0 ? g->subs[nk->sub[0] - 1].nouter : 0);
    for (int i = 0; i < S->nouter; i++) map[S->outer[i]] = nk->in[at + i];
    for (int t = 0; t < G->ntensors; t++) {
        const VccTensor *x = &G->tensors[t];
        if (map[t] != -3) continue;
        if (x->producer < 0 && x->data) {
            map[t] = vcc_tensor_add_unique(g, x->dtype, &x->shape, VCC_T_CONST, "%s%s%s", prefix, x->name[0] == '/' ? "" : "/", x->name);
            VccTensor *c = &g->tensors[map[t]];
            c->data = vcc_malloc(x->data_bytes ? x->data_bytes : 1);
            if (x->data_bytes) memcpy(c->data, x->data, x->data_bytes);
            c->data_bytes = x->data_bytes;
        } else {
            map[t] = vcc_tensor_add_unique(g, x->dtype, &x->shape, VCC_T_ACT, "%s%s%s", prefix, x->name[0] == '/' ? "" : "/", x->name);
        }
    }
    for (int j = 0; j < G->nnodes; j++) {
        const VccNode *m = &G->nodes[j];
        int *io = vcc_malloc(sizeof(int) * (size_t)(m->nin + m->nout + 1));
        for (int i = 0; i < m->nin; i++) io[i] = m->in[i] >= 0 ? map[m->in[i]] : -1;
        for (int i = 0; i < m->nout; i++) io[m->nin + i] = m->out[i] >= 0 ? map[m->out[i]] : -1;
        char *nm = vcc_strfmt("%s%s%s", prefix, m->name[0] == '/' ? "" : "/", m->name);
        int id = vcc_node_add(g, m->op, nm, io, m->nin, io + m->nin, m->nout, VCC_PHASE_FORWARD);
        free(nm);
        free(io);
        VccNode *n = &g->nodes[id];
        n->onnx_op = m->onnx_op ? vcc_strdup(m->onnx_op) : NULL;
        n->domain = m->domain ? vcc_strdup(m->domain) : NULL;
        vcc_attr_copy_all(n, m);
        n->canon_later = m->op != VCC_OP_UNSUPPORTED && vcc_op_def(m->op)->canon != NULL;
        n->sub[0] = m->sub[0]; /* a nested If or Loop: its extra inputs were mapped with the others */
        n->sub[1] = m->sub[1];
    }
    *nouts = G->noutputs;
    *outs = vcc_malloc(sizeof(int) * (size_t)(G->noutputs + 1));
    for (int i = 0; i < G->noutputs; i++) (*outs)[i] = map[G->outputs[i]];
    free(map);
    return VCC_OK;
}

/* The Concat along `axis` of the tensors of sequence items (n of them), each first Unsqueezed at axis
 * when new_axis, into dst. */
static VccStatus concat_seq(VccCtx *ctx, VccGraph *g, const VccNode *n, const int *items, int cnt, int axis,
                            bool new_axis, int dst) {
    if (cnt == 0) {
        vcc_error(ctx, "node '%s' (%s): output '%s' would concatenate an empty sequence", n->name, n->onnx_op,
                  g->tensors[dst].name);
        return VCC_ERR_UNSUPPORTED;
    }
    char *base = vcc_strdup(n->name);
    int *parts = vcc_malloc(sizeof(int) * (size_t)cnt);
    for (int i = 0; i < cnt; i++) {
        parts[i] = items[i];
        if (!new_axis) continue;
        VccShape none = {.rank = 0};
        char *nm = vcc_strfmt("%s/unsqueeze%d", base, i);
        int u = vcc_tensor_add_unique(g, VCC_DT_UNDEF, &none, VCC_T_ACT, "%s", nm);
        int64_t ax = axis;
        if (g->opset >= 13) {
            int in[2] = {items[i], new_const(g, VCC_I64, &ax, 1, false, nm)};
            add_node(g, "Unsqueeze", nm, in, 2, &u, 1);
        } else {
            int id = add_node(g, "Unsqueeze", nm, &items[i], 1, &u, 1);
            vcc_attr_set_ints(&g->nodes[id], "axes", &ax, 1);
        }
        free(nm);
        parts[i] = u;
    }
    char *nm = vcc_strfmt("%s/concat", base);
    int id = add_node(g, "Concat", nm, parts, cnt, &dst, 1);
    vcc_attr_set_int(&g->nodes[id], "axis", axis);
    free(nm);
    free(parts);
    free(base);
    return VCC_OK;
}

static VccStatus runtime_value(VccCtx *ctx, const VccGraph *g, int k, const char *what, int t) {
    vcc_error(ctx, "node '%s' (%s): %s '%s' is computed at run time", g->nodes[k].name, g->nodes[k].onnx_op, what,
              g->tensors[t].name);
    return VCC_ERR_UNSUPPORTED;
}

static VccStatus expand_if(VccCtx *ctx, VccGraph *g, int k, VccSeqs *s) {
    const VccNode *n = &g->nodes[k];
    if (n->nin < 1 || n->in[0] < 0) {
        vcc_error(ctx, "node '%s' (If): it has no condition", n->name);
        return VCC_ERR_PARSE;
    }
    if (!known(g, n->in[0])) return runtime_value(ctx, g, k, "condition", n->in[0]);
    bool c = const_i64(g, n->in[0]) != 0;
    char *prefix = vcc_strdup(n->name);
    int *outs, nouts;
    VccStatus st = splice(ctx, g, k, g->nodes[k].sub[c ? 0 : 1], NULL, 0, prefix, &outs, &nouts);
    n = &g->nodes[k];
    if (!st && nouts != n->nout) {
        vcc_error(ctx, "node '%s' (If): its branch has %d outputs, the node %d", n->name, nouts, n->nout);
        st = VCC_ERR_PARSE;
    }
    for (int i = 0; !st && i < nouts; i++) bind(g, s, outs[i], g->nodes[k].out[i], prefix);
    free(outs);
    free(prefix);
    return st;
}

/* One step of a Loop: the loop ends (outputs bound, scan outputs concatenated) or one iteration is
 * unrolled before a Loop node for the rest. Hidden state of that node: attribute "vcc.iter" (the next
 * iteration number) and, after the carried values, one sequence input per scan output. */
static VccStatus expand_loop(VccCtx *ctx, VccGraph *g, int k, VccSeqs *s) {
    const VccNode *n = &g->nodes[k];
    if (n->sub[0] <= 0 || n->sub[0] > g->nsubs) {
        vcc_error(ctx, "node '%s' (Loop): its body is missing", n->name);
        return VCC_ERR_PARSE;
    }
    const VccGraph *B = g->subs[n->sub[0] - 1].g;
    int64_t iter = vcc_attr_int(n, "vcc.iter", 0);
    bool first = !vcc_attr_get(n, "vcc.iter");
    int nv = B->ninputs - 2, nscan = B->noutputs - 1 - nv, nouter = nouter_of(g, n);
    if (nv < 0 || nscan < 0 || n->nin != 2 + nv + (first ? 0 : nscan) + nouter || n->nout != nv + nscan) {
        vcc_error(ctx, "node '%s' (Loop): its inputs and outputs do not match its body's", n->name);
        return VCC_ERR_PARSE;
    }
    int M = n->in[0], cond = n->in[1];
    if (M < 0 && cond < 0) {
        vcc_error(ctx, "node '%s' (Loop): it has neither a trip count nor a condition", n->name);
        return VCC_ERR_UNSUPPORTED;
    }
    if (M >= 0 && !known(g, M)) return runtime_value(ctx, g, k, "trip count", M);
    if (cond >= 0 && !known(g, cond)) return runtime_value(ctx, g, k, "condition", cond);
    if (M < 0 && iter >= 4096) {
        vcc_error(ctx, "node '%s' (Loop): its condition stays true past 4096 iterations", n->name);
        return VCC_ERR_UNSUPPORTED;
    }
    bool more = (M < 0 || iter < const_i64(g, M)) && (cond < 0 || const_i64(g, cond) != 0);
    char *name = vcc_strdup(n->name);
    VccStatus st = VCC_OK;
    if (!more) {
        for (int i = 0; i < nv; i++) bind(g, s, g->nodes[k].in[2 + i], g->nodes[k].out[i], name);
        for (int j = 0; j < nscan && !st; j++) {
            int seq = first ? -1 : g->nodes[k].in[2 + nv + j];
            st = concat_seq(ctx, g, &g->nodes[k], seq >= 0 ? s->items[seq] : NULL, seq >= 0 ? s->n[seq] : 0, 0, true,
                            g->nodes[k].out[nv + j]);
        }
        free(name);
        return st;
    }
    int *ins = vcc_malloc(sizeof(int) * (size_t)(nv + 2));
    char *prefix = vcc_strfmt("%s.%lld", name, (long long)iter);
    char *nm = vcc_strfmt("%s/iter", prefix);
    ins[0] = new_const(g, VCC_I64, &iter, 1, true, nm);
    free(nm);
    int64_t one = 1;
    nm = vcc_strfmt("%s/cond", prefix);
    ins[1] = cond >= 0 ? cond : new_const(g, VCC_BOOL, &one, 1, true, nm);
    free(nm);
    for (int i = 0; i < nv; i++) ins[2 + i] = g->nodes[k].in[2 + i];
    int *outs, nouts;
    st = splice(ctx, g, k, g->nodes[k].sub[0], ins, nv + 2, prefix, &outs, &nouts);
    if (!st) {
        /* the Loop for the remaining iterations */
        const VccNode *o = &g->nodes[k];
        int *in = vcc_malloc(sizeof(int) * (size_t)(2 + nv + nscan + nouter + 1));
        for (int i = 0; i < nouter; i++) in[2 + nv + nscan + i] = o->in[o->nin - nouter + i];
        in[0] = o->in[0];
        in[1] = outs[0];
        for (int i = 0; i < nv; i++) in[2 + i] = outs[1 + i];
        for (int j = 0; j < nscan; j++) {
            int prev = first ? -1 : o->in[2 + nv + j];
            int cnt = prev >= 0 ? s->n[prev] : 0;
            int *items = vcc_malloc(sizeof(int) * (size_t)(cnt + 1));
            if (cnt) memcpy(items, s->items[prev], sizeof(int) * (size_t)cnt);
            items[cnt] = outs[1 + nv + j];
            VccShape none = {.rank = 0};
            nm = vcc_strfmt("%s/scan%d", prefix, j);
            in[2 + nv + j] = vcc_tensor_add_unique(g, VCC_DT_UNDEF, &none, VCC_T_ACT, "%s", nm);
            free(nm);
            seq_set(s, in[2 + nv + j], items, cnt + 1);
            free(items);
        }
        int *out = vcc_malloc(sizeof(int) * (size_t)(o->nout + 1));
        memcpy(out, o->out, sizeof(int) * (size_t)o->nout);
        int id = vcc_node_add(g, VCC_OP_UNSUPPORTED, name, in, 2 + nv + nscan + nouter, out, g->nodes[k].nout, VCC_PHASE_FORWARD);
        VccNode *r = &g->nodes[id];
        r->onnx_op = vcc_strdup("Loop");
        vcc_attr_copy_all(r, &g->nodes[k]);
        vcc_attr_set_int(r, "vcc.iter", iter + 1);
        r->sub[0] = g->nodes[k].sub[0];
        free(in);
        free(out);
    }
    free(outs);
    free(ins);
    free(prefix);
    free(name);
    return st;
}

/* The sequence read by node k's input i, or an error when it is not known while compiling. */
static VccStatus seq_input(VccCtx *ctx, const VccGraph *g, int k, int i, const VccSeqs *s) {
    const VccNode *n = &g->nodes[k];
    if (i < n->nin && seq_len(s, n->in[i]) >= 0) return VCC_OK;
    if (i < n->nin && n->in[i] >= 0)
        vcc_error(ctx, "node '%s' (%s): sequence '%s' is computed at run time", n->name, n->onnx_op,
                  g->tensors[n->in[i]].name);
    else
        vcc_error(ctx, "node '%s' (%s): it has no sequence input", n->name, n->onnx_op);
    return VCC_ERR_UNSUPPORTED;
}

/* A constant position into a sequence of length len (negative: from the end), checked. */
static VccStatus seq_pos(VccCtx *ctx, const VccGraph *g, int k, int t, int len, bool insert, int *pos) {
    if (!known(g, t)) return runtime_value(ctx, g, k, "position", t);
    int64_t p = const_i64(g, t);
    if (p < 0) p += len;
    if (p < 0 || p > len - (insert ? 0 : 1)) {
        vcc_error(ctx, "node '%s' (%s): position %lld is outside the sequence of %d", g->nodes[k].name,
                  g->nodes[k].onnx_op, (long long)const_i64(g, t), len);
        return VCC_ERR_SHAPE;
    }
    *pos = (int)p;
    return VCC_OK;
}

/* SplitToSequence-11: x cut along `axis` into the pieces the constant split input gives (a scalar: pieces
 * of that length, the last one shorter; a vector: the lengths), or with no split into pieces of length 1,
 * Squeezed on the axis when keepdims is 0. Becomes one Split (and the Squeezes) whose outputs are the
 * sequence's items. */
static VccStatus split_to_seq(VccCtx *ctx, VccGraph *g, int k, VccSeqs *s) {
    const VccNode *n = &g->nodes[k];
    int x = n->nin > 0 ? n->in[0] : -1, out = n->nout > 0 ? n->out[0] : -1;
    if (x < 0 || g->tensors[x].dtype == VCC_DT_UNDEF) {
        vcc_error(ctx, "node '%s' (SplitToSequence): it has no input", n->name);
        return VCC_ERR_PARSE;
    }
    VccShape xs = g->tensors[x].shape;
    int64_t axis = vcc_attr_int(n, "axis", 0);
    if (axis < -xs.rank || axis >= xs.rank) {
        vcc_error(ctx, "node '%s' (SplitToSequence): axis %lld is outside the rank %d of '%s'", n->name,
                  (long long)axis, xs.rank, g->tensors[x].name);
        return VCC_ERR_SHAPE;
    }
    if (axis < 0) axis += xs.rank;
    int64_t len = xs.dims[axis], cnt = 0, *sizes = NULL;
    bool has_split = n->nin > 1 && n->in[1] >= 0, squeeze = !has_split && vcc_attr_int(n, "keepdims", 1) == 0;
    if (has_split) {
        int sp = n->in[1];
        const VccTensor *t = &g->tensors[sp];
        if (!known(g, sp)) return runtime_value(ctx, g, k, "split", sp);
        if (t->dtype != VCC_I64 && t->dtype != VCC_I32) {
            vcc_error(ctx, "node '%s' (SplitToSequence): split '%s' is not int32 or int64", n->name, t->name);
            return VCC_ERR_PARSE;
        }
        int64_t nv = (int64_t)(t->data_bytes / (t->dtype == VCC_I64 ? 8 : 4)), sum = 0;
        if (t->shape.rank > 1 || nv != vcc_shape_numel(&t->shape) || (t->shape.rank == 0 && nv != 1)) {
            vcc_error(ctx, "node '%s' (SplitToSequence): split '%s' is neither a scalar nor a vector", n->name,
                      t->name);
            return VCC_ERR_SHAPE;
        }
        if (t->shape.rank == 0) {
            int64_t c = t->dtype == VCC_I64 ? *(const int64_t *)t->data : *(const int32_t *)t->data;
            if (c <= 0) {
                vcc_error(ctx, "node '%s' (SplitToSequence): split length %lld is not positive", n->name,
                          (long long)c);
                return VCC_ERR_SHAPE;
            }
            cnt = (len + c - 1) / c;
            sizes = vcc_malloc(sizeof(int64_t) * (size_t)(cnt + 1));
            for (int64_t i = 0; i < cnt; i++) sizes[i] = i + 1 < cnt ? c : len - c * (cnt - 1);
        } else {
            cnt = nv;
            sizes = vcc_malloc(sizeof(int64_t) * (size_t)(cnt + 1));
            for (int64_t i = 0; i < cnt; i++) {
                sizes[i] = t->dtype == VCC_I64 ? ((const int64_t *)t->data)[i] : ((const int32_t *)t->data)[i];
                if (sizes[i] < 0 || sizes[i] > len - sum) {
                    vcc_error(ctx, "node '%s' (SplitToSequence): split '%s' does not add up to the length %lld "
                              "of axis %lld", n->name, t->name, (long long)len, (long long)axis);
                    free(sizes);
                    return VCC_ERR_SHAPE;
                }
                sum += sizes[i];
            }
            if (sum != len) {
                vcc_error(ctx, "node '%s' (SplitToSequence): split '%s' adds up to %lld, not the length %lld of "
                          "axis %lld", n->name, t->name, (long long)sum, (long long)len, (long long)axis);
                free(sizes);
                return VCC_ERR_SHAPE;
            }
        }
    } else {
        cnt = len;
        sizes = vcc_malloc(sizeof(int64_t) * (size_t)(cnt + 1));
        for (int64_t i = 0; i < cnt; i++) sizes[i] = 1;
    }
    if (cnt > 65536) {
        vcc_error(ctx, "node '%s' (SplitToSequence): %lld pieces are more than vcc's limit of 65536", n->name,
                  (long long)cnt);
        free(sizes);
        return VCC_ERR_UNSUPPORTED;
    }
    char *base = vcc_strdup(n->name);
    int *items = vcc_malloc(sizeof(int) * (size_t)(cnt + 1)), *parts = vcc_malloc(sizeof(int) * (size_t)(cnt + 1));
    VccShape none = {.rank = 0};
    for (int64_t i = 0; i < cnt; i++) {
        parts[i] = vcc_tensor_add_unique(g, VCC_DT_UNDEF, &none, VCC_T_ACT, "%s/item%lld", base, (long long)i);
        items[i] = parts[i];
    }
    if (cnt > 0) {
        char *nm = vcc_strfmt("%s/split", base);
        int in[2] = {x, -1}, id;
        if (g->opset >= 13) {
            in[1] = new_const(g, VCC_I64, sizes, (int)cnt, false, nm);
            id = add_node(g, "Split", nm, in, 2, parts, (int)cnt);
        } else {
            id = add_node(g, "Split", nm, in, 1, parts, (int)cnt);
            vcc_attr_set_ints(&g->nodes[id], "split", sizes, (int)cnt);
        }
        vcc_attr_set_int(&g->nodes[id], "axis", axis);
        free(nm);
    }
    for (int64_t i = 0; squeeze && i < cnt; i++) {
        char *nm = vcc_strfmt("%s/squeeze%lld", base, (long long)i);
        items[i] = vcc_tensor_add_unique(g, VCC_DT_UNDEF, &none, VCC_T_ACT, "%s", nm);
        if (g->opset >= 13) {
            int in[2] = {parts[i], new_const(g, VCC_I64, &axis, 1, false, nm)};
            add_node(g, "Squeeze", nm, in, 2, &items[i], 1);
        } else {
            int id = add_node(g, "Squeeze", nm, &parts[i], 1, &items[i], 1);
            vcc_attr_set_ints(&g->nodes[id], "axes", &axis, 1);
        }
        free(nm);
    }
    if (out >= 0) seq_set(s, out, items, (int)cnt);
    free(items);
    free(parts);
    free(sizes);
    free(base);
    return VCC_OK;
}

static VccStatus expand_seq(VccCtx *ctx, VccGraph *g, int k, VccSeqs *s) {
    const VccNode *n = &g->nodes[k];
    const char *op = n->onnx_op;
    int out = n->nout > 0 ? n->out[0] : -1;
    VccStatus st = VCC_OK;
    int pos = 0;
    if (strcmp(op, "SequenceEmpty") == 0) {
        if (out >= 0) seq_set(s, out, NULL, 0);
        return VCC_OK;
    }
    if (strcmp(op, "SplitToSequence") == 0) return split_to_seq(ctx, g, k, s);
    if ((st = seq_input(ctx, g, k, 0, s))) return st;
    int in = n->in[0], len = s->n[in];
    if (strcmp(op, "SequenceInsert") == 0) {
        if (n->nin < 2 || n->in[1] < 0) {
            vcc_error(ctx, "node '%s' (SequenceInsert): it has no tensor to insert", n->name);
            return VCC_ERR_PARSE;
        }
        pos = len;
        if (n->nin > 2 && n->in[2] >= 0 && (st = seq_pos(ctx, g, k, n->in[2], len, true, &pos))) return st;
        int *items = vcc_malloc(sizeof(int) * (size_t)(len + 1));
        memcpy(items, s->items[in], sizeof(int) * (size_t)pos);
        items[pos] = n->in[1];
        memcpy(items + pos + 1, s->items[in] + pos, sizeof(int) * (size_t)(len - pos));
        if (out >= 0) seq_set(s, out, items, len + 1);
        free(items);
    } else if (strcmp(op, "SequenceAt") == 0) {
        if (n->nin < 2 || n->in[1] < 0) {
            vcc_error(ctx, "node '%s' (SequenceAt): it has no position", n->name);
            return VCC_ERR_PARSE;
        }
        if ((st = seq_pos(ctx, g, k, n->in[1], len, false, &pos))) return st;
        char *name = vcc_strdup(n->name);
        bind(g, s, s->items[in][pos], out, name);
        free(name);
    } else if (strcmp(op, "SequenceLength") == 0) {
        if (out >= 0) {
            VccTensor *t = &g->tensors[out];
            t->dtype = VCC_I64;
            t->shape.rank = 0;
            t->kind = VCC_T_CONST;
            t->data = vcc_malloc(8);
            t->data_bytes = 8;
            *(int64_t *)t->data = len;
        }
    } else { /* ConcatFromSequence */
        int64_t axis = vcc_attr_int(n, "axis", 0);
        bool new_axis = vcc_attr_int(n, "new_axis", 0) != 0;
        int *items = vcc_malloc(sizeof(int) * (size_t)(len + 1));
        memcpy(items, s->items[in], sizeof(int) * (size_t)len);
        st = concat_seq(ctx, g, n, items, len, (int)axis, new_axis, out);
        free(items);
    }
    return st;
}

VccStatus vcc_ctrl_expand(VccCtx *ctx, VccGraph *g, int k, VccSeqs *s, int *delta) {
    *delta = 0;
    int from = g->nnodes;
    const char *op = g->nodes[k].onnx_op;
    /* the node's outputs lose their producer: the expansion's nodes produce them, or they are sequences */
    for (int i = 0; i < g->nodes[k].nout; i++)
        if (g->nodes[k].out[i] >= 0) g->tensors[g->nodes[k].out[i]].producer = -1;
    VccStatus st = strcmp(op, "If") == 0     ? expand_if(ctx, g, k, s)
                   : strcmp(op, "Loop") == 0 ? expand_loop(ctx, g, k, s)
                                             : expand_seq(ctx, g, k, s);
    if (st) return st;
    /* the new nodes [from, nnodes) take node k's place */
    int cnt = g->nnodes - from;
    VccNode *moved = vcc_malloc(sizeof(VccNode) * (size_t)(cnt + 1));
    memcpy(moved, g->nodes + from, sizeof(VccNode) * (size_t)cnt);
    vcc_node_release(&g->nodes[k]);
    memmove(g->nodes + k + cnt, g->nodes + k + 1, sizeof(VccNode) * (size_t)(from - k - 1));
    memcpy(g->nodes + k, moved, sizeof(VccNode) * (size_t)cnt);
    free(moved);
    g->nnodes = from - 1 + cnt;
    for (int j = k; j < g->nnodes; j++)
        for (int i = 0; i < g->nodes[j].nout; i++)
            if (g->nodes[j].out[i] >= 0) g->tensors[g->nodes[j].out[i]].producer = j;
    *delta = cnt - 1;
    return VCC_OK;
}
