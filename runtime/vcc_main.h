/*
 * vcc_main.h — the trainer's main(): command line, data loading, the step loop, checkpoints.
 * Inlined into every generated trainer after vcc_elem.h, vcc_io.h, the target runtime
 * (vcc_cpu.h or vcc_cuda.cuh) and vcc_state.h; it only calls the VccRt interface, so one main serves both targets.
 *
 * Letter legend: N batch, C channels, T frames, H height, W width, S samples in the data file.
 *
 *   ./train --data X.npy --labels Y.npy [--steps S] [--lr LR] [--momentum M] [--weight-decay WD]
 *           [--weights W.safetensors] [--out trained.safetensors] [--save-grads grads.safetensors]
 *           [--checkpoint-dir DIR]
 *
 * X is float32 (S, C, T, H, W) with (C, T, H, W) as compiled, Y int64 (S,) with values in [0, K).
 * Step k (1-based) trains on samples (k-1)*N + i mod S, i < N, and prints "step <k> loss <value>".
 * Defaults: --steps 1, --lr 0.01, --momentum as compiled (0.9), --weight-decay 0, --weights the
 * safetensors vcc wrote beside the trainer. --out saves parameters, BN running statistics and constants
 * after the last step (a complete --weights file); --save-grads the last step's parameter gradients
 * (named as their parameters); --checkpoint-dir (created if missing) writes DIR/step<k>.safetensors after
 * every step with the same plus the momentum buffers ("<param>.momentum"), which --weights restores.
 * Errors print one line "train: <file>: <problem>" and exit with status 1.
 */
#ifndef VCC_MAIN_H
#define VCC_MAIN_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__unix__) || defined(__APPLE__)
#include <sys/stat.h>
#include <unistd.h>
#define VCC_ISATTY(fd) isatty(fd)
#else
#define VCC_ISATTY(fd) 0
#endif

/* What the generated file tells main() about the compiled model. */
typedef struct {
    size_t arena_bytes;
    const char *default_weights;             /* the safetensors vcc wrote beside the trainer */
    int input_rank;
    int64_t input_dims[8];                   /* (N, C, T, H, W) as compiled */
    size_t input_offset, label_offset, loss_offset;
    int64_t num_classes;
    float default_momentum;
    const VccStateInfo *state;
    int nstate;
    void (*init)(VccRt *rt, unsigned char *arena); /* uploads the compiled-in constants */
    void (*step)(VccRt *rt, unsigned char *arena, float lr, float momentum, float wd);
} VccModel;

/* A finite number >= 0 (PyTorch's SGD refuses negative lr, momentum and weight decay). */
static int vcc_parse_float(const char *s, float *out) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v >= 0.0 && v <= 3.0e38)) return 1;
    *out = (float)v;
    return 0;
}

/* Fail now, not after training, when an output file cannot be written. */
static void vcc_check_writable(const char *path) {
    char tmp[4096], err[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        snprintf(err, sizeof err, "%s: cannot write: %s", path, strerror(errno));
        vcc_die(err);
    }
    fclose(f);
    remove(tmp);
}

static void vcc_usage(FILE *f) {
    fputs("usage: train --data X.npy --labels Y.npy [--steps S] [--lr LR] [--momentum M] [--weight-decay WD]\n"
          "             [--weights W.safetensors] [--out trained.safetensors] [--save-grads grads.safetensors]\n"
          "             [--checkpoint-dir DIR]\n",
          f);
}

static int vcc_trainer_main(int argc, char **argv, const VccModel *m) {
    const char *data_path = NULL, *label_path = NULL, *weights = m->default_weights, *out = NULL, *grads = NULL;
    const char *ckpt_dir = NULL;
    long steps = 1;
    float lr = 0.01f, momentum = m->default_momentum, wd = 0.0f;
    char err[1024];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            vcc_usage(stdout);
            return 0;
        }
        if (i + 1 >= argc) {
            vcc_usage(stderr);
            snprintf(err, sizeof err, "option %s needs a value (or is unknown)", a);
            vcc_die(err);
        }
        const char *v = argv[++i];
        if (!strcmp(a, "--data")) data_path = v;
        else if (!strcmp(a, "--labels")) label_path = v;
        else if (!strcmp(a, "--weights")) weights = v;
        else if (!strcmp(a, "--out")) out = v;
        else if (!strcmp(a, "--save-grads")) grads = v;
        else if (!strcmp(a, "--checkpoint-dir")) ckpt_dir = v;
        else if (!strcmp(a, "--steps")) {
            char *end;
            errno = 0;
            steps = strtol(v, &end, 10);
            if (end == v || *end || steps < 0 || errno) vcc_die("--steps needs a non-negative integer");
        } else if (!strcmp(a, "--lr")) {
            if (vcc_parse_float(v, &lr)) vcc_die("--lr needs a finite number >= 0");
        } else if (!strcmp(a, "--momentum")) {
            if (vcc_parse_float(v, &momentum)) vcc_die("--momentum needs a finite number >= 0");
        } else if (!strcmp(a, "--weight-decay")) {
            if (vcc_parse_float(v, &wd)) vcc_die("--weight-decay needs a finite number >= 0");
        } else {
            vcc_usage(stderr);
            snprintf(err, sizeof err, "unknown option %s", a);
            vcc_die(err);
        }
    }
    if (!data_path || !label_path) {
        vcc_usage(stderr);
        vcc_die("--data and --labels are required");
    }
    if (out) vcc_check_writable(out);
    if (grads) vcc_check_writable(grads);
    if (ckpt_dir) {
        char probe[4096];
        struct stat sb;
        if (stat(ckpt_dir, &sb) != 0) mkdir(ckpt_dir, 0777);
        snprintf(probe, sizeof probe, "%s/step0.safetensors", ckpt_dir);
        vcc_check_writable(probe);
    }

    /* data (S, C, T, H, W) float32 and labels (S,) int64, checked against the compiled shapes */
    VccNpy x, y;
    if (vcc_npy_load(data_path, &x, err, sizeof err)) vcc_die(err);
    if (strcmp(x.dtype, "f4") != 0) {
        snprintf(err, sizeof err, "%s: expected dtype float32, got '%s'", data_path, x.dtype);
        vcc_die(err);
    }
    int shape_ok = x.rank == m->input_rank && x.dims[0] >= 1;
    for (int d = 1; shape_ok && d < m->input_rank; d++) shape_ok = x.dims[d] == m->input_dims[d];
    if (!shape_ok) {
        char want[256], got[256];
        size_t o = 0;
        o += (size_t)snprintf(want + o, sizeof want - o, "(S");
        for (int d = 1; d < m->input_rank; d++) o += (size_t)snprintf(want + o, sizeof want - o, ", %lld", (long long)m->input_dims[d]);
        snprintf(want + o, sizeof want - o, ")");
        o = 0;
        o += (size_t)snprintf(got + o, sizeof got - o, "(");
        for (int d = 0; d < x.rank && o < sizeof got; d++) o += (size_t)snprintf(got + o, sizeof got - o, d ? ", %lld" : "%lld", (long long)x.dims[d]);
        if (o < sizeof got) snprintf(got + o, sizeof got - o, ")");
        snprintf(err, sizeof err, "%s: expected shape %s, got %s", data_path, want, got);
        vcc_die(err);
    }
    if (vcc_npy_load(label_path, &y, err, sizeof err)) vcc_die(err);
    if (strcmp(y.dtype, "i8") != 0) {
        snprintf(err, sizeof err, "%s: expected dtype int64, got '%s'", label_path, y.dtype);
        vcc_die(err);
    }
    if (y.rank != 1 || y.dims[0] != x.dims[0]) {
        snprintf(err, sizeof err, "%s: expected shape (%lld,) to match the data's %lld samples", label_path,
                 (long long)x.dims[0], (long long)x.dims[0]);
        vcc_die(err);
    }
    const int64_t *labels = (const int64_t *)y.data;
    for (int64_t i = 0; i < y.dims[0]; i++)
        if (labels[i] < 0 || labels[i] >= m->num_classes) {
            snprintf(err, sizeof err, "%s: label %lld at index %lld is outside [0, %lld)", label_path,
                     (long long)labels[i], (long long)i, (long long)m->num_classes);
            vcc_die(err);
        }

    /* one arena for everything; persistent state from the weights file */
    VccRt rt;
    vcc_rt_init(&rt);
    unsigned char *arena = (unsigned char *)vcc_arena_alloc(&rt, m->arena_bytes);
    if (!arena) {
        snprintf(err, sizeof err, "cannot allocate the %zu-byte arena", m->arena_bytes);
        vcc_die(err);
    }
    m->init(&rt, arena);
    vcc_load_state(&rt, m->state, m->nstate, arena, weights);

    int64_t N = m->input_dims[0], S = x.dims[0];
    size_t sample_bytes = (size_t)(x.nbytes / (size_t)S);
    int64_t *batch_labels = (int64_t *)malloc(sizeof(int64_t) * (size_t)N);
    if (!batch_labels) vcc_die("out of memory");
    int progress = VCC_ISATTY(2);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long k = 0; k < steps; k++) {
        for (int64_t i = 0; i < N; i++) {
            int64_t s = (k * N + i) % S;
            vcc_upload(&rt, arena + m->input_offset + (size_t)i * sample_bytes, (const unsigned char *)x.data + (size_t)s * sample_bytes,
                       sample_bytes);
            batch_labels[i] = labels[s];
        }
        vcc_upload(&rt, arena + m->label_offset, batch_labels, sizeof(int64_t) * (size_t)N);
        m->step(&rt, arena, lr, momentum, wd);
        float loss = vcc_read_scalar(&rt, (const float *)(arena + m->loss_offset));
        if (progress) fputs("\r\033[K", stderr); /* clear the progress line before the step line */
        printf("step %ld loss %.7g\n", k + 1, (double)loss);
        fflush(stdout);
        if (ckpt_dir) {
            char path[4096];
            snprintf(path, sizeof path, "%s/step%ld.safetensors", ckpt_dir, k + 1);
            if (vcc_save_state(&rt, m->state, m->nstate, arena, path,
                               (1 << VCC_ROLE_PARAM) | (1 << VCC_ROLE_BUFFER) | (1 << VCC_ROLE_CONST) |
                                   (1 << VCC_ROLE_OPT_STATE), err,
                               sizeof err))
                vcc_die(err);
        }
        if (progress) {
            clock_gettime(CLOCK_MONOTONIC, &t1);
            double el = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
            double per = el / (double)(k + 1);
            fprintf(stderr, "\r%ld/%ld steps  %.1f samples/s  ETA %.0f s   ", k + 1, steps, (double)N / per,
                    per * (double)(steps - k - 1));
            if (k + 1 == steps) fputc('\n', stderr);
        }
    }
    vcc_rt_sync(&rt);
    if (grads && vcc_save_state(&rt, m->state, m->nstate, arena, grads, 1 << VCC_ROLE_GRAD, err, sizeof err)) vcc_die(err);
    if (out && vcc_save_state(&rt, m->state, m->nstate, arena, out, (1 << VCC_ROLE_PARAM) | (1 << VCC_ROLE_BUFFER) | (1 << VCC_ROLE_CONST), err,
                              sizeof err))
        vcc_die(err);
    free(batch_labels);
    vcc_npy_free(&x);
    vcc_npy_free(&y);
    vcc_arena_free(&rt, arena);
    vcc_rt_destroy(&rt);
    return 0;
}

#endif /* VCC_MAIN_H */
