/*
 * vcc_forward_main.h — main() of a forward-only program (`vcc MODEL --forward-only -o fwd.c`): one
 * evaluation of the graph, inputs and outputs as .npy files. Inlined after vcc_elem.h, vcc_io.h and
 * the target runtime and vcc_state.h, like vcc_main.h; it only calls the VccRt interface.
 *
 *   ./fwd IN_1.npy ... IN_n.npy -o OUT_1.npy ... OUT_m.npy [--weights W.safetensors] [--seed S]
 *
 * Inputs in the order of the model's graph inputs (initializers excluded), outputs in the order of
 * its graph outputs; "--" ends the options (for file names that start with '-'). Each input must have
 * exactly the compiled dtype and shape. --weights defaults to the safetensors vcc wrote beside the
 * program (looked up in the binary's folder). A Dropout in training mode draws the masks of training
 * step 1 under --seed S (default 0), the masks a trainer compiled from the same model draws at its first
 * step with the same seed (runtime/elem/dropout.h); a bool output (a Dropout's mask) is written as a
 * bool .npy. -h/--help prints the usage and the compiled inputs and outputs. Output files are checked before the run (vcc_check_writable: a writable folder, no FIFO,
 * device or folder at the path) and again when written; an output may not name the file of an input,
 * of --weights or of another output. Errors print one line "<program>: <file>: <problem>" (<program>
 * being the binary's name) and exit with status 1; a malformed command line (unknown option, wrong file
 * count, an option given twice, an output naming another file argument's file) exits with 2.
 */
#ifndef VCC_FORWARD_MAIN_H
#define VCC_FORWARD_MAIN_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    size_t arena_bytes;
    const char *default_weights;
    const VccIoInfo *inputs, *outputs;
    int ninputs, noutputs;
    const VccStateInfo *state;               /* initializers, loaded from the weights file */
    int nstate;
    void (*init)(VccRt *rt, unsigned char *arena); /* uploads the compiled-in constants */
    void (*step)(VccRt *rt, unsigned char *arena, const VccOptim *o); /* o: zeros (no update) */
} VccForwardModel;

/* One graph input or output as "name float32 (2, 3)", for the usage text. */
static void vcc_forward_describe(FILE *f, const VccIoInfo *d) {
    char dt[32];
    fprintf(f, "    %s %s (", d->name, vcc_npy_dtype_name(d->npy, dt, sizeof dt));
    for (int k = 0; k < d->rank; k++) fprintf(f, k ? ", %lld" : "%lld", (long long)d->dims[k]);
    fputs(d->rank == 1 ? ",)\n" : ")\n", f);
}

static void vcc_forward_usage(FILE *f, const VccForwardModel *m) {
    fprintf(f,
            "usage: %s IN.npy... -o OUT.npy... [--weights W.safetensors] [--seed S]\n"
            "\n"
            "Evaluate the compiled model once: %d input .npy file(s), %d output .npy file(s), in this order.\n"
            "  --weights W    initializers, safetensors (default %s beside this program)\n"
            "  --seed S       the seed of the Dropout masks, those of training step 1 (default 0)\n"
            "  --             the next words are files even when they start with '-'\n",
            vcc_program, m->ninputs, m->noutputs, m->default_weights);
    vcc_threads_help(f, 14);
    fputs("  -h, --help     this text\ninputs:\n", f);
    for (int i = 0; i < m->ninputs; i++) vcc_forward_describe(f, &m->inputs[i]);
    fputs("outputs:\n", f);
    for (int i = 0; i < m->noutputs; i++) vcc_forward_describe(f, &m->outputs[i]);
}

static int vcc_forward_main(int argc, char **argv, const VccForwardModel *m) {
    const char *weights = NULL, *seed = NULL, *threads = NULL;
    long seed_value = 0;
    const char **in = (const char **)calloc((size_t)argc, sizeof *in), **out = (const char **)calloc((size_t)argc, sizeof *out);
    int nin = 0, nout = 0, outputs = 0, files_only = 0;
    char err[1024], wbuf[4096];
    vcc_omp_passive(argv);
    vcc_set_program(argv[0]);
    vcc_watch_stdout();
    if (!in || !out) vcc_die("out of memory");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!files_only && a[0] == '-' && a[1]) {
            if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
                vcc_forward_usage(stdout, m);
                exit(0);
            }
            if (!strcmp(a, "-o")) outputs = 1;
            else if (!strcmp(a, "--")) files_only = 1;
            else if (!vcc_opt_match(argc, argv, &i, "--weights", &weights) && !vcc_opt_match(argc, argv, &i, "--seed", &seed) &&
                     !vcc_threads_match(argc, argv, &i, &threads))
                vcc_usage_error("unknown option '%s'", a);
            continue;
        }
        if (outputs) out[nout++] = a;
        else in[nin++] = a;
    }
    if (nin != m->ninputs || nout != m->noutputs)
        vcc_usage_error("expected %d input and %d output .npy files (IN... -o OUT...), got %d and %d", m->ninputs,
                        m->noutputs, nin, nout);
    int beside = !weights;
    if (!weights) weights = vcc_beside_program(argv[0], m->default_weights, wbuf, sizeof wbuf);
    if (seed) vcc_option_count("--seed", seed, &seed_value);
    {
        VccFileArg *fin = (VccFileArg *)calloc((size_t)nin + 1, sizeof *fin);
        VccFileArg *fout = (VccFileArg *)calloc((size_t)nout + 1, sizeof *fout);
        char (*names)[48] = (char (*)[48])calloc((size_t)(nin + nout) + 1, sizeof *names);
        if (!fin || !fout || !names) vcc_die("out of memory");
        for (int i = 0; i < nin; i++) {
            snprintf(names[i], sizeof names[i], "input %d", i + 1);
            fin[i].opt = names[i];
            fin[i].path = in[i];
        }
        fin[nin].opt = "--weights";
        fin[nin].path = m->nstate ? weights : NULL;
        for (int i = 0; i < nout; i++) {
            snprintf(names[nin + i], sizeof names[nin + i], "output %d", i + 1);
            fout[i].opt = names[nin + i];
            fout[i].path = out[i];
        }
        vcc_check_distinct(fin, nin + 1, fout, nout);
        for (int i = 0; i < nout; i++) vcc_check_writable(fout[i].opt, out[i]);
        free(fin);
        free(fout);
        free(names);
    }
    VccRt rt;
    vcc_rt_init(&rt);
    vcc_threads_apply(&rt, threads);
    unsigned char *arena = (unsigned char *)vcc_arena_alloc(&rt, m->arena_bytes);
    if (!arena) vcc_dief("cannot allocate the %zu-byte arena", m->arena_bytes);
    m->init(&rt, arena);
    if (m->nstate) vcc_load_state(&rt, m->state, m->nstate, arena, weights, beside);
    for (int i = 0; i < m->ninputs; i++) {
        const VccIoInfo *d = &m->inputs[i];
        VccNpy a;
        char what[256];
        snprintf(what, sizeof what, "input '%.200s'", d->name);
        if (vcc_npy_load_as(in[i], d->npy, what, &a, err, sizeof err)) vcc_die(err);
        int ok = a.rank == d->rank && a.nbytes == d->bytes;
        for (int k = 0; ok && k < d->rank; k++) ok = a.dims[k] == d->dims[k];
        if (!ok) {
            fprintf(stderr, "%s: %s: input '%s' must have the compiled shape (", vcc_program, in[i], d->name);
            for (int k = 0; k < d->rank; k++) fprintf(stderr, k ? ", %lld" : "%lld", (long long)d->dims[k]);
            fputs(d->rank == 1 ? ",)\n" : ")\n", stderr);
            exit(1);
        }
        vcc_upload(&rt, arena + d->offset, a.data, d->bytes);
        vcc_npy_free(&a);
    }
    rt.seed = (uint64_t)seed_value;
    rt.step = 1;
    m->step(&rt, arena, &vcc_no_optim);
    vcc_rt_sync(&rt);
    for (int i = 0; i < m->noutputs; i++) {
        const VccIoInfo *d = &m->outputs[i];
        void *host = malloc(d->bytes ? d->bytes : 1);
        if (!host) vcc_die("out of memory");
        vcc_download(&rt, host, arena + d->offset, d->bytes);
        if (vcc_npy_save(out[i], d->npy, d->rank, d->dims, host, err, sizeof err)) vcc_die(err);
        free(host);
    }
    vcc_arena_free(&rt, arena);
    vcc_rt_destroy(&rt);
    free(in);
    free(out);
    return 0;
}

#endif /* VCC_FORWARD_MAIN_H */
