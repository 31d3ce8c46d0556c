/*
 * canonical.c — bring ONNX variants to one internal form.
 *
 * Requires: the forward graph from frontend/onnx.c.
 * Checks: nodes in topological order; what vcc supports (passes/support.c: ops, element types, attributes
 *   per the model's opset, inference-form exports), all problems in one report.
 * Produces:
 *   - BatchNormalization, every opset's form in one internal form with an explicit training_mode:
 *     training_mode=1: inputs (X, scale, B, input_mean, input_var), outputs (Y, saved_mean, saved_invstd,
 *     running_mean, running_var), absent outputs -1. ONNX opset 14+ has (Y, running_mean, running_var);
 *     opsets 7-13 have (Y, mean, var, saved_mean, saved_var), where saved_var holds the inverse standard
 *     deviation as onnxruntime computes it (the spec says only "saved variance"). In a trainer,
 *     input_mean/input_var are BUFFER tensors updated in place each step and the running outputs are
 *     views of them; the running variance uses the unbiased batch variance, as PyTorch does
 *     (running_var_unbiased=1), and a sixth input counts the batches (num_batches_tracked, see
 *     add_batch_counter). Forward-only (ctx->forward_only): the statistics may be graph inputs, the
 *     running outputs are tensors of their own (the kernel copies, then updates) and the running
 *     variance uses the biased batch variance, as the ONNX spec and onnxruntime do.
 *     training_mode=0 (inference form, and every BatchNormalization under ctx->eval): inputs (X, scale,
 *     B, mean, var), output (Y) normalized with mean and var; under ctx->eval a training-form node drops
 *     its other outputs (they must have no readers).
 *   - Reshape before opset 5 (the shape as an attribute) reads the shape as a CONST input, as from opset 5.
 *   - Flatten, Reshape, Identity outputs are views (alias_of) of their data input; Reshape's shape input
 *     is a CONST.
 *   - Attributes that only hinted at in-place execution in early opsets (consumed_inputs) are dropped.
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

/* An initializer: no node produces it and it has a value (or, read from a .vir dump, which holds no
 * values, it is declared a parameter, buffer or constant). */
static bool is_initializer(const VccGraph *g, int t) {
    if (t < 0 || g->tensors[t].producer >= 0) return false;
    VccTensorKind k = g->tensors[t].kind;
    return g->tensors[t].data != NULL || k == VCC_T_PARAM || k == VCC_T_BUFFER || k == VCC_T_CONST;
}

/* Remove attribute name from node n (no-op when absent). */
static void drop_attr(VccNode *n, const char *name) {
    for (int a = 0; a < n->nattrs; a++) {
        if (strcmp(n->attrs[a].name, name) != 0) continue;
        free(n->attrs[a].name);
        free(n->attrs[a].ints);
        free(n->attrs[a].floats);
        free(n->attrs[a].s);
        n->attrs[a] = n->attrs[--n->nattrs];
        return;
    }
}

/* True if a node reads t or t is a graph output. */
static bool is_used(const VccGraph *g, int t) {
    for (int i = 0; i < g->noutputs; i++)
        if (g->outputs[i] == t) return true;
    for (int k = 0; k < g->nnodes; k++)
        for (int i = 0; i < g->nodes[k].nin; i++)
            if (g->nodes[k].in[i] == t) return true;
    return false;
}

/* The inference form: (X, scale, B, mean, var) -> Y. Under ctx->eval a training-form node loses its
 * other outputs, which must be unused. */
static VccStatus bn_inference(VccCtx *ctx, VccGraph *g, int k) {
    VccNode *n = &g->nodes[k];
    for (int i = 1; i < n->nout; i++) {
        int t = n->out[i];
        if (t < 0) continue;
        if (is_used(g, t)) {
            vcc_error(ctx, "node '%s' (BatchNormalization): output '%s' (batch or running statistics) has no "
                      "value when the model is evaluated with its running statistics",
                      n->name, g->tensors[t].name);
            return VCC_ERR_UNSUPPORTED;
        }
        g->tensors[t].producer = -1;
    }
    n->nout = 1;
    vcc_attr_set_int(n, "training_mode", 0);
    return VCC_OK;
}

/* PyTorch's BatchNorm modules count their training batches in a buffer "<module>.num_batches_tracked"
 * (int64, 0-dim) that ONNX does not export. A trainer keeps that counter as a BUFFER, sixth input of the
 * BatchNormalization, incremented each step, so its saved state is the module's whole state_dict.
 * The module is known from the running mean's name "<module>.running_mean"; the starting count comes
 * from the model's metadata_props "vcc.num_batches_tracked.<module>" (python/vcc_torch.py writes it), 0
 * when absent. No counter when the names do not follow PyTorch's or the name is taken. */
static void add_batch_counter(VccGraph *g, int k) {
    const char *rm = g->tensors[g->nodes[k].in[3]].name, *suffix = ".running_mean";
    size_t len = strlen(rm), sl = strlen(suffix);
    if (len <= sl || strcmp(rm + len - sl, suffix) != 0) return;
    char *name = vcc_strfmt("%.*s.num_batches_tracked", (int)(len - sl), rm);
    char *key = vcc_strfmt("vcc.num_batches_tracked.%.*s", (int)(len - sl), rm);
    if (vcc_tensor_find(g, name) < 0) {
        const char *v = vcc_graph_meta(g, key);
        char *end = NULL;
        long long start = v ? strtoll(v, &end, 10) : 0;
        if (v && (end == v || *end || start < 0)) start = 0;
        VccShape scalar = {0, {0}};
        int t = vcc_tensor_add(g, name, VCC_I64, &scalar, VCC_T_BUFFER);
        g->tensors[t].data = vcc_malloc(sizeof(int64_t));
        g->tensors[t].data_bytes = sizeof(int64_t);
        *(int64_t *)g->tensors[t].data = start;
        VccNode *n = &g->nodes[k];
        n->in = vcc_realloc(n->in, 6 * sizeof(int));
        n->in[5] = t;
        n->nin = 6;
    }
    free(key);
    free(name);
}

static VccStatus canonical_bn(VccCtx *ctx, VccGraph *g, int k) {
    VccNode *n = &g->nodes[k];
    if (n->nin != 5 || n->nout < 1 || n->out[0] < 0) {
        vcc_error(ctx, "node '%s' (BatchNormalization): expected 5 inputs and an output Y", n->name);
        return VCC_ERR_SHAPE;
    }
    for (int i = 1; i < 5; i++)
        if (n->in[i] < 0) {
            vcc_error(ctx, "node '%s' (BatchNormalization): input %d is missing", n->name, i);
            return VCC_ERR_SHAPE;
        }
    const char *what, *why;
    int form = vcc_batchnorm_form(g, n, &what, &why); /* >= 0: passes/support.c refused the others */
    VCC_ASSERT(form >= 0);
    drop_attr(n, "is_test"); /* the form is explicit from here on (training_mode) */
    drop_attr(n, "spatial");
    if (form == 0 || ctx->eval) return bn_inference(ctx, g, k);
    for (int i = 1; i < 5 && !ctx->forward_only; i++)
        if (!is_initializer(g, n->in[i])) {
            vcc_error(ctx, "node '%s' (BatchNormalization): input %d must be an initializer", n->name, i);
            return VCC_ERR_UNSUPPORTED;
        }
    int out[5] = {n->out[0], -1, -1, n->nout > 1 ? n->out[1] : -1, n->nout > 2 ? n->out[2] : -1};
    if (g->opset < 14) { /* (Y, mean, var, saved_mean, saved_var) */
        out[1] = n->nout > 3 ? n->out[3] : -1;
        out[2] = n->nout > 4 ? n->out[4] : -1;
    }
    for (int i = 0; i < 2; i++) {
        int t = out[3 + i];
        if (ctx->forward_only) continue;
        g->tensors[n->in[3 + i]].kind = VCC_T_BUFFER;
        if (t < 0) continue;
        VccTensor *o = &g->tensors[t];
        o->alias_of = n->in[3 + i];
        o->dtype = VCC_F32;
        o->shape = g->tensors[n->in[3 + i]].shape;
        o->kind = VCC_T_BUFFER;
    }
    if (out[1] < 0) out[1] = vcc_tensor_add_unique(g, VCC_DT_UNDEF, NULL, VCC_T_ACT, "%s.saved_mean", n->name);
    if (out[2] < 0)
        out[2] = vcc_tensor_add_unique(g, VCC_DT_UNDEF, NULL, VCC_T_ACT, "%s.saved_invstd", g->nodes[k].name);
    n = &g->nodes[k];
    n->out = vcc_realloc(n->out, 5 * sizeof(int));
    n->nout = 5;
    memcpy(n->out, out, sizeof out);
    for (int i = 1; i < 3; i++) g->tensors[out[i]].producer = k;
    vcc_attr_set_int(n, "training_mode", 1);
    if (!ctx->forward_only) {
        vcc_attr_set_int(n, "running_var_unbiased", 1);
        add_batch_counter(g, k);
    }
    return VCC_OK;
}

/* Reshape of opsets 1-4 takes the shape as an attribute: make it the CONST input opset 5 reads. */
static void reshape_shape_input(VccGraph *g, int k) {
    VccNode *n = &g->nodes[k];
    const VccAttr *a = vcc_attr_get(n, "shape");
    if (!a || a->type != VCC_A_INTS || (n->nin > 1 && n->in[1] >= 0)) return;
    VccShape s = {1, {a->n}};
    int t = vcc_tensor_add_unique(g, VCC_I64, &s, VCC_T_CONST, "%s.shape", n->name);
    g->tensors[t].data = vcc_malloc(sizeof(int64_t) * (size_t)(a->n ? a->n : 1));
    g->tensors[t].data_bytes = sizeof(int64_t) * (size_t)a->n;
    if (a->n) memcpy(g->tensors[t].data, a->ints, sizeof(int64_t) * (size_t)a->n);
    n = &g->nodes[k];
    if (n->nin < 2) {
        n->in = vcc_realloc(n->in, 2 * sizeof(int));
        n->nin = 2;
    }
    n->in[1] = t;
    drop_attr(n, "shape");
}

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
    for (int k = 0; k < g->nnodes; k++) {
        VccNode *n = &g->nodes[k];
        drop_attr(n, "consumed_inputs");
        switch (n->op) {
        case VCC_OP_BATCHNORM:
            if (canonical_bn(ctx, g, k) != VCC_OK) st = VCC_ERR_UNSUPPORTED;
            break;
        case VCC_OP_RESHAPE:
            reshape_shape_input(g, k);
            n = &g->nodes[k];
            if (n->nin == 2 && n->in[1] >= 0) {
                if (!is_initializer(g, n->in[1]) || g->tensors[n->in[1]].dtype != VCC_I64) {
                    vcc_error(ctx, "node '%s' (Reshape): the shape input must be a constant int64 tensor", n->name);
                    st = VCC_ERR_UNSUPPORTED;
                    break;
                }
                g->tensors[n->in[1]].kind = VCC_T_CONST;
            }
            /* fall through */
        case VCC_OP_FLATTEN:
        case VCC_OP_IDENTITY:
            if (n->nin < 1 || n->in[0] < 0 || n->nout != 1 || n->out[0] < 0) {
                vcc_error(ctx, "node '%s' (%s): expected one data input and one output", n->name, vcc_op_name(n->op));
                st = VCC_ERR_SHAPE;
                break;
            }
            g->tensors[n->out[0]].alias_of = n->in[0];
            break;
        default:
            break;
        }
    }
    return st;
}
