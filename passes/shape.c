/*
 * shape.c — static shape and dtype inference for forward nodes.
 *
 * Requires: canonical form; every graph input's shape bound (frontend resolves --shape).
 * Produces: dtype and shape for every forward node output; views get their own shape; ops with
 *   workspaces (Conv) gain their WORKSPACE outputs. Nodes whose inputs are all known while compiling
 *   (constants, and static shapes for Shape/Size) are evaluated instead (ir/ops/fold.c): their outputs
 *   become CONST tensors with data and the nodes go, with dead nodes and the constants only they read.
 *   A node whose canonical form waited for shapes gets it first: canon_later ones (an input folded
 *   during shapes) and the lowerings into other ops (VCC_OPF_LOWER: Einsum), whose new nodes get their
 *   shapes at once and their place just before the node they lowered. If, Loop and the sequence ops
 *   are expanded into ordinary nodes when reached (passes/ctrlflow.c), which are processed next.
 * The rules are the op families' (ir/ops/<family>.c, VccOpDef.shape), after the ONNX operator spec.
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

/* The shape rule of node k (its family's), setting (check false) or checking (check true) its outputs. */
static VccStatus node_rule(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    const VccOpDef *def = vcc_op_def(n->op);
    if (!def->shape) {
        vcc_error(ctx, "node '%s' (%s): no %s rule", n->name, vcc_op_name(n->op), check ? "type" : "shape");
        return VCC_ERR_UNSUPPORTED;
    }
    return def->shape(ctx, g, k, check);
}

/* The canonical form of node k that passes/canonical left for now: the values it reads have folded into
 * constants (their nodes are going: the constants stand alone, as initializers do). */
static VccStatus late_canon(VccCtx *ctx, VccGraph *g, int k) {
    VccNode *n = &g->nodes[k];
    n->canon_later = false;
    for (int i = 0; i < n->nin; i++) {
        VccTensor *t = n->in[i] >= 0 ? &g->tensors[n->in[i]] : NULL;
        if (t && t->kind == VCC_T_CONST && t->data && t->producer >= 0) t->producer = -1;
    }
    VccStatus st = vcc_op_def(n->op)->canon(ctx, g, k);
    if (st) vcc_report_problems(ctx);
    return st;
}

/* Forward node k evaluated while compiling (ir/ops/fold.c; fold false: that was tried already) or given
 * its outputs' shapes by its rule, every output checked against the size limit. */
static VccStatus node_shapes(VccCtx *ctx, VccGraph *g, int k, bool fold) {
    int64_t bytes;
    bool folded = false; /* evaluated while compiling: its outputs are constants now */
    VccStatus st = fold ? vcc_fold_node(ctx, g, k, &folded) : VCC_OK;
    if (!st && !folded) st = node_rule(ctx, g, k, false);
    if (st) return st;
    const VccNode *n = &g->nodes[k];
    for (int i = 0; i < n->nout; i++) {
        const VccTensor *t = n->out[i] >= 0 ? &g->tensors[n->out[i]] : NULL;
        if (t && t->dtype != VCC_DT_UNDEF && !vcc_shape_checked_bytes(&t->shape, t->dtype, &bytes)) {
            vcc_error(ctx, "node '%s' (%s): output '%s' would be larger than vcc's limit of 2^47 bytes", n->name,
                      vcc_op_name(n->op), t->name);
            return VCC_ERR_SHAPE;
        }
    }
    return VCC_OK;
}

/* The nodes from n0 on, which lowerings appended (anchor[j - n0]: the node whose lowering made node j),
 * each placed just before its anchor, in the order they were made; producers follow. */
static void place_lowered(VccGraph *g, int n0, const int *anchor) {
    int n = g->nnodes;
    VccNode *nodes = vcc_malloc(sizeof(VccNode) * (size_t)n);
    int at = 0, j = n0;
    for (int k = 0; k < n0; k++) {
        while (j < n && anchor[j - n0] == k) nodes[at++] = g->nodes[j++];
        nodes[at++] = g->nodes[k];
    }
    VCC_ASSERT(at == n);
    memcpy(g->nodes, nodes, sizeof(VccNode) * (size_t)n);
    free(nodes);
    for (int k = 0; k < n; k++)
        for (int i = 0; i < g->nodes[k].nout; i++)
            if (g->nodes[k].out[i] >= 0) g->tensors[g->nodes[k].out[i]].producer = k;
}

VccStatus vcc_infer_shapes(VccCtx *ctx, VccGraph *g) {
    int64_t bytes;
    /* graph inputs: every dim at least 1 (0 too in forward-only programs, which ONNX lets hold empty
     * tensors); all sizes within VCC_MAX_TENSOR_BYTES, so no later size overflows */
    for (int i = 0; i < g->ninputs; i++) {
        const VccTensor *t = &g->tensors[g->inputs[i]];
        for (int d = 0; d < t->shape.rank; d++)
            if (t->shape.dims[d] < (ctx->forward_only ? 0 : 1)) {
                vcc_error(ctx, "input '%s': dim %d is %lld; vcc needs every input dim to be at least 1", t->name, d,
                          (long long)t->shape.dims[d]);
                return VCC_ERR_SHAPE;
            }
    }
    for (int i = 0; i < g->ntensors; i++) {
        const VccTensor *t = &g->tensors[i];
        if (t->producer < 0 && t->alias_of < 0 && t->dtype != VCC_DT_UNDEF &&
            !vcc_shape_checked_bytes(&t->shape, t->dtype, &bytes)) {
            vcc_error(ctx, "tensor '%s' is larger than vcc's limit of 2^47 bytes", t->name);
            return VCC_ERR_SHAPE;
        }
    }
    /* nodes in order; a lowering (VCC_OPF_LOWER) appends nodes that go before its node: they get their
     * shapes right away and their place after the loop (anchor: per appended node, its lowered node) */
    int n0 = g->nnodes, *anchor = NULL, nanchor = 0;
    VccStatus st = VCC_OK;
    VccSeqs seqs = {0};
    for (int k = 0; k < n0 && !st; k++) {
        if (g->nodes[k].phase != VCC_PHASE_FORWARD) continue;
        if (vcc_ctrl_op(&g->nodes[k])) { /* static control flow: its expansion takes its place, from k on */
            int delta;
            st = vcc_ctrl_expand(ctx, g, k, &seqs, &delta);
            n0 += delta;
            k--;
            continue;
        }
        bool folded;
        st = vcc_fold_node(ctx, g, k, &folded);
        if (st || folded) continue;
        bool lower = vcc_op_def(g->nodes[k].op)->flags & VCC_OPF_LOWER;
        if (g->nodes[k].canon_later || lower) {
            int from = g->nnodes;
            st = late_canon(ctx, g, k);
            if (g->nnodes > from) anchor = vcc_realloc(anchor, sizeof(int) * (size_t)(g->nnodes - n0));
            for (int j = from; j < g->nnodes; j++) anchor[nanchor++] = k;
            for (int j = from; !st && j < g->nnodes; j++) st = node_shapes(ctx, g, j, true);
        }
        if (!st) st = node_shapes(ctx, g, k, false);
    }
    if (!st && g->nnodes > n0) place_lowered(g, n0, anchor);
    free(anchor);
    vcc_seqs_free(&seqs);
    if (st) return st;
    vcc_fold_sweep(g); /* folded nodes, dead nodes and the constants only they read go */
    /* the graph outputs as the model declares them (element type, fixed dims) */
    for (int i = 0; i < g->noutputs && g->output_decl; i++) {
        const VccTensor *t = &g->tensors[g->outputs[i]];
        const VccShape *d = &g->output_decl[i];
        int want = g->output_elem_type[i], have = vcc_dtype_onnx(t->dtype);
        bool ok = (want == 0 || want == have) && (d->rank < 0 || d->rank == t->shape.rank);
        for (int k = 0; ok && d->rank >= 0 && k < d->rank; k++) ok = d->dims[k] < 0 || d->dims[k] == t->shape.dims[k];
        if (!ok) {
            char ty[160], dims[128];
            vcc_format_type(ty, sizeof ty, t);
            if (d->rank >= 0) vcc_shape_str(dims, sizeof dims, d);
            static const char *const onnx_names[] = {[1] = "FLOAT", [6] = "INT32", [7] = "INT64", [9] = "BOOL",
                                                     [11] = "DOUBLE"};
            const char *wname = want > 0 && want <= 11 ? onnx_names[want] : NULL;
            vcc_error(ctx, "graph output '%s' is declared %s %s, but the graph computes %s", t->name,
                      wname ? wname : want ? "of another element type" : "(any type)",
                      d->rank >= 0 ? dims : "(any shape)", ty);
            return VCC_ERR_SHAPE;
        }
    }
    /* views created by canonical (BN running outputs) already carry shapes; check all outputs known */
    for (int i = 0; i < g->ntensors; i++) {
        VccTensor *t = &g->tensors[i];
        if (t->dtype == VCC_DT_UNDEF && (t->producer >= 0 || t->alias_of >= 0)) {
            const VccNode *p = t->producer >= 0 ? &g->nodes[t->producer] : NULL;
            if (p)
                vcc_error(ctx, "node '%s' (%s): the shape of its output '%s' could not be inferred", p->name,
                          p->onnx_op ? p->onnx_op : vcc_op_name(p->op), t->name);
            else
                vcc_error(ctx, "tensor '%s': the shape could not be inferred", t->name);
            return VCC_ERR_SHAPE;
        }
    }
    return VCC_OK;
}

/* ------------------------------------------------------------------ type check of a whole graph */

/* Whether tensor t may be a view of (alias, share the bytes of) tensor b: only where its producer writes
 * no code for it (the output of a view op: Reshape, Identity... of its data input; passes/canonical.c) or
 * updates b in place through it (a training-form BatchNormalization's running statistics, outputs 3 and 4
 * of its inputs 3 and 4; a GraphLoss's loss, its input). Any other node would compute into b's bytes. */
static bool alias_ok(const VccGraph *g, int t, int b) {
    const VccTensor *x = &g->tensors[t];
    if (x->producer < 0 || x->producer >= g->nnodes) return false;
    const VccNode *n = &g->nodes[x->producer];
    if ((vcc_op_def(n->op)->flags & VCC_OPF_VIEW) || n->op == VCC_OP_GRAPH_LOSS)
        return n->nin >= 1 && n->nout == 1 && n->out[0] == t && n->in[0] == b;
    if (n->op == VCC_OP_BATCHNORM)
        for (int i = 3; i < 5; i++)
            if (n->nout > i && n->nin > i && n->out[i] == t && n->in[i] == b) return true;
    return false;
}

VccStatus vcc_check_types(VccCtx *ctx, VccGraph *g) {
    VccStatus st = VCC_OK;
    for (int t = 0; t < g->ntensors; t++) {
        int b = g->tensors[t].alias_of;
        if (b >= 0 && !alias_ok(g, t, b)) {
            const VccTensor *x = &g->tensors[t];
            const VccNode *n = x->producer >= 0 && x->producer < g->nnodes ? &g->nodes[x->producer] : NULL;
            vcc_error(ctx, "tensor '%s' is a view of '%s' (view_of=), but %s%s%s%s does not make it one: it would "
                      "compute into that tensor's bytes", x->name, g->tensors[b].name, n ? "node '" : "no node",
                      n ? n->name : "", n ? "' " : "", n ? vcc_op_name(n->op) : "");
            return VCC_ERR_SHAPE;
        }
    }
    for (int k = 0; k < g->nnodes && !st; k++) {
        const VccNode *n = &g->nodes[k];
        for (int i = 0; i < n->nout; i++)
            if (n->out[i] >= 0 && g->tensors[n->out[i]].dtype == VCC_DT_UNDEF) {
                vcc_error(ctx, "node '%s' (%s): output '%s' has no type", n->name, vcc_op_name(n->op),
                          g->tensors[n->out[i]].name);
                return VCC_ERR_SHAPE;
            }
        if (n->op == VCC_OP_BATCHNORM) /* training form: the running statistics updated in place */
            for (int i = 3; i < 5 && i < n->nout && i < n->nin; i++)
                if (n->out[i] >= 0 && n->in[i] >= 0 && g->tensors[n->in[i]].kind == VCC_T_BUFFER &&
                    g->tensors[n->out[i]].alias_of != n->in[i]) {
                    vcc_error(ctx, "node '%s' (%s): output '%s' must be a view of the running statistic '%s' it "
                              "updates in place (view_of=)", n->name, vcc_op_name(n->op), g->tensors[n->out[i]].name,
                              g->tensors[n->in[i]].name);
                    return VCC_ERR_SHAPE;
                }
        bool view = vcc_op_def(n->op)->flags & VCC_OPF_VIEW;
        if (view && (n->nin < 1 || n->nout != 1 || n->out[0] < 0 || g->tensors[n->out[0]].alias_of != n->in[0])) {
            /* the emitters write no code for a view: its output must be its input's bytes */
            vcc_error(ctx, "node '%s' (%s): its output is not a view of its input (view_of=)", n->name,
                      vcc_op_name(n->op));
            return VCC_ERR_SHAPE;
        }
        st = node_rule(ctx, g, k, true);
    }
    return st;
}
