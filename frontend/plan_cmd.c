/*
 * plan_cmd.c — the `vcc plan` subcommand's own parts (see plan_cmd.h); frontend/cli.c parses its
 * options and passes/planreport.c writes the report.
 */
#include "plan_cmd.h"

#include <stdio.h>
#include <string.h>

#include "../passes/passes.h"
#include "frontend.h"

bool vcc_plan_subcommand(int argc, char **argv) { return argc > 1 && !strcmp(argv[1], "plan"); }

VccGraph *vcc_plan_unfused(const VccCtx *ctx, const char *model, const VccGraph *g) {
    size_t n = strlen(model);
    if (ctx->no_fuse_attention || (n >= 4 && !strcmp(model + n - 4, ".vir"))) return NULL;
    int nattn = 0;
    for (int k = 0; k < g->nnodes; k++) nattn += g->nodes[k].op == VCC_OP_ATTENTION;
    if (!nattn) return NULL;
    FILE *quiet = fopen("/dev/null", "w");
    if (!quiet) return NULL;
    VccCtx c = *ctx;
    c.diag = quiet;
    c.problems = NULL;
    c.nproblems = c.cap_problems = c.nerrors = c.suppressed = 0;
    c.dump_after = NULL;
    c.no_fuse_attention = true;
    VccGraph *u = NULL;
    VccStatus st = vcc_onnx_load(&c, model, &u);
    if (st == VCC_OK) st = vcc_run_passes_after(&c, u, 0);
    vcc_problems_clear(&c);
    fclose(quiet);
    if (st != VCC_OK) {
        vcc_graph_free(u);
        return NULL;
    }
    return u;
}
