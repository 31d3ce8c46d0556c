/*
 * poison.h — the plan tables of a C trainer's -DVCC_POISON build (runtime/vcc_poison.h).
 */
#ifndef VCC_CODEGEN_POISON_H
#define VCC_CODEGEN_POISON_H

#include <stdio.h>

#include "../ir/ir.h"

/* Write, for a planned graph, the C that runtime/vcc_poison.h checks: under #ifdef VCC_POISON the
 * VccPoisonPlan vcc_poison_plan (every tensor holding arena bytes: offset, bytes in bytes, its definition,
 * its name; per node what it reads, what it writes and which planned definitions end there; what the host
 * holds at a step's start) and the macros VCC_POISON_BEGIN(), VCC_POISON_PRE(k) and VCC_POISON_POST(k),
 * which call the runtime's checks on the arena A in scope; without VCC_POISON the macros are empty. The
 * step body calls them around each node. Never fails. */
void vcc_emit_poison_plan(FILE *f, const VccGraph *g);

#endif /* VCC_CODEGEN_POISON_H */
