/*
 * const.c — the const family: ops vcc evaluates only while compiling. Shape, Size, ConstantOfShape and
 * Range: in the models vcc trains they compute shapes and index lists from constants and static shapes
 * (torch exports of x.view(x.size(0), -1), expand, arange). Constant itself never becomes a node: the
 * loader makes its output a CONST tensor (frontend/onnx.c); its row lists it among the ops vcc compiles.
 * The comparisons, logic ops and Where, which fold the same way when their inputs are known, also run on
 * data: the compare family (ir/ops/compare.c).
 *
 * passes/shape evaluates them (ir/ops/fold.c, which also folds any other op whose inputs are all known,
 * whatever its family) and removes them, so they have no kernels, gradients or emission. One that is
 * not folded (an input computed at run time) reaches its shape rule here, which refuses it naming the
 * node, the input and where that input comes from; but a ConstantOfShape too large to fold becomes a
 * run-time fill (fill_forward of the base runtime).
 *
 * Source: ONNX Operators: Shape 1, 13, 15 (start, end), 19, 21; Size 1, 13, 19, 21; ConstantOfShape 9,
 * 20, 21 (value: a one-element tensor attribute, the loader's second input); Range 11.
 */
#include "ops.h"

static const VccAttrSpec no_attrs[] = {{NULL, 0, 0, 0}};

static const VccAttrSpec shape_attrs[] = {
    {"start", 15, VCC_OPSET_NOW, VCC_A_INT}, {"end", 15, VCC_OPSET_NOW, VCC_A_INT}, {NULL, 0, 0, 0},
};

/* The shape rule of an op that only folds: reached only when node k did not fold. */
static VccStatus fold_only_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    (void)check;
    return vcc_fold_refuse(ctx, g, k);
}

#define CONST_OP(e, attrs) const VccOpDef vcc_def_##e = {0, 0, attrs, NULL, NULL, fold_only_shape, NULL, NULL}

/* Constant: the loader reads its value attributes (by opset) into a CONST tensor; no node is made, so
 * this row names the op for vcc --ops and the one report. */
CONST_OP(CONSTANT, no_attrs);
CONST_OP(SHAPE, shape_attrs);
CONST_OP(SIZE, no_attrs);

/* ConstantOfShape whose result is too large to hold while compiling (over VCC_FOLD_MAX_ELEMS elements,
 * e.g. the weights ONNX's light_* networks make with it): a float32 fill at run time, when its shape is
 * a constant and its value a float32 (absent: 0). Anything else is the fold's refusal. In a check (a
 * graph read back from a dump, whose constants hold no values) the output's recorded shape stands. */
static VccStatus constant_of_shape_shape(VccCtx *ctx, VccGraph *g, int k, bool check) {
    const VccNode *n = &g->nodes[k];
    const VccTensor *sh = n->nin > 0 && n->in[0] >= 0 ? &g->tensors[n->in[0]] : NULL;
    const VccTensor *v = n->nin > 1 && n->in[1] >= 0 ? &g->tensors[n->in[1]] : NULL;
    if (!sh || sh->dtype != VCC_I64 || sh->shape.rank != 1 || sh->shape.dims[0] > VCC_MAX_RANK || n->nout != 1 ||
        n->out[0] < 0 || (v && vcc_shape_numel(&v->shape) != 1))
        return vcc_fold_refuse(ctx, g, k);
    if (v && v->dtype != VCC_F32 && sh->data) {
        vcc_error(ctx, "node '%s' (%s): vcc evaluates ConstantOfShape only while compiling, or fills float32 at run "
                  "time: this %s result is over the %lld elements a compile-time value may hold", n->name,
                  vcc_node_op(n), vcc_dtype_name(v->dtype), (long long)VCC_FOLD_MAX_ELEMS);
        return VCC_ERR_UNSUPPORTED;
    }
    if (check && !sh->data) return g->tensors[n->out[0]].dtype == VCC_F32 ? VCC_OK : vcc_shape_mismatch(ctx, n);
    if (!sh->data || (v && !v->data)) return vcc_fold_refuse(ctx, g, k);
    VccShape s = {(int)sh->shape.dims[0], {0}};
    for (int i = 0; i < s.rank; i++)
        if ((s.dims[i] = ((const int64_t *)sh->data)[i]) < 0) return vcc_fold_refuse(ctx, g, k);
    int64_t bytes;
    if (!vcc_shape_checked_bytes(&s, VCC_F32, &bytes)) {
        vcc_error(ctx, "node '%s' (%s): its result is larger than vcc's limit of 2^47 bytes", n->name, vcc_node_op(n));
        return VCC_ERR_SHAPE;
    }
    return vcc_put_output(ctx, g, n, check, n->out[0], VCC_F32, &s) ? VCC_OK : VCC_ERR_SHAPE;
}

static VccStatus constant_of_shape_emit(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    const VccTensor *v = n->nin > 1 && n->in[1] >= 0 ? &e->g->tensors[n->in[1]] : NULL;
    float value = v && v->data ? *(const float *)v->data : 0.0f;
    fprintf(e->f, "    fill_forward(rt, %lld, %s, %s);\n", (long long)vcc_emit_numel(e, n->out[0]),
            vcc_emit_float(e, value), vcc_emit_f32(e, n->out[0]));
    return VCC_OK;
}

const VccOpDef vcc_def_CONSTANT_OF_SHAPE = {0, 0, no_attrs, NULL, NULL, constant_of_shape_shape, NULL,
                                            constant_of_shape_emit};
CONST_OP(RANGE, no_attrs);
