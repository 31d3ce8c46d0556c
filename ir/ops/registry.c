/*
 * registry.c — op -> definition and family, from ir/ops.def (a row whose vcc_def_<ENUM> no family file
 * defines is a link error).
 */
#include "ops.h"

#define X(e, name, kind, family) extern const VccOpDef vcc_def_##e;
#include "ops.def"

static const VccOpDef *const defs[VCC_OP_COUNT] = {
#define X(e, name, kind, family) &vcc_def_##e,
#include "ops.def"
};

static const char *const op_family[VCC_OP_COUNT] = {
#define X(e, name, kind, family) #family,
#include "ops.def"
};

/* An op vcc does not have: no rules (passes/support.c reports it before any pass reads the table). */
const VccOpDef vcc_def_UNSUPPORTED = {0};

const VccOpDef *vcc_op_def(VccOp op) {
    VCC_ASSERT(op >= 0 && op < VCC_OP_COUNT);
    return defs[op];
}

const char *vcc_op_family(VccOp op) {
    VCC_ASSERT(op >= 0 && op < VCC_OP_COUNT);
    return op_family[op];
}
