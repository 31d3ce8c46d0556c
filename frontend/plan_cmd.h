/*
 * plan_cmd.h — `vcc plan MODEL [options]`: the compile options of vcc, then the plan report
 * (passes/planreport.h) on stdout instead of the one-line summary.
 */
#ifndef VCC_PLAN_CMD_H
#define VCC_PLAN_CMD_H

#include "../ir/ir.h"

/* True when argv names the plan subcommand (`vcc plan ...`); then the caller drops argv[1] and parses the
 * rest as vcc's usual options. */
bool vcc_plan_subcommand(int argc, char **argv);

/* Compile model again as ctx says but with attention unfused (--no-fuse-attention), for the report's
 * comparison. Returns the planned graph (the caller frees it with vcc_graph_free), or NULL when g holds
 * no FusedAttention, when ctx already keeps attention unfused, when model is a .vir dump (its fusion is
 * already decided), or when that compilation fails (its messages are discarded: the fused plan is the
 * one the user asked for). */
VccGraph *vcc_plan_unfused(const VccCtx *ctx, const char *model, const VccGraph *g);

#endif /* VCC_PLAN_CMD_H */
