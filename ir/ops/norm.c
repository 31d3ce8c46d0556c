/*
 * norm.c — the norm family: BatchNormalization (training and inference forms), the row normalizations
 * InstanceNormalization, GroupNormalization and LayerNormalization, and their gradients; BatchNormApply and
 * RowNormApply, a training-mode node's Y recomputed from the statistics it saved (passes/remat.c).
 *
 * Kernels: runtime/{elem,proto,cpu,cuda}/norm.*.
 * BatchNormalization: semantics follow the node's opset (ONNX Operators, "BatchNormalization"): 1/6 (is_test=1: the inference
 * form; is_test=0, the training form, refused: its outputs are not pinned down and onnxruntime has no
 * kernel for it), 7 (spatial; training form = 5 outputs), 9 (no spatial), 14/15 (training_mode; 3
 * outputs). The canonical form (bn_canon):
 *   training_mode=1: inputs (X, scale, B, input_mean, input_var), outputs (Y, saved_mean, saved_invstd,
 *     running_mean, running_var), absent outputs -1. ONNX opset 14+ has (Y, running_mean, running_var);
 *     opsets 7-13 have (Y, mean, var, saved_mean, saved_var), where saved_var holds the inverse standard
 *     deviation as onnxruntime computes it (the spec says only "saved variance"). In a trainer,
 *     input_mean/input_var are BUFFER tensors updated in place each step and the running outputs are
 *     views of them; the running variance uses the unbiased batch variance, as PyTorch does
 *     (running_var_unbiased=1), and a sixth input counts the batches (num_batches_tracked, see
 *     add_batch_counter). Forward-only (ctx->forward_only): the statistics may be graph inputs, the
 *     running outputs are tensors of their own (the kernel copies, then updates) and the running
 *     variance uses the biased batch variance, as the ONNX spec and onnxruntime do.
 *   training_mode=0 (inference form, and every BatchNormalization under ctx->eval): inputs (X, scale,
 *     B, mean, var), output (Y) normalized with mean and var; under ctx->eval a training-form node drops
 *     its other outputs (they must have no readers). In a trainer (an inference-form export compiled
 *     with --allow-inference-export) mean and var are frozen BUFFERs.
 * Gradient: PyTorch autograd's batch_norm backward: training mode with the batch statistics; inference
 * form with the frozen statistics (dX = scale * invstd * dY; mean and var get none).
 *
 * The row normalizations normalize each of R contiguous rows of D elements of X with the row's mean and
 * biased variance (computed in double), then scale and shift per element (runtime/cpu/norm.h,
 * rownorm_*). The canonical form appends the row statistics as outputs 1 and 2 (saved_mean,
 * saved_invstd), which the gradient reads.
 *   InstanceNormalization (opsets 1 (consumed_inputs, dropped), 6, 22; torch.nn.functional.instance_norm):
 *     X (N, C, S...) of rank >= 3, scale and B (C); rows N*C of S; statistics (N, C).
 *   GroupNormalization (opsets 18 and 21; torch.nn.functional.group_norm): X (N, C, S...) of rank >= 2,
 *     num_groups G dividing C; rows N*G of (C/G)*S; statistics (N, G). Opsets 18-20: scale and bias per
 *     group, (G); opset 21: per channel, (C), and stash_type (the precision of the statistics: FLOAT or
 *     DOUBLE accepted, vcc computes them in double). passes/fuse.c makes one of torch's export below
 *     opset 18 (Reshape, InstanceNormalization, Reshape, Mul, Add) with the internal attribute
 *     per_channel=1: scale and bias (C) at any opset.
 *   LayerNormalization (opset 17; torch.nn.functional.layer_norm): rows prod(X.shape[:axis]) of
 *     prod(X.shape[axis:]); its optional outputs Mean and InvStdDev are the statistics, of shape
 *     X.shape[:axis] + (1, ...); Scale and the optional B broadcast unidirectionally to X (their dims
 *     other than 1 one run of consecutive dims of X); stash_type FLOAT, or DOUBLE when Mean and
 *     InvStdDev are absent (vcc has no double tensors).
 * Gradient: PyTorch's layer_norm / group_norm backward (the statistics depend on X), one
 * <Op>Grad(X, dY, scale, mean, invstd) -> (dX, dscale, dB) node with the outputs the inputs need.
 */
#include "ops.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ BatchNormalization */

static const VccAttrSpec bn_attrs[] = {
    {"epsilon", 1, VCC_OPSET_NOW, VCC_A_FLOAT}, {"momentum", 1, VCC_OPSET_NOW, VCC_A_FLOAT},
    {"consumed_inputs", 1, 5, VCC_A_INTS},      {"is_test", 1, 6, VCC_A_INT},
    {"spatial", 1, 8, VCC_A_INT},               {"training_mode", 14, VCC_OPSET_NOW, VCC_A_INT},
    {NULL, 0, 0, 0},
};

int vcc_batchnorm_form(const VccGraph *g, const VccNode *n, const char **what, const char **why) {
    int nout = 0;
    for (int i = 0; i < n->nout; i++) nout += n->out[i] >= 0;
    *what = *why = NULL;
    if (g->opset < 9 && vcc_attr_int(n, "spatial", 1) != 1) {
        *what = "attribute 'spatial=0'";
        *why = "per-activation statistics are not supported";
        return -1;
    }
    if (g->opset < 7) { /* is_test selects the form; the training form's outputs are not pinned down */
        if (vcc_attr_int(n, "is_test", 0) != 0 && nout == 1) return 0;
        *what = g->opset < 6 ? "of opset 1-5 with is_test=0" : "of opset 6 with is_test=0";
        *why = "the training form before opset 7 is not supported; re-export with opset 7 or later";
        return -1;
    }
    if (g->opset < 14) return nout > 1; /* opsets 7-13: the outputs after Y exist only in training */
    int64_t tm = vcc_attr_int(n, "training_mode", 0);
    if (tm != 0 && tm != 1) {
        *what = "attribute 'training_mode'";
        *why = "must be 0 or 1";
        return -1;
    }
    if (tm == 0 && nout > 1) {
        *what = "attribute 'training_mode=0'";
        *why = "running_mean/running_var outputs exist only in training mode";
        return -1;
    }
    return (int)tm;
}

/* Every normalization's epsilon: a finite number >= 0 (default 1e-5). */
static void check_epsilon(VccCtx *ctx, const VccNode *n) {
    float eps = vcc_attr_float(n, "epsilon", 1e-5f);
    if (!(eps >= 0.0f && eps < 1e30f))
        vcc_op_attr_problem(ctx, n, "%s attribute '%s'", "epsilon", "must be a finite number >= 0");
}

static void bn_check_attrs(VccCtx *ctx, const VccGraph *g, const VccNode *n) {
    const char *what, *why;
    if (vcc_batchnorm_form(g, n, &what, &why) < 0) vcc_op_attr_problem(ctx, n, "%s %s", what, why);
    check_epsilon(ctx, n);
    float mom = vcc_attr_float(n, "momentum", 0.9f);
    if (!(mom >= 0.0f && mom <= 1.0f)) vcc_op_attr_problem(ctx, n, "%s attribute '%s'", "momentum", "must be in [0, 1]");
}

/* The inference form: (X, scale, B, mean, var) -> Y. Under ctx->eval a training-form node loses its
 * other outputs, which must be unused. */
static VccStatus bn_inference(VccCtx *ctx, VccGraph *g, int k) {
    VccNode *n = &g->nodes[k];
    for (int i = 1; i < n->nout; i++) {
        int t = n->out[i];
        if (t < 0) continue;
        if (vcc_tensor_is_used(g, t)) {
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

static VccStatus bn_canon_form(VccCtx *ctx, VccGraph *g, int k) {
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
    int form = vcc_batchnorm_form(g, n, &what, &why); /* >= 0: bn_check_attrs refused the others */
    VCC_ASSERT(form >= 0);
    vcc_attr_drop(n, "is_test"); /* the form is explicit from here on (training_mode) */
    vcc_attr_drop(n, "spatial");
    if (form == 0 && !ctx->eval && !ctx->forward_only) /* a trainer: the given statistics stay frozen */
        for (int i = 3; i < 5; i++)
            if (vcc_is_initializer(g, n->in[i])) g->tensors[n->in[i]].kind = VCC_T_BUFFER;
    if (form == 0 || ctx->eval) return bn_inference(ctx, g, k);
    for (int i = 1; i < 5 && !ctx->forward_only; i++)
        if (!vcc_is_initializer(g, n->in[i])) {
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

static VccStatus bn_canon(VccCtx *ctx, VccGraph *g, int k) {
    return bn_canon_form(ctx, g, k) == VCC_OK ? VCC_OK : VCC_ERR_UNSUPPORTED;
}

/* (X (N, C, ...), scale, B, mean, var (C) [, counter int64 []]) -> (Y (N, C, ...), (C) x the others) */
static VccStatus bn_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    VccNode *n = &g->nodes[k];
    char s1[128];
    const VccTensor *x = vcc_need_input(ctx, g, n, 0, VCC_F32);
    if (!x) return VCC_ERR_SHAPE;
    if (x->shape.rank < 2) {
        vcc_error(ctx, "node '%s' (BatchNormalization): input rank %d < 2", n->name, x->shape.rank);
        return VCC_ERR_SHAPE;
    }
    for (int i = 1; i < 5; i++) {
        const VccTensor *p = vcc_need_input(ctx, g, n, i, VCC_F32);
        if (!p) return VCC_ERR_SHAPE;
        if (p->shape.rank != 1 || p->shape.dims[0] != x->shape.dims[1]) {
            vcc_shape_str(s1, sizeof s1, &p->shape);
            vcc_error(ctx, "node '%s' (BatchNormalization): input %d '%s' has shape %s, expected (%lld)", n->name, i,
                      p->name, s1, (long long)x->shape.dims[1]);
            return VCC_ERR_SHAPE;
        }
    }
    if (n->nin > 5 && n->in[5] >= 0) { /* the batch counter: an int64 scalar */
        const VccTensor *cnt = vcc_need_input(ctx, g, n, 5, VCC_I64);
        if (!cnt || cnt->shape.rank != 0) {
            if (cnt) vcc_error(ctx, "node '%s' (BatchNormalization): the batch counter must be a scalar", n->name);
            return VCC_ERR_SHAPE;
        }
    }
    if (!vcc_put_output(ctx, g, n, check, n->out[0], VCC_F32, &x->shape)) return VCC_ERR_SHAPE;
    VccShape c = {1, {x->shape.dims[1]}};
    for (int i = 1; i < n->nout; i++)
        if (!vcc_put_output(ctx, g, n, check, n->out[i], VCC_F32, &c)) return VCC_ERR_SHAPE;
    return VCC_OK;
}

/* The norm gradient rules differentiate through Y (output 0) alone: when the loss depends on another
 * output of node k (statistics: what), an error naming the node. */
static VccStatus through_y_only(VccDiff *d, int k, const char *what) {
    const VccNode *n = &d->g->nodes[k];
    for (int i = 1; i < n->nout; i++)
        if (vcc_diff_dy(d, k, i) >= 0) {
            vcc_error(d->ctx, "node '%s' (%s): the loss depends on its %s output '%s'; vcc differentiates only "
                      "through Y", n->name, vcc_node_op(n), what, d->g->tensors[n->out[i]].name);
            return VCC_ERR_UNSUPPORTED;
        }
    return VCC_OK;
}

/* BatchNormalization -> BatchNormalizationGrad(X, dY, scale, mean, invstd | var) -> (dX, dscale, dB).
 * Training form: the batch statistics the forward saved (saved_mean, saved_invstd). Inference form
 * (training_mode=0): the given mean and var, frozen (PyTorch's batch_norm(training=False) backward); it
 * has only the outputs whose inputs need a gradient. */
static VccStatus bn_grad(VccDiff *d, int k) {
    if (through_y_only(d, k, "statistics")) return VCC_ERR_UNSUPPORTED;
    VccNode n = d->g->nodes[k]; /* copy: the node array grows below */
    bool frozen = vcc_attr_int(&n, "training_mode", 1) == 0;
    int x = n.in[0], dy = vcc_diff_dy(d, k, 0);
    int dx = !frozen || d->req[x] ? vcc_diff_new_grad(d, x) : -1;
    int ds = !frozen || d->req[n.in[1]] ? vcc_diff_new_grad(d, n.in[1]) : -1;
    int dbias = !frozen || d->req[n.in[2]] ? vcc_diff_new_grad(d, n.in[2]) : -1;
    int in[5] = {x, dy, n.in[1], frozen ? n.in[3] : n.out[1], frozen ? n.in[4] : n.out[2]}, out[3] = {dx, ds, dbias};
    vcc_diff_add_node(d, VCC_OP_BATCHNORM_GRAD, k, "grad", in, 5, out, 3);
    if (dx >= 0 && d->req[x]) vcc_diff_accum(d, x, dx);
    if (ds >= 0) vcc_diff_accum(d, n.in[1], ds);
    if (dbias >= 0) vcc_diff_accum(d, n.in[2], dbias);
    return VCC_OK;
}

static VccStatus bn_emit(VccEmit *e, int k) {
    const VccGraph *g = e->g;
    const VccNode *n = &g->nodes[k];
    const int *in = n->in, *out = n->out;
    FILE *f = e->f;
    int64_t N, C, S;
    vcc_emit_ncs(e, in[0], &N, &C, &S);
    if (vcc_attr_int(n, "training_mode", 1) == 0) { /* inference form: the given mean and var */
        fprintf(f, "    batchnorm_forward_infer(rt, %" PRId64 ", %" PRId64 ", %" PRId64
                   ", %s, %s, %s, %s, %s, (float)%.9g, %s);\n",
                N, C, S, vcc_emit_f32(e, in[0]), vcc_emit_f32(e, in[1]), vcc_emit_f32(e, in[2]),
                vcc_emit_f32(e, in[3]), vcc_emit_f32(e, in[4]), (double)vcc_attr_float(n, "epsilon", 1e-5f),
                vcc_emit_f32(e, out[0]));
        return VCC_OK;
    }
    /* running statistics: updated in place where they are buffers (training; the ONNX running outputs
     * are views of them), else copied to the running outputs and updated there (forward-only) */
    int run[2];
    for (int i = 0; i < 2; i++) {
        int src = in[3 + i], dst = n->nout > 3 + i ? out[3 + i] : -1;
        run[i] = dst >= 0 ? dst : (g->tensors[src].kind == VCC_T_BUFFER ? src : -1);
        if (dst >= 0 && g->tensors[dst].offset != g->tensors[src].offset)
            fprintf(f, "    copy_forward(rt, %" PRId64 ", %s, %s);\n", C, vcc_emit_f32(e, src), vcc_emit_f32(e, dst));
    }
    fprintf(f,
            "    batchnorm_forward_train(rt, %" PRId64 ", %" PRId64 ", %" PRId64
            ", %s, %s, %s, %s, %s, (float)%.9g, (float)%.9g, %d, %s, %s, %s);\n",
            N, C, S, vcc_emit_f32(e, in[0]), vcc_emit_f32(e, in[1]), vcc_emit_f32(e, in[2]), vcc_emit_f32(e, run[0]),
            vcc_emit_f32(e, run[1]), (double)vcc_attr_float(n, "momentum", 0.9f),
            (double)vcc_attr_float(n, "epsilon", 1e-5f), (int)vcc_attr_int(n, "running_var_unbiased", 0),
            vcc_emit_f32(e, out[0]), vcc_emit_f32(e, out[1]), vcc_emit_f32(e, out[2]));
    if (n->nin > 5 && in[5] >= 0) /* num_batches_tracked */
        fprintf(f, "    counter_increment(rt, (int64_t *)(A + %" PRId64 "));\n", g->tensors[in[5]].offset);
    return VCC_OK;
}

const VccOpDef vcc_def_BATCHNORM = {0, 0, bn_attrs, bn_check_attrs, bn_canon, bn_shape, bn_grad, bn_emit};

/* ------------------------------------------------------------------ BatchNormApply */

/* (X, scale, B, saved_mean, saved_invstd) -> Y: a training-mode BatchNormalization's output recomputed from
 * its input and the batch statistics it saved (passes/remat.c), bit-identical to the forward's Y. */
static VccStatus bn_apply_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    const VccTensor *a = vcc_need_input(ctx, g, n, 0, VCC_F32), *c;
    if (!a || a->shape.rank < 2 || n->nin != 5 || n->nout != 1) return vcc_operands_missing(ctx, n);
    VccShape s = {1, {a->shape.dims[1]}};
    for (int i = 1; i < 5; i++)
        if (!(c = vcc_need_input(ctx, g, n, i, VCC_F32)) || !vcc_same_shape(&c->shape, &s)) return vcc_shape_mismatch(ctx, n);
    if (!vcc_put_output(ctx, g, n, check, n->out[0], VCC_F32, &a->shape)) return vcc_shape_mismatch(ctx, n);
    return VCC_OK;
}

static VccStatus bn_apply_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    int64_t N, C, S;
    vcc_emit_ncs(e, n->in[0], &N, &C, &S);
    fprintf(e->f, "    batchnorm_apply(rt, %" PRId64 ", %" PRId64 ", %" PRId64 ", %s, %s, %s, %s, %s, %s);\n", N, C, S,
            vcc_emit_f32(e, n->in[0]), vcc_emit_f32(e, n->in[1]), vcc_emit_f32(e, n->in[2]), vcc_emit_f32(e, n->in[3]),
            vcc_emit_f32(e, n->in[4]), vcc_emit_f32(e, n->out[0]));
    return VCC_OK;
}

const VccOpDef vcc_def_BATCHNORM_APPLY = {0, 0, NULL, NULL, NULL, bn_apply_shape, NULL, bn_apply_emit};

/* ------------------------------------------------------------------ BatchNormalizationGrad */

/* (X, dY, scale, saved_mean, saved_invstd) -> (dX, dscale, dbias) */
static VccStatus bn_grad_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    const VccTensor *a = vcc_need_input(ctx, g, n, 0, VCC_F32), *b = NULL, *c;
    if (!a || !(b = vcc_need_input(ctx, g, n, 1, VCC_F32)) || a->shape.rank < 2 || n->nout != 3)
        return vcc_operands_missing(ctx, n);
    VccShape s = {1, {a->shape.dims[1]}};
    for (int i = 2; i < 5; i++)
        if (!(c = vcc_need_input(ctx, g, n, i, VCC_F32)) || !vcc_same_shape(&c->shape, &s)) return vcc_shape_mismatch(ctx, n);
    if (!vcc_same_shape(&a->shape, &b->shape) || !vcc_put_output(ctx, g, n, true, n->out[0], VCC_F32, &a->shape) ||
        !vcc_put_output(ctx, g, n, true, n->out[1], VCC_F32, &s) || !vcc_put_output(ctx, g, n, true, n->out[2], VCC_F32, &s))
        return vcc_shape_mismatch(ctx, n);
    return VCC_OK;
}

static VccStatus bn_grad_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    int64_t N, C, S;
    vcc_emit_ncs(e, n->in[0], &N, &C, &S);
    if (vcc_attr_int(n, "training_mode", 1) == 0) { /* inference form: frozen mean and var */
        fprintf(e->f, "    batchnorm_backward_infer(rt, %" PRId64 ", %" PRId64 ", %" PRId64 ", %s, %s, %s, %s, %s, ", N,
                C, S, vcc_emit_f32(e, n->in[0]), vcc_emit_f32(e, n->in[1]), vcc_emit_f32(e, n->in[2]),
                vcc_emit_f32(e, n->in[3]), vcc_emit_f32(e, n->in[4]));
        fprintf(e->f, "(float)%.9g, %s, %s, %s);\n", (double)vcc_attr_float(n, "epsilon", 1e-5f),
                vcc_emit_f32(e, n->out[0]), vcc_emit_f32(e, n->out[1]), vcc_emit_f32(e, n->out[2]));
        return VCC_OK;
    }
    fprintf(e->f, "    batchnorm_backward(rt, %" PRId64 ", %" PRId64 ", %" PRId64 ", %s, %s, %s, %s, %s, ", N, C, S,
            vcc_emit_f32(e, n->in[0]), vcc_emit_f32(e, n->in[1]), vcc_emit_f32(e, n->in[2]), vcc_emit_f32(e, n->in[3]),
            vcc_emit_f32(e, n->in[4]));
    fprintf(e->f, "%s, %s, %s);\n", vcc_emit_f32(e, n->out[0]), vcc_emit_f32(e, n->out[1]), vcc_emit_f32(e, n->out[2]));
    return VCC_OK;
}

const VccOpDef vcc_def_BATCHNORM_GRAD = {0, 0, NULL, NULL, NULL, bn_grad_shape, NULL, bn_grad_emit};

/* ------------------------------------------------------------------ row normalizations: shared */

/* How a row normalization lays X out (runtime/cpu/norm.h, rownorm_*): R rows of D contiguous elements;
 * element i reads scale[(i / ss) % sm] and bias[(i / bs) % bm] (vcc_norm_pidx); stats is the shape of
 * the saved mean and invstd (R elements). */
typedef struct {
    int64_t R, D, sm, ss, bm, bs;
    VccShape stats;
} NormRows;

/* One row normalization: its gradient op, whether B may be absent, and its layout: rows checks the
 * attributes against x's shape and the scale's and bias's shapes (bias NULL: absent or not wanted) and
 * fills *r; an error names the node. */
typedef struct {
    VccOp grad;
    bool bias_optional;
    VccStatus (*rows)(VccCtx *ctx, const VccGraph *g, const VccNode *n, const VccShape *x, const VccShape *scale,
                      const VccShape *bias, NormRows *r);
} RowNorm;

/* "node 'x' (Op): <what> has shape (..), expected (..)"; VCC_ERR_SHAPE. */
static VccStatus param_shape_error(VccCtx *ctx, const VccNode *n, const char *what, const VccShape *have,
                                   const VccShape *want) {
    char s1[128], s2[128];
    vcc_shape_str(s1, sizeof s1, have);
    vcc_shape_str(s2, sizeof s2, want);
    vcc_error(ctx, "node '%s' (%s): %s has shape %s, expected %s", n->name, vcc_node_op(n), what, s1, s2);
    return VCC_ERR_SHAPE;
}

/* X (N, C, S...): the product of the dims after C. */
static int64_t spatial(const VccShape *x) {
    int64_t S = 1;
    for (int i = 2; i < x->rank; i++) S *= x->dims[i];
    return S;
}

/* The row statistics as outputs 1 and 2 ("<node>.saved_mean", "<node>.saved_invstd" where the model has
 * none), so that the gradient can read them. */
static VccStatus rows_canon(VccCtx *ctx, VccGraph *g, int k) {
    VccNode *n = &g->nodes[k];
    if (n->nout < 1 || n->out[0] < 0) {
        vcc_error(ctx, "node '%s' (%s): output Y is missing", n->name, vcc_node_op(n));
        return VCC_ERR_SHAPE;
    }
    int out[3] = {n->out[0], n->nout > 1 ? n->out[1] : -1, n->nout > 2 ? n->out[2] : -1};
    if (out[1] < 0) out[1] = vcc_tensor_add_unique(g, VCC_DT_UNDEF, NULL, VCC_T_ACT, "%s.saved_mean", g->nodes[k].name);
    if (out[2] < 0) out[2] = vcc_tensor_add_unique(g, VCC_DT_UNDEF, NULL, VCC_T_ACT, "%s.saved_invstd", g->nodes[k].name);
    n = &g->nodes[k];
    n->out = vcc_realloc(n->out, 3 * sizeof(int));
    n->nout = 3;
    memcpy(n->out, out, sizeof out);
    for (int i = 1; i < 3; i++) g->tensors[out[i]].producer = k;
    return VCC_OK;
}

/* (X, scale[, B]) -> (Y like X, mean, invstd of the op's statistics shape) */
static VccStatus rows_shape(VccCtx *ctx, VccGraph *g, int k, bool check, const RowNorm *op) {
    const VccNode *n = &g->nodes[k];
    const VccTensor *x = vcc_need_input(ctx, g, n, 0, VCC_F32), *scale = NULL, *bias = NULL;
    if (!x || !(scale = vcc_need_input(ctx, g, n, 1, VCC_F32))) return VCC_ERR_SHAPE;
    if ((!op->bias_optional || (n->nin > 2 && n->in[2] >= 0)) && !(bias = vcc_need_input(ctx, g, n, 2, VCC_F32)))
        return VCC_ERR_SHAPE;
    NormRows r;
    VccStatus st = op->rows(ctx, g, n, &x->shape, &scale->shape, bias ? &bias->shape : NULL, &r);
    if (st) return st;
    if (!vcc_put_output(ctx, g, n, check, n->out[0], VCC_F32, &x->shape)) return VCC_ERR_SHAPE;
    for (int i = 1; i < n->nout; i++)
        if (!vcc_put_output(ctx, g, n, check, n->out[i], VCC_F32, &r.stats)) return VCC_ERR_SHAPE;
    return VCC_OK;
}

/* Op -> OpGrad(X, dY, scale, mean, invstd) -> (dX, dscale, dB), each output only where its input needs a
 * gradient. The statistics outputs are not differentiated (through_y_only). */
static VccStatus rows_grad(VccDiff *d, int k, const RowNorm *op) {
    if (through_y_only(d, k, "Mean or InvStdDev")) return VCC_ERR_UNSUPPORTED;
    VccNode n = d->g->nodes[k]; /* copy: the node array grows below */
    int b = n.nin > 2 ? n.in[2] : -1, grads[3] = {-1, -1, -1}, params[3] = {n.in[0], n.in[1], b};
    for (int i = 0; i < 3; i++)
        if (params[i] >= 0 && d->req[params[i]]) grads[i] = vcc_diff_new_grad(d, params[i]);
    int in[5] = {n.in[0], vcc_diff_dy(d, k, 0), n.in[1], n.out[1], n.out[2]};
    vcc_diff_add_node(d, op->grad, k, "grad", in, 5, grads, 3);
    for (int i = 0; i < 3; i++)
        if (grads[i] >= 0) vcc_diff_accum(d, params[i], grads[i]);
    return VCC_OK;
}

/* The layout of node k (forward or gradient) from its operands' shapes: X is input 0; the scale is
 * input 1 of the forward, 2 of the gradient; the bias is input 2 of the forward, the shape of dB
 * (output 2) of the gradient. */
static NormRows rows_of(const VccEmit *e, int k, const RowNorm *op, bool grad) {
    const VccGraph *g = e->g;
    const VccNode *n = &g->nodes[k];
    int b = grad ? n->out[2] : n->nin > 2 ? n->in[2] : -1;
    NormRows r;
    VccStatus st = op->rows(e->ctx, g, n, &g->tensors[n->in[0]].shape, &g->tensors[n->in[grad ? 2 : 1]].shape,
                            b >= 0 ? &g->tensors[b].shape : NULL, &r);
    VCC_ASSERT(st == VCC_OK); /* the shape rules checked it */
    return r;
}

static VccStatus rows_emit(VccEmit *e, int k, const RowNorm *op) {
    const VccNode *n = &e->g->nodes[k];
    NormRows r = rows_of(e, k, op, false);
    int b = n->nin > 2 ? n->in[2] : -1;
    fprintf(e->f, "    rownorm_forward(rt, %" PRId64 ", %" PRId64 ", %s, %s, %" PRId64 ", %" PRId64 ", %s, %" PRId64
                  ", %" PRId64 ", ", r.R, r.D, vcc_emit_f32(e, n->in[0]), vcc_emit_f32(e, n->in[1]), r.sm, r.ss,
            vcc_emit_f32(e, b), r.bm, r.bs);
    fprintf(e->f, "(float)%.9g, %s, %s, %s);\n", (double)vcc_attr_float(n, "epsilon", 1e-5f), vcc_emit_f32(e, n->out[0]),
            vcc_emit_f32(e, n->out[1]), vcc_emit_f32(e, n->out[2]));
    return VCC_OK;
}

/* (X, dY, scale, mean, invstd) -> (dX like X, dscale like scale, dB), any output absent */
static VccStatus rows_grad_shape(VccCtx *ctx, VccGraph *g, int k, const RowNorm *op) {
    const VccNode *n = &g->nodes[k];
    const VccTensor *t[5];
    for (int i = 0; i < 5; i++)
        if (!(t[i] = vcc_need_input(ctx, g, n, i, VCC_F32))) return vcc_operands_missing(ctx, n);
    if (n->nout != 3) return vcc_operands_missing(ctx, n);
    const VccTensor *db = n->out[2] >= 0 ? &g->tensors[n->out[2]] : NULL;
    NormRows r;
    if (op->rows(ctx, g, n, &t[0]->shape, &t[2]->shape, db ? &db->shape : NULL, &r)) return VCC_ERR_SHAPE;
    if (!vcc_same_shape(&t[0]->shape, &t[1]->shape) || vcc_shape_numel(&t[3]->shape) != r.R ||
        vcc_shape_numel(&t[4]->shape) != r.R || !vcc_put_output(ctx, g, n, true, n->out[0], VCC_F32, &t[0]->shape) ||
        !vcc_put_output(ctx, g, n, true, n->out[1], VCC_F32, &t[2]->shape) || (db && db->dtype != VCC_F32))
        return vcc_shape_mismatch(ctx, n);
    return VCC_OK;
}

static VccStatus rows_grad_emit(VccEmit *e, int k, const RowNorm *op) {
    const VccNode *n = &e->g->nodes[k];
    NormRows r = rows_of(e, k, op, true);
    fprintf(e->f, "    rownorm_backward(rt, %" PRId64 ", %" PRId64 ", %s, %s, %s, %" PRId64 ", %" PRId64 ", %s, %s, ", r.R,
            r.D, vcc_emit_f32(e, n->in[0]), vcc_emit_f32(e, n->in[1]), vcc_emit_f32(e, n->in[2]), r.sm, r.ss,
            vcc_emit_f32(e, n->in[3]), vcc_emit_f32(e, n->in[4]));
    fprintf(e->f, "%s, %s, %" PRId64 ", %" PRId64 ", %s);\n", vcc_emit_f32(e, n->out[0]), vcc_emit_f32(e, n->out[1]),
            r.bm, r.bs, vcc_emit_f32(e, n->out[2]));
    return VCC_OK;
}

/* The definitions of a row normalization Op and its gradient OpGrad, from its attributes, check_attrs and
 * RowNorm. */
#define ROW_NORM_DEFS(OP, prefix, attrs, check)                                                                   \
    static VccStatus prefix##_shape(VccCtx *ctx, VccGraph *g, int k, bool check_) {                               \
        return rows_shape(ctx, g, k, check_, &prefix##_norm);                                                     \
    }                                                                                                             \
    static VccStatus prefix##_grad(VccDiff *d, int k) { return rows_grad(d, k, &prefix##_norm); }                \
    static VccStatus prefix##_emit(VccEmit *e, int k) { return rows_emit(e, k, &prefix##_norm); }                \
    static VccStatus prefix##_grad_shape(VccCtx *ctx, VccGraph *g, int k, bool check_) {                          \
        (void)check_;                                                                                             \
        return rows_grad_shape(ctx, g, k, &prefix##_norm);                                                        \
    }                                                                                                             \
    static VccStatus prefix##_grad_emit(VccEmit *e, int k) { return rows_grad_emit(e, k, &prefix##_norm); }      \
    const VccOpDef vcc_def_##OP = {0, 0, attrs, check, rows_canon, prefix##_shape, prefix##_grad, prefix##_emit}; \
    const VccOpDef vcc_def_##OP##_GRAD = {0, 0, NULL, NULL, NULL, prefix##_grad_shape, NULL, prefix##_grad_emit};

/* ------------------------------------------------------------------ InstanceNormalization */

static const VccAttrSpec in_attrs[] = {
    {"epsilon", 1, VCC_OPSET_NOW, VCC_A_FLOAT}, {"consumed_inputs", 1, 5, VCC_A_INTS}, {NULL, 0, 0, 0},
};

static void in_check_attrs(VccCtx *ctx, const VccGraph *g, const VccNode *n) {
    (void)g;
    check_epsilon(ctx, n);
}

/* X (N, C, S...), rank >= 3; scale, B (C): rows N*C of S, statistics (N, C) */
static VccStatus in_rows(VccCtx *ctx, const VccGraph *g, const VccNode *n, const VccShape *x, const VccShape *scale,
                         const VccShape *bias, NormRows *r) {
    (void)g;
    if (x->rank < 3) {
        vcc_error(ctx, "node '%s' (%s): input rank %d < 3 (ONNX: N x C x D1 x ... x Dn)", n->name, vcc_node_op(n),
                  x->rank);
        return VCC_ERR_SHAPE;
    }
    int64_t C = x->dims[1], S = spatial(x);
    VccShape c = {1, {C}};
    if (!vcc_same_shape(scale, &c)) return param_shape_error(ctx, n, "scale", scale, &c);
    if (bias && !vcc_same_shape(bias, &c)) return param_shape_error(ctx, n, "B", bias, &c);
    *r = (NormRows){x->dims[0] * C, S, C, S, C, S, {2, {x->dims[0], C}}};
    return VCC_OK;
}

static const RowNorm in_norm = {VCC_OP_INSTANCENORM_GRAD, false, in_rows};
ROW_NORM_DEFS(INSTANCENORM, in, in_attrs, in_check_attrs)

/* ------------------------------------------------------------------ GroupNormalization */

static const VccAttrSpec gn_attrs[] = {
    {"epsilon", 18, VCC_OPSET_NOW, VCC_A_FLOAT},
    {"num_groups", 18, VCC_OPSET_NOW, VCC_A_INT},
    {"stash_type", 21, VCC_OPSET_NOW, VCC_A_INT},
    {NULL, 0, 0, 0},
};

/* stash_type (the precision of the statistics): FLOAT (1, the default) or DOUBLE (11); vcc computes the
 * statistics in double and normalizes in float, at least as precise as either. */
static void check_stash_type(VccCtx *ctx, const VccNode *n) {
    int64_t st = vcc_attr_int(n, "stash_type", 1);
    if (st != 1 && st != 11)
        vcc_op_attr_problem(ctx, n, "%s attribute '%s'", "stash_type",
                            "only FLOAT (1) or DOUBLE (11): vcc computes the statistics in double");
}

static void gn_check_attrs(VccCtx *ctx, const VccGraph *g, const VccNode *n) {
    if (g->opset < 18)
        vcc_op_attr_problem(ctx, n, "%s %s", "before opset 18", "the op exists from opset 18");
    check_epsilon(ctx, n);
    check_stash_type(ctx, n);
    if (!vcc_attr_get(n, "num_groups"))
        vcc_op_attr_problem(ctx, n, "%s attribute '%s'", "num_groups", "required, missing");
    else if (vcc_attr_int(n, "num_groups", 0) < 1)
        vcc_op_attr_problem(ctx, n, "%s attribute '%s'", "num_groups", "must be at least 1");
}

/* X (N, C, S...), rank >= 2; G = num_groups divides C; scale, B (G) before opset 21, (C) from it or with
 * the internal attribute per_channel=1: rows N*G of (C/G)*S, statistics (N, G) */
static VccStatus gn_rows(VccCtx *ctx, const VccGraph *g, const VccNode *n, const VccShape *x, const VccShape *scale,
                         const VccShape *bias, NormRows *r) {
    if (x->rank < 2) {
        vcc_error(ctx, "node '%s' (%s): input rank %d < 2", n->name, vcc_node_op(n), x->rank);
        return VCC_ERR_SHAPE;
    }
    int64_t C = x->dims[1], G = vcc_attr_int(n, "num_groups", 0), S = spatial(x);
    if (G < 1 || C % G != 0) {
        vcc_error(ctx, "node '%s' (%s): num_groups %lld does not divide the %lld channels", n->name, vcc_node_op(n),
                  (long long)G, (long long)C);
        return VCC_ERR_SHAPE;
    }
    /* scale and bias per group (18-20) or per channel (21, and the per_channel=1 node passes/fuse.c makes
     * of torch's GroupNorm export) */
    int64_t D = C / G * S, P = g->opset < 21 && !vcc_attr_int(n, "per_channel", 0) ? G : C;
    VccShape p = {1, {P}};
    if (!vcc_same_shape(scale, &p)) return param_shape_error(ctx, n, "scale", scale, &p);
    if (bias && !vcc_same_shape(bias, &p)) return param_shape_error(ctx, n, "bias", bias, &p);
    int64_t ps = P == C ? S : D;
    *r = (NormRows){x->dims[0] * G, D, P, ps, P, ps, {2, {x->dims[0], G}}};
    return VCC_OK;
}

static const RowNorm gn_norm = {VCC_OP_GROUPNORM_GRAD, false, gn_rows};
ROW_NORM_DEFS(GROUPNORM, gn, gn_attrs, gn_check_attrs)

/* ------------------------------------------------------------------ LayerNormalization */

static const VccAttrSpec ln_attrs[] = {
    {"axis", 17, VCC_OPSET_NOW, VCC_A_INT},
    {"epsilon", 17, VCC_OPSET_NOW, VCC_A_FLOAT},
    {"stash_type", 17, VCC_OPSET_NOW, VCC_A_INT},
    {NULL, 0, 0, 0},
};

static void ln_check_attrs(VccCtx *ctx, const VccGraph *g, const VccNode *n) {
    if (g->opset < 17)
        vcc_op_attr_problem(ctx, n, "%s %s", "before opset 17", "the op exists from opset 17");
    check_epsilon(ctx, n);
    check_stash_type(ctx, n);
    bool stats = (n->nout > 1 && n->out[1] >= 0) || (n->nout > 2 && n->out[2] >= 0);
    if (vcc_attr_int(n, "stash_type", 1) == 11 && stats)
        vcc_op_attr_problem(ctx, n, "%s attribute '%s'", "stash_type",
                            "DOUBLE makes Mean and InvStdDev double tensors, which vcc does not have");
}

/* Where parameter p (Scale or B) lies in x when broadcast unidirectionally to it (ONNX Broadcasting):
 * m = the product of its dims, s = the product of x's dims after them (vcc_norm_pidx). 0: done; 1: p
 * does not broadcast to x; 2: its dims other than 1 are not one run of consecutive dims of x. */
static int bcast_layout(const VccShape *x, const VccShape *p, int64_t *m, int64_t *s) {
    if (p->rank > x->rank) return 1;
    int off = x->rank - p->rank, a = -1, b = -1;
    for (int i = 0; i < p->rank; i++) {
        if (p->dims[i] != 1 && p->dims[i] != x->dims[off + i]) return 1;
        if (p->dims[i] != 1) {
            if (a < 0) a = off + i;
            b = off + i + 1;
        }
    }
    *m = *s = 1;
    for (int d = a < 0 ? x->rank : a; d < b; d++) {
        if (p->dims[d - off] != x->dims[d]) return 2; /* a broadcast dim inside the run */
        *m *= x->dims[d];
    }
    for (int d = a < 0 ? x->rank : b; d < x->rank; d++) *s *= x->dims[d];
    return 0;
}

/* The layout of parameter p of node n, or an error naming it. */
static VccStatus ln_param(VccCtx *ctx, const VccNode *n, const char *what, const VccShape *x, const VccShape *p,
                          int64_t *m, int64_t *s) {
    int r = bcast_layout(x, p, m, s);
    if (!r) return VCC_OK;
    char s1[128], s2[128];
    vcc_shape_str(s1, sizeof s1, p);
    vcc_shape_str(s2, sizeof s2, x);
    if (r == 1)
        vcc_error(ctx, "node '%s' (%s): %s of shape %s does not broadcast to X %s", n->name, vcc_node_op(n), what, s1, s2);
    else
        vcc_error(ctx, "node '%s' (%s): %s of shape %s broadcasts to X %s over more than one run of dims; vcc supports "
                  "a %s whose dims other than 1 are consecutive", n->name, vcc_node_op(n), what, s1, s2, what);
    return r == 1 ? VCC_ERR_SHAPE : VCC_ERR_UNSUPPORTED;
}

/* X of rank r, axis in [-r, r): rows prod(X.shape[:axis]) of prod(X.shape[axis:]), statistics
 * X.shape[:axis] + (1, ...); Scale and B broadcast to X */
static VccStatus ln_rows(VccCtx *ctx, const VccGraph *g, const VccNode *n, const VccShape *x, const VccShape *scale,
                         const VccShape *bias, NormRows *r) {
    (void)g;
    int axis;
    if (!vcc_node_axis(ctx, n, vcc_attr_int(n, "axis", -1), x->rank, &axis)) return VCC_ERR_SHAPE;
    *r = (NormRows){1, 1, 1, 1, 1, 1, *x};
    for (int d = 0; d < x->rank; d++) {
        if (d < axis) r->R *= x->dims[d];
        else r->D *= x->dims[d], r->stats.dims[d] = 1;
    }
    VccStatus st = ln_param(ctx, n, "Scale", x, scale, &r->sm, &r->ss);
    return st || !bias ? st : ln_param(ctx, n, "B", x, bias, &r->bm, &r->bs);
}

static const RowNorm ln_norm = {VCC_OP_LAYERNORM_GRAD, true, ln_rows};
ROW_NORM_DEFS(LAYERNORM, ln, ln_attrs, ln_check_attrs)

/* ------------------------------------------------------------------ RowNormApply */

bool vcc_rownorm_layout(const VccGraph *g, const VccNode *n, int64_t lay[6]) {
    const RowNorm *op = n->op == VCC_OP_LAYERNORM ? &ln_norm : n->op == VCC_OP_GROUPNORM ? &gn_norm
                      : n->op == VCC_OP_INSTANCENORM ? &in_norm : NULL;
    if (!op || n->nin < 2 || n->in[0] < 0 || n->in[1] < 0) return false;
    VccCtx quiet;
    vcc_ctx_init(&quiet, NULL);
    quiet.max_errors = 0;
    int b = n->nin > 2 ? n->in[2] : -1;
    NormRows r;
    if (op->rows(&quiet, g, n, &g->tensors[n->in[0]].shape, &g->tensors[n->in[1]].shape,
                 b >= 0 ? &g->tensors[b].shape : NULL, &r) != VCC_OK)
        return false;
    int64_t v[6] = {r.R, r.D, r.sm, r.ss, r.bm, r.bs};
    memcpy(lay, v, sizeof v);
    return true;
}

static const char *const rownorm_apply_attrs[6] = {"rows", "cols", "scale_m", "scale_s", "bias_m", "bias_s"};

/* (X, scale, B | absent, mean, invstd) -> Y like X; R * D = numel(X), mean and invstd of R elements */
static VccStatus rownorm_apply_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    int64_t lay[6];
    for (int i = 0; i < 6; i++) lay[i] = vcc_attr_int(n, rownorm_apply_attrs[i], 0);
    const VccTensor *x = vcc_need_input(ctx, g, n, 0, VCC_F32), *t;
    if (!x || n->nin != 5 || n->nout != 1 || !vcc_need_input(ctx, g, n, 1, VCC_F32)) return vcc_operands_missing(ctx, n);
    if (vcc_shape_numel(&x->shape) != lay[0] * lay[1]) return vcc_shape_mismatch(ctx, n);
    for (int i = 3; i < 5; i++)
        if (!(t = vcc_need_input(ctx, g, n, i, VCC_F32)) || vcc_shape_numel(&t->shape) != lay[0])
            return vcc_shape_mismatch(ctx, n);
    if (!vcc_put_output(ctx, g, n, check, n->out[0], VCC_F32, &x->shape)) return vcc_shape_mismatch(ctx, n);
    return VCC_OK;
}

static VccStatus rownorm_apply_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    int64_t lay[6];
    for (int i = 0; i < 6; i++) lay[i] = vcc_attr_int(n, rownorm_apply_attrs[i], 0);
    fprintf(e->f, "    rownorm_apply(rt, %" PRId64 ", %" PRId64 ", %s, %s, %" PRId64 ", %" PRId64 ", %s, %" PRId64
                  ", %" PRId64 ", ", lay[0], lay[1], vcc_emit_f32(e, n->in[0]), vcc_emit_f32(e, n->in[1]), lay[2],
            lay[3], vcc_emit_f32(e, n->in[2]), lay[4], lay[5]);
    fprintf(e->f, "%s, %s, %s);\n", vcc_emit_f32(e, n->in[3]), vcc_emit_f32(e, n->in[4]), vcc_emit_f32(e, n->out[0]));
    return VCC_OK;
}

const VccOpDef vcc_def_ROWNORM_APPLY = {0, 0, NULL, NULL, NULL, rownorm_apply_shape, NULL, rownorm_apply_emit};
