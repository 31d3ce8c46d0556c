/*
 * pipeline.c — the pass list, the verifier between passes, and --dump-ir.
 *
 * Requires: a forward graph from the frontend. Produces: the planned training graph.
 */
#include "passes.h"

#include <string.h>

typedef VccStatus (*VccPass)(VccCtx *, VccGraph *);

const char *const vcc_pass_names[] = {"onnx",      "canonical", "shape",    "loss",    "autodiff", "optimizer",
                                      "schedule", "liveness",  "inplace", "memplan", NULL};

static const VccPass passes[] = {NULL,         vcc_canonicalize, vcc_infer_shapes, vcc_add_loss, vcc_autodiff,
                                 vcc_optimizer, vcc_schedule,    vcc_liveness,     vcc_inplace,  vcc_memplan};

VccStatus vcc_run_pipeline(VccCtx *ctx, VccGraph *g) {
    for (int i = 0; vcc_pass_names[i]; i++) {
        if (passes[i]) {
            VccStatus st = passes[i](ctx, g);
            if (st) return st;
            st = vcc_verify(ctx, g, vcc_pass_names[i]);
            if (st) return st;
        }
        if (ctx->dump_after && strcmp(ctx->dump_after, vcc_pass_names[i]) == 0) {
            fprintf(ctx->dump, "# vcc IR after %s\n", vcc_pass_names[i]);
            vcc_print_graph(ctx->dump, g, i >= 7);
        }
    }
    return VCC_OK;
}
