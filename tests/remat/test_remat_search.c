/*
 * test_remat_search.c — passes/remat.c keeps the better of its two search orders, and the graph it puts
 * back to start the second order from is the graph the first order started from.
 *
 *   test_remat_search MODEL.onnx [--loss graph]
 *
 * For limits from 99% of MODEL's unlimited arena down in steps of 3% (--recompute-flops 5), until one that
 * neither order meets (below it none is met either), the model is compiled
 * three times: with each order alone (VCC_REMAT_CONVS_FIRST, VCC_REMAT_HALVE_FIRST: fresh compiles, nothing
 * restored) and with both (the default: one order, then the graph restored to its first halving, then the
 * other, and the first again if it was better). The default must
 *   - meet the limit exactly when one of the orders alone does;
 *   - where one does, spend the fewest extra FLOPs of those that do, with exactly that order's arena,
 *     values and halvings (a restore that left anything behind would give another plan);
 *   - where neither does, fail too.
 * Exits 1 on a failure, also when no limit made the search halve a workspace (then nothing was compared:
 * the models the tests give are ones whose peaks are conv workspaces).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../frontend/frontend.h"
#include "../../passes/passes.h"

typedef struct {
    int ok;
    int64_t arena;
    int values, halvings;
    double flops;
} Result;

static Result compile(const char *model, bool graph_loss, int64_t limit, int policies) {
    Result r = {0, 0, 0, 0, 0};
    VccCtx ctx;
    vcc_ctx_init(&ctx, model);
    ctx.diag = fopen("/dev/null", "w");
    ctx.loss = graph_loss ? VCC_LOSS_GRAPH : VCC_LOSS_CE;
    ctx.memory_limit = limit;
    ctx.recompute_flops_max = 5;
    ctx.remat_policies = policies;
    VccGraph *g = NULL;
    VccStatus st = vcc_onnx_load(&ctx, model, &g);
    if (st == VCC_OK) st = vcc_run_pipeline(&ctx, g);
    if (st == VCC_OK) r = (Result){1, g->arena_bytes, g->remat_values, g->remat_ws_shrunk, g->remat_flops};
    vcc_problems_clear(&ctx);
    vcc_graph_free(g);
    fclose(ctx.diag);
    return r;
}

static int same(Result a, Result b) {
    return a.ok == b.ok && a.arena == b.arena && a.values == b.values && a.halvings == b.halvings && a.flops == b.flops;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_remat_search MODEL.onnx [--loss graph]\n");
        return 2;
    }
    bool graph_loss = argc > 3 && !strcmp(argv[2], "--loss") && !strcmp(argv[3], "graph");
    Result u = compile(argv[1], graph_loss, 0, 0);
    if (!u.ok) {
        fprintf(stderr, "FAIL: %s does not compile\n", argv[1]);
        return 1;
    }
    int failures = 0, compared = 0;
    for (int pct = 99; pct > 0; pct -= 3) {
        int64_t limit = u.arena * pct / 100;
        Result a = compile(argv[1], graph_loss, limit, VCC_REMAT_CONVS_FIRST),
               b = compile(argv[1], graph_loss, limit, VCC_REMAT_HALVE_FIRST), d = compile(argv[1], graph_loss, limit, 0);
        printf("limit %3d%% %" PRId64 ": convs first %s %" PRId64 " +%.3g FLOPs %d halvings | halve first %s %" PRId64
               " +%.3g %d | both %s %" PRId64 " +%.3g %d\n",
               pct, limit, a.ok ? "met" : "not met", a.arena, a.flops, a.halvings, b.ok ? "met" : "not met", b.arena,
               b.flops, b.halvings, d.ok ? "met" : "not met", d.arena, d.flops, d.halvings);
        if (a.halvings || b.halvings || d.halvings) compared++;
        const char *why = NULL;
        if (d.ok != (a.ok || b.ok)) why = "met by the default exactly when by one order alone";
        else if (d.ok && a.ok && b.ok && !same(d, a.flops <= b.flops ? a : b) && !same(d, b.flops <= a.flops ? b : a))
            why = "the default is the order with fewer FLOPs, plan for plan";
        else if (d.ok && !(a.ok && b.ok) && !same(d, a.ok ? a : b))
            why = "the default is the one order that meets the limit, plan for plan";
        if (why) {
            printf("FAIL at %d%%: %s\n", pct, why);
            failures++;
        }
        if (!a.ok && !b.ok) break;
    }
    if (failures) return 1;
    if (!compared) {
        printf("FAIL: no limit made the search halve a workspace, so nothing was compared\n");
        return 1;
    }
    printf("OK: %d limits with halvings\n", compared);
    return 0;
}
