/*
 * test_remat_search.c — passes/remat.c keeps the better of its searches (two orders, with and without
 * data-movement copies), and the graph it puts back to start another from is the graph the first started from.
 *
 *   test_remat_search MODEL.onnx [--loss graph]
 *
 * For limits from 99% of MODEL's unlimited arena down in steps of 3% (--recompute-flops 5), until one that
 * neither order meets (below it none is met either), the model is compiled
 * six times: with each order alone (VCC_REMAT_CONVS_FIRST, VCC_REMAT_HALVE_FIRST), with and without
 * data-movement copies (VCC_REMAT_COPIES, VCC_REMAT_NO_COPIES): fresh compiles, nothing restored; and with
 * all (the default: one order, then the graph restored to its first halving, then the other, and the first
 * again if it was better; then, where the model has copies, all that again from the start without them).
 * The default must
 *   - be, plan for plan, the default with offsets planned after every step (VCC_REMAT_PLAN_ALL; the
 *     default plans only states whose lower bound is within the limit), and where the limit is not met,
 *     refuse it with the same message, the same smallest arenas named (the default plans only the
 *     states that can set them); so too at a limit of 1 byte;
 *   - meet the limit exactly when one of the single searches does;
 *   - where one does, be the best of those that do (one meeting it without a halving, then the fewest
 *     extra FLOPs), with exactly that search's arena, values and halvings (a restore that left anything
 *     behind would give another plan);
 *   - where none does, fail too.
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
    char msg[2048]; /* what vcc said (the refusal naming the smallest arenas, when not met) */
} Result;

static Result compile(const char *model, bool graph_loss, int64_t limit, int policies) {
    Result r = {0, 0, 0, 0, 0, ""};
    VccCtx ctx;
    vcc_ctx_init(&ctx, model);
    ctx.diag = tmpfile();
    if (!ctx.diag) {
        perror("tmpfile");
        exit(2);
    }
    ctx.loss = graph_loss ? VCC_LOSS_GRAPH : VCC_LOSS_CE;
    ctx.memory_limit = limit;
    ctx.recompute_flops_max = 5;
    ctx.remat_policies = policies;
    VccGraph *g = NULL;
    VccStatus st = vcc_onnx_load(&ctx, model, &g);
    if (st == VCC_OK) st = vcc_run_pipeline(&ctx, g);
    if (st == VCC_OK) r = (Result){1, g->arena_bytes, g->remat_values, g->remat_ws_shrunk, g->remat_flops, ""};
    vcc_problems_clear(&ctx);
    rewind(ctx.diag);
    size_t got = fread(r.msg, 1, sizeof r.msg - 1, ctx.diag);
    r.msg[got] = 0;
    vcc_graph_free(g);
    fclose(ctx.diag);
    return r;
}

static int same(Result a, Result b) {
    return a.ok == b.ok && a.arena == b.arena && a.values == b.values && a.halvings == b.halvings &&
           a.flops == b.flops && !strcmp(a.msg, b.msg);
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
    /* each order alone, with and without data-movement copies */
    static const int single[4] = {VCC_REMAT_CONVS_FIRST | VCC_REMAT_COPIES, VCC_REMAT_HALVE_FIRST | VCC_REMAT_COPIES,
                                  VCC_REMAT_CONVS_FIRST | VCC_REMAT_NO_COPIES,
                                  VCC_REMAT_HALVE_FIRST | VCC_REMAT_NO_COPIES};
    static const char *names[4] = {"convs first", "halve first", "convs first, no copies", "halve first, no copies"};
    for (int pct = 99; pct > 0; pct -= 3) {
        int64_t limit = u.arena * pct / 100;
        Result a[4], d = compile(argv[1], graph_loss, limit, 0),
                     all = compile(argv[1], graph_loss, limit, VCC_REMAT_PLAN_ALL);
        int met = 0, best = -1;
        printf("limit %3d%% %" PRId64 ":", pct, limit);
        for (int i = 0; i < 4; i++) {
            a[i] = compile(argv[1], graph_loss, limit, single[i]);
            printf(" %s %s %" PRId64 " +%.3g FLOPs %d halvings |", names[i], a[i].ok ? "met" : "not met", a[i].arena,
                   a[i].flops, a[i].halvings);
            if (a[i].halvings) compared++;
            if (!a[i].ok) continue;
            met++;
            /* the better: without a halving (the unlimited plan's numbers), then the fewer FLOPs */
            if (best < 0 || (!a[i].halvings && a[best].halvings) ||
                (!a[i].halvings == !a[best].halvings && a[i].flops < a[best].flops))
                best = i;
        }
        printf(" default %s %" PRId64 " +%.3g %d\n", d.ok ? "met" : "not met", d.arena, d.flops, d.halvings);
        const char *why = NULL;
        if (!same(d, all)) why = "the default planned only where the lower bound is within the limit is the search "
                                 "planned at every step, plan for plan";
        else if (d.ok != (met > 0)) why = "met by the default exactly when by one search alone";
        else if (d.ok) {
            int tie = 0; /* the default is the best single search, plan for plan (one of them on a tie) */
            for (int i = 0; i < 4; i++)
                tie |= a[i].ok && !a[i].halvings == !a[best].halvings && a[i].flops == a[best].flops && same(d, a[i]);
            if (!tie) why = "the default is the single search without a halving, then with the fewest FLOPs";
        }
        if (why) {
            printf("FAIL at %d%%: %s\n", pct, why);
            failures++;
        }
        if (!met) break;
    }
    Result d = compile(argv[1], graph_loss, 1, 0), all = compile(argv[1], graph_loss, 1, VCC_REMAT_PLAN_ALL);
    printf("limit 1 byte: %s", d.msg);
    if (d.ok || !same(d, all) || !strstr(d.msg, "the smallest arena reachable")) {
        printf("FAIL at 1 byte: the default refuses it as the search planned at every step does, naming the "
               "smallest arenas (with every state planned: %s)\n", all.msg);
        failures++;
    }
    if (failures) return 1;
    if (!compared) {
        printf("FAIL: no limit made the search halve a workspace, so nothing was compared\n");
        return 1;
    }
    printf("OK: %d limits with halvings\n", compared);
    return 0;
}
