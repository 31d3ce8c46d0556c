/*
 * optim.c — the optim family, appended by passes/optimizer:
 *   SGDMomentum   PyTorch torch.optim.SGD semantics (momentum, dampening 0, weight decay, no Nesterov);
 *   AdamW         PyTorch torch.optim.AdamW semantics (amsgrad and maximize off);
 *   GradNormClip  the global gradient 2-norm and clip scale of torch.nn.utils.clip_grad_norm_.
 * The emitted code reads the step's hyperparameters from the step function's `o` (VccOptim,
 * runtime/vcc_state.h); the clip pair is used only when o->clip > 0 (the trainer's --clip-grad-norm). The
 * updates read a clip pair only in a graph compiled with vcc --keep-grads (passes/optimizer.c); without
 * it they have no clip input and run as soon as their gradient is final.
 *
 * Kernels: runtime/{elem,proto,cpu,cuda}/optim.*.
 */
#include "ops.h"

#include <inttypes.h>

/* The clip pair, a float64 (2) tensor, or -1 (absent) at input i of node n: an error when malformed. */
static bool clip_ok(const VccGraph *g, const VccNode *n, int i) {
    if (n->nin <= i || n->in[i] < 0) return true;
    const VccTensor *c = &g->tensors[n->in[i]];
    return c->dtype == VCC_F64 && c->shape.rank == 1 && c->shape.dims[0] == 2;
}

/* (param, grad, state...) float32 of one shape, then the optional clip pair; updated in place: no outputs */
static VccStatus update_shape(VccCtx *ctx, VccGraph *g, int k, int nstate) {
    const VccNode *n = &g->nodes[k];
    const VccTensor *a = vcc_need_input(ctx, g, n, 0, VCC_F32);
    if (!a) return vcc_shape_mismatch(ctx, n);
    for (int i = 1; i < 2 + nstate; i++) {
        const VccTensor *b = vcc_need_input(ctx, g, n, i, VCC_F32);
        if (!b || !vcc_same_shape(&a->shape, &b->shape)) return vcc_shape_mismatch(ctx, n);
    }
    if (!clip_ok(g, n, 2 + nstate)) return vcc_shape_mismatch(ctx, n);
    return VCC_OK;
}

static VccStatus sgd_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    (void)check;
    return update_shape(ctx, g, k, 1);
}

static VccStatus adamw_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    (void)check;
    return update_shape(ctx, g, k, 2);
}

/* The clip scale operand of an update: the second double of the clip pair while clipping, else NULL. */
static void emit_scale(VccEmit *e, const VccNode *n, int i) {
    if (n->nin <= i || n->in[i] < 0) fputs("NULL", e->f);
    else fprintf(e->f, "o->clip > 0 ? (const double *)(A + %" PRId64 ") : NULL", e->g->tensors[n->in[i]].offset + 8);
}

static VccStatus sgd_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    fprintf(e->f, "    sgd_update(rt, %" PRId64 ", %s, %s, %s, ", vcc_emit_numel(e, n->in[0]), vcc_emit_f32(e, n->in[0]),
            vcc_emit_f32(e, n->in[1]), vcc_emit_f32(e, n->in[2]));
    emit_scale(e, n, 3);
    fputs(", (float)o->lr, o->momentum, (float)o->wd);\n", e->f);
    return VCC_OK;
}

static VccStatus adamw_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    fprintf(e->f, "    adamw_update(rt, %" PRId64 ", %s, %s, %s, %s, ", vcc_emit_numel(e, n->in[0]),
            vcc_emit_f32(e, n->in[0]), vcc_emit_f32(e, n->in[1]), vcc_emit_f32(e, n->in[2]), vcc_emit_f32(e, n->in[3]));
    emit_scale(e, n, 4);
    fputs(",\n                 vcc_adamw_coef(o->lr, o->beta1, o->beta2, o->eps, o->wd, o->t));\n", e->f);
    return VCC_OK;
}

/* (grad...) float32, any shapes; output: the clip pair */
static VccStatus grad_norm_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    VccShape pair = {1, {2}};
    for (int i = 0; i < n->nin; i++)
        if (!vcc_need_input(ctx, g, n, i, VCC_F32)) return vcc_shape_mismatch(ctx, n);
    if (n->nout != 1 || n->out[0] < 0) return vcc_operands_missing(ctx, n);
    return vcc_put_output(ctx, g, n, check, n->out[0], VCC_F64, &pair) ? VCC_OK : VCC_ERR_SHAPE;
}

static VccStatus grad_norm_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    int64_t off = e->g->tensors[n->out[0]].offset;
    fputs("    if (o->clip > 0) {\n", e->f);
    for (int i = 0; i < n->nin; i++)
        fprintf(e->f, "        grad_sumsq(rt, %" PRId64 ", %s, (double *)(A + %" PRId64 "), %d);\n",
                vcc_emit_numel(e, n->in[i]), vcc_emit_f32(e, n->in[i]), off, i == 0);
    fprintf(e->f, "        grad_clip_scale(rt, (double *)(A + %" PRId64 "), o->clip);\n    }\n", off);
    return VCC_OK;
}

const VccOpDef vcc_def_SGD = {0, 0, NULL, NULL, NULL, sgd_shape, NULL, sgd_emit};
const VccOpDef vcc_def_ADAMW = {0, 0, NULL, NULL, NULL, adamw_shape, NULL, adamw_emit};
const VccOpDef vcc_def_GRAD_NORM = {0, 0, NULL, NULL, NULL, grad_norm_shape, NULL, grad_norm_emit};
