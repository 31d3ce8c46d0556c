#define _POSIX_C_SOURCE 200809L /* vcc_io.h: exclusive temporaries, refusing non-regular targets */
/*
 * weights.c — the initial weights file written beside the trainer.
 *
 * Requires: a graph whose initializers carry data. Produces: a safetensors file (format: 8-byte
 * little-endian header length, JSON header, raw little-endian data) holding every PARAM and BUFFER
 * tensor with data, named as in the ONNX model (constants are compiled into the program, see
 * codegen/emit.c); written to a new temporary file beside it, which the caller renames once the
 * program is written too.
 */
#include "codegen.h"

#include <stdlib.h>
#include <string.h>

#include "../runtime/vcc_io.h"

VccStatus vcc_write_weights(VccCtx *ctx, const VccGraph *g, const char *path, char **tmp) {
    VccStWrite *w = vcc_calloc((size_t)g->ntensors + 1, sizeof *w);
    int n = 0;
    for (int t = 0; t < g->ntensors; t++) {
        const VccTensor *x = &g->tensors[t];
        if (!x->data || x->alias_of >= 0) continue;
        if (x->kind != VCC_T_PARAM && x->kind != VCC_T_BUFFER) continue; /* constants are compiled in */
        w[n].name = x->name;
        w[n].dtype = x->dtype == VCC_I64 ? "I64" : "F32";
        w[n].rank = x->shape.rank;
        w[n].dims = x->shape.dims;
        w[n].data = x->data;
        w[n].nbytes = x->data_bytes;
        n++;
    }
    char err[1024];
    int rc = vcc_st_save_tmp(path, w, n, tmp, err, sizeof err);
    free(w);
    if (rc) {
        fprintf(ctx->diag, "vcc: %s\n", err);
        ctx->nerrors++;
        return VCC_ERR_IO;
    }
    return VCC_OK;
}
