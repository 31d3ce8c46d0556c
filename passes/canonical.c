/*
 * canonical.c — bring ONNX variants to one internal form.
 *
 * Requires: the forward graph from frontend/onnx.c.
 * Checks: nodes in topological order; what vcc supports (passes/support.c: ops, element types, attributes
 *   per the model's opset, inference-form exports), all problems in one report.
 * Folds: nodes whose inputs are all constants with values (Constant nodes, arithmetic on them) become
 *   those constants (ir/ops/fold.c), so canonical forms can read them. A node that reads a value folding
 *   only during shapes (computed from a Shape) is marked canon_later: passes/shape runs its canonical
 *   form when that value is a constant, just before the node's shape rule.
 * Produces: each op in its family's internal form (VccOpDef.canon, ir/ops/<family>.c): e.g.
 *   BatchNormalization of every opset with an explicit training_mode, its running statistics BUFFERs
 *   updated in place (ir/ops/norm.c); the outputs of views (Flatten, Reshape, Identity, Squeeze, Unsqueeze)
 *   alias_of their data input, Reshape's shape a CONST input, the other layout ops' constant inputs
 *   attributes (ir/ops/layout.c). Ops whose canonical form is a lowering into other ops that needs the
 *   input shapes (VCC_OPF_LOWER: Einsum) are left to passes/shape. Attributes that only hinted at in-place
 *   execution in early opsets (consumed_inputs) are dropped from every node.
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

/* ONNX requires nodes in topological order; a node reading a value that a later node produces means a
 * cycle or an unsorted file. */
static VccStatus check_order(VccCtx *ctx, const VccGraph *g) {
    for (int k = 0; k < g->nnodes; k++) {
        const VccNode *n = &g->nodes[k];
        for (int i = 0; i < n->nin; i++)
            if (n->in[i] >= 0 && g->tensors[n->in[i]].producer >= k) {
                vcc_error(ctx, "node '%s' (%s) reads '%s', which node '%s' produces later: the graph has a cycle or "
                          "its nodes are not topologically sorted as ONNX requires",
                          n->name, n->onnx_op ? n->onnx_op : vcc_op_name(n->op), g->tensors[n->in[i]].name,
                          g->nodes[g->tensors[n->in[i]].producer].name);
                return VCC_ERR_PARSE;
            }
    }
    return VCC_OK;
}

VccStatus vcc_canonicalize(VccCtx *ctx, VccGraph *g) {
    VccStatus st = check_order(ctx, g);
    if (st) {
        vcc_report_problems(ctx); /* what the loader found goes out with the error that stops here */
        return st;
    }
    st = vcc_check_supported(ctx, g);
    if (st) return st;
    /* values known already (Constant nodes, and nodes all of whose inputs are such constants, e.g. a
     * Concat of two Constants that gives a Resize its scales) are computed now, so that the canonical
     * forms below can read them as the constant inputs they need; the rest fold during shapes */
    bool folded_any = false;
    for (int k = 0; k < g->nnodes; k++) {
        const VccNode *n = &g->nodes[k];
        bool known = !vcc_ctrl_op(n); /* control flow and sequences: passes/ctrlflow.c, during shapes */
        for (int i = 0; i < n->nin && known; i++) {
            const VccTensor *t = n->in[i] >= 0 ? &g->tensors[n->in[i]] : NULL;
            known = !t || (t->kind == VCC_T_CONST && t->data != NULL);
        }
        bool folded = false;
        if (known && (st = vcc_fold_node(ctx, g, k, &folded))) return st;
        folded_any |= folded;
    }
    if (folded_any) vcc_fold_sweep(g);
    /* a node reading a value that folds only during shapes (a Slice's ends computed from a Shape: torch's
     * x[:, :x.size(1) // 2]) gets its canonical form then, when that value is a constant */
    bool *folds = vcc_fold_plan(g), *later = vcc_calloc((size_t)(g->ntensors ? g->ntensors : 1), sizeof(bool));
    for (int k = 0; k < g->nnodes; k++)
        for (int o = 0; folds[k] && o < g->nodes[k].nout; o++)
            if (g->nodes[k].out[o] >= 0) later[g->nodes[k].out[o]] = true;
    for (int k = 0; k < g->nnodes; k++) {
        VccNode *n = &g->nodes[k];
        vcc_attr_drop(n, "consumed_inputs");
        const VccOpDef *def = vcc_op_def(n->op);
        n->canon_later = false;
        for (int i = 0; def->canon && !folds[k] && i < n->nin; i++)
            n->canon_later |= n->in[i] >= 0 && later[n->in[i]];
        /* a lowering into other ops (Einsum) needs its inputs' shapes: passes/shape runs it */
        bool lower = def->flags & VCC_OPF_LOWER;
        VccStatus s = def->canon && !n->canon_later && !lower ? def->canon(ctx, g, k) : VCC_OK;
        if (s) st = s;
    }
    free(folds);
    free(later);
    return st;
}
