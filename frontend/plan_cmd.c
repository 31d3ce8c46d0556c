/*
 * plan_cmd.c — the `vcc plan` subcommand's own parts (see plan_cmd.h); frontend/cli.c parses its
 * options and passes/planreport.c writes the report.
 */
#include "plan_cmd.h"
#include "fit.h"

#include <stdio.h>
#include <string.h>

#include "../passes/passes.h"
#include "frontend.h"

bool vcc_plan_subcommand(int argc, char **argv) { return argc > 1 && !strcmp(argv[1], "plan"); }

VccGraph *vcc_plan_unfused(const VccCtx *ctx, const char *model, const VccGraph *g) {
    if (ctx->no_fuse_attention || vcc_has_suffix(model, ".vir")) return NULL;
    int nattn = 0;
    for (int k = 0; k < g->nnodes; k++) nattn += g->nodes[k].op == VCC_OP_ATTENTION;
    if (!nattn) return NULL;
    VccCtx c = *ctx;
    c.no_fuse_attention = true;
    return vcc_compile_quiet(&c, model);
}
