/*
 * pipeline.c — the pass list, the verifier between passes, and --dump-ir.
 *
 * Requires: a forward graph from the frontend. Produces: the planned training graph (with
 * ctx->forward_only, the planned forward graph: loss, autodiff and optimizer are skipped). A graph read
 * back after memplan keeps its plan, which is checked; with --memory-limit, remat then runs on it (a
 * dump after remat must already be within the limit).
 */
#include "passes.h"

#include <string.h>

typedef VccStatus (*VccPass)(VccCtx *, VccGraph *);

const char *const vcc_pass_names[] = {"onnx",     "canonical", "shape",    "fuse",    "precision", "loss",
                                      "autodiff", "optimizer", "storage",  "schedule", "liveness", "inplace",
                                      "memplan",  "remat",     NULL};

static const VccPass passes[] = {NULL,          vcc_canonicalize, vcc_infer_shapes, vcc_fuse_attention,
                                 vcc_precision, vcc_add_loss,     vcc_autodiff,     vcc_optimizer,
                                 vcc_storage,   vcc_schedule,     vcc_liveness,     vcc_inplace,
                                 vcc_memplan,   vcc_remat};

int vcc_pass_index(const char *name) {
    for (int i = 0; vcc_pass_names[i]; i++)
        if (strcmp(vcc_pass_names[i], name) == 0) return i;
    return -1;
}

VccStatus vcc_run_pipeline(VccCtx *ctx, VccGraph *g) { return vcc_run_passes_after(ctx, g, 0); }

VccStatus vcc_run_passes_after(VccCtx *ctx, VccGraph *g, int done) {
    /* a graph that comes from outside (a hand-edited .vir) is type-checked before any pass trusts its
     * shapes; its arena line follows from its offsets, and its plan is checked like one memplan made */
    if (done >= vcc_pass_index("shape")) {
        VccStatus st = vcc_check_types(ctx, g);
        if (st) return st;
    }
    if (done > 0) {
        VccStatus st = vcc_precision_check_dump(ctx, g, done);
        if (st) return st;
    }
    if (done >= vcc_pass_index("memplan")) vcc_plan_totals(g);
    int want = ctx->dump_after ? vcc_pass_index(ctx->dump_after) : -1;
    if (want >= 0 && want <= done) { /* the graph as given is the graph after that pass */
        fprintf(ctx->dump, "# vcc IR after %s\n", vcc_pass_names[done]);
        vcc_print_graph(ctx->dump, g, done >= vcc_pass_index("liveness"));
    }
    if (done >= vcc_pass_index("memplan")) {
        VccStatus st = vcc_plan_check(ctx, g);
        if (st || ctx->memory_limit <= 0) return st;
        if (done > vcc_pass_index("memplan") && g->arena_bytes > ctx->memory_limit) { /* after remat: final */
            vcc_error(ctx, "--memory-limit %lld bytes: the plan in this dump (after remat) has an arena of %lld "
                           "bytes; give a dump after memplan, or the ONNX model, for recomputation to meet it",
                      (long long)ctx->memory_limit, (long long)g->arena_bytes);
            return VCC_ERR_UNSUPPORTED;
        }
        /* after memplan with --memory-limit: remat, the pass below, runs on the plan as given */
    }
    for (int i = done + 1; vcc_pass_names[i]; i++) {
        bool training_pass = passes[i] == vcc_add_loss || passes[i] == vcc_autodiff || passes[i] == vcc_optimizer;
        if (passes[i] && !((ctx->forward_only || ctx->eval) && training_pass)) {
            VccStatus st = passes[i](ctx, g);
            if (st) return st;
            st = vcc_verify(ctx, g, vcc_pass_names[i]);
            if (st) return st;
        }
        if (ctx->dump_after && strcmp(ctx->dump_after, vcc_pass_names[i]) == 0) {
            fprintf(ctx->dump, "# vcc IR after %s\n", vcc_pass_names[i]);
            vcc_print_graph(ctx->dump, g, i >= vcc_pass_index("liveness"));
        }
    }
    /* what the emitters get: every node's types as its rule gives them, updates after their readers (an
     * order given in a dump after schedule included: no pass before this relies on it) */
    VccStatus st = vcc_check_types(ctx, g);
    return st ? st : vcc_check_update_order(ctx, g);
}
