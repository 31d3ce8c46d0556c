/*
 * fit.h — `vcc MODEL --fit SIZE --vary NAME`: the largest value of a symbolic dim (the batch) whose plan
 * fits in SIZE bytes, without and with recomputation (passes/remat.c).
 */
#ifndef VCC_FIT_H
#define VCC_FIT_H

#include "../ir/ir.h"

/* Compile the ONNX model as ctx says, with its messages discarded (ctx itself is not changed). Returns
 * the planned graph (the caller frees it with vcc_graph_free), or NULL when the compilation fails. */
VccGraph *vcc_compile_quiet(const VccCtx *ctx, const char *model);

/* Print to out the largest value of the symbolic dim vary (bound like --shape vary=N, the other bindings
 * as ctx has them) whose arena fits in limit bytes: once without recomputation, once with it
 * (ctx->memory_limit = limit), each with its arena (and the recomputation's values and extra FLOPs).
 * The search doubles N from 1 until the plan does not fit, then bisects: it takes the arena to grow
 * with N. It tries no N above 2^20: where that fits, the line says "2^20 or more". Returns 0, or 1 when the model does not compile at N = 1 (its errors reported
 * through ctx) or does not fit even at N = 1 without recomputation and with it. */
int vcc_fit(VccCtx *ctx, const char *model, int64_t limit, const char *vary, FILE *out);

#endif /* VCC_FIT_H */
