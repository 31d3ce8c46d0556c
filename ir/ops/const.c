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
 * node, the input and where that input comes from.
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
CONST_OP(CONSTANT_OF_SHAPE, no_attrs);
CONST_OP(RANGE, no_attrs);
