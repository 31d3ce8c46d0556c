/*
 * vcc_forward_main.h — main() of a forward-only program (`vcc MODEL --forward-only -o fwd.c`): one
 * evaluation of the graph, inputs and outputs as .npy files. Inlined after vcc_elem.h, vcc_io.h and
 * the target runtime and vcc_state.h, like vcc_main.h; it only calls the VccRt interface.
 *
 *   ./fwd IN_1.npy ... IN_n.npy -o OUT_1.npy ... OUT_m.npy [--weights W.safetensors]
 *
 * Inputs in the order of the model's graph inputs (initializers excluded), outputs in the order of
 * its graph outputs. Each input must have exactly the compiled dtype and shape. Errors print one line
 * "fwd: <file>: <problem>" and exit with status 1.
 */
#ifndef VCC_FORWARD_MAIN_H
#define VCC_FORWARD_MAIN_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A graph input or output: where it lives in the arena and what it must look like. */
typedef struct {
    const char *name;
    size_t offset, bytes;
    int rank;
    int64_t dims[8];
    int is_i64;
} VccIoInfo;

typedef struct {
    size_t arena_bytes;
    const char *default_weights;
    const VccIoInfo *inputs, *outputs;
    int ninputs, noutputs;
    const VccStateInfo *state;               /* initializers, loaded from the weights file */
    int nstate;
    void (*init)(VccRt *rt, unsigned char *arena); /* uploads the compiled-in constants */
    void (*step)(VccRt *rt, unsigned char *arena, float lr, float momentum, float wd);
} VccForwardModel;

static int vcc_forward_main(int argc, char **argv, const VccForwardModel *m) {
    const char *weights = m->default_weights;
    const char **in = (const char **)calloc((size_t)argc, sizeof *in), **out = (const char **)calloc((size_t)argc, sizeof *out);
    int nin = 0, nout = 0, outputs = 0;
    char err[1024];
    if (!in || !out) vcc_die("out of memory");
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-o")) outputs = 1;
        else if (!strcmp(argv[i], "--weights") && i + 1 < argc) weights = argv[++i];
        else if (outputs) out[nout++] = argv[i];
        else in[nin++] = argv[i];
    }
    if (nin != m->ninputs || nout != m->noutputs) {
        snprintf(err, sizeof err, "expected %d input and %d output .npy files (IN... -o OUT...), got %d and %d",
                 m->ninputs, m->noutputs, nin, nout);
        vcc_die(err);
    }
    VccRt rt;
    vcc_rt_init(&rt);
    unsigned char *arena = (unsigned char *)vcc_arena_alloc(&rt, m->arena_bytes);
    if (!arena) vcc_die("cannot allocate the arena");
    m->init(&rt, arena);
    if (m->nstate) vcc_load_state(&rt, m->state, m->nstate, arena, weights);
    for (int i = 0; i < m->ninputs; i++) {
        const VccIoInfo *d = &m->inputs[i];
        VccNpy a;
        if (vcc_npy_load(in[i], &a, err, sizeof err)) vcc_die(err);
        int ok = !strcmp(a.dtype, d->is_i64 ? "i8" : "f4") && a.rank == d->rank && a.nbytes == d->bytes;
        for (int k = 0; ok && k < d->rank; k++) ok = a.dims[k] == d->dims[k];
        if (!ok) {
            snprintf(err, sizeof err, "%s: input '%s' must be %s with the compiled shape (%d dims, %zu bytes)", in[i],
                     d->name, d->is_i64 ? "int64" : "float32", d->rank, d->bytes);
            vcc_die(err);
        }
        vcc_upload(&rt, arena + d->offset, a.data, d->bytes);
        vcc_npy_free(&a);
    }
    m->step(&rt, arena, 0.0f, 0.0f, 0.0f);
    vcc_rt_sync(&rt);
    for (int i = 0; i < m->noutputs; i++) {
        const VccIoInfo *d = &m->outputs[i];
        void *host = malloc(d->bytes ? d->bytes : 1);
        if (!host) vcc_die("out of memory");
        vcc_download(&rt, host, arena + d->offset, d->bytes);
        if (vcc_npy_save(out[i], d->is_i64 ? "i8" : "f4", d->rank, d->dims, host, err, sizeof err)) vcc_die(err);
        free(host);
    }
    vcc_arena_free(&rt, arena);
    vcc_rt_destroy(&rt);
    free(in);
    free(out);
    return 0;
}

#endif /* VCC_FORWARD_MAIN_H */
