/*
 * vcc_eval_main.h — main() of an evaluation program (`vcc MODEL --eval -o eval.c`): the forward graph in
 * inference form (BatchNormalization with its running statistics, Dropout off: PyTorch's model.eval())
 * run over a data set in batches. Inlined after vcc_elem.h, vcc_io.h, the target runtime and
 * vcc_state.h, like vcc_main.h; it only calls the VccRt interface, so it serves both targets.
 *
 * Letter legend: N batch (as compiled), C channels, T frames, H height, W width, S samples in the data
 * file, K classes.
 *
 *   ./eval --data X.npy [--labels Y.npy] [--weights W.safetensors] [--logits OUT.npy]
 *
 * X is float32 (S, C, T, H, W) with (C, T, H, W) as compiled; S need not be a multiple of N: the last
 * batch is filled up with copies of its last sample, whose logits are dropped (in inference form a
 * sample's logits depend on that sample alone). --weights defaults to the safetensors vcc wrote beside
 * the program; give the trainer's --out file (or a checkpoint) to evaluate a trained model.
 * With --labels (int64 (S,), values in [0, K)) it prints one line
 *     samples <S> top1 <acc> top5 <acc> loss <mean>
 * where top-k is the fraction of samples whose label's logit has fewer than k logits strictly greater
 * (top5 is top-min(5, K)) and loss the mean softmax cross-entropy (natural log, computed in double from
 * the logits: torch.nn.functional.cross_entropy, reduction mean). --logits writes the (S, K) float32
 * logits; without --labels it then prints "samples <S> logits written to <file> (<S>, <K>)". At least
 * one of --labels and --logits is required. The --logits file is checked before the evaluation starts
 * (vcc_check_writable) and must not name the file of an input.
 *
 * Errors: one line "<program>: <file>: <problem>" and exit status 1; a malformed command line (an
 * unknown option, an option given twice, --logits naming an input's file) exits with status 2. A failed
 * write to stdout ends the program with status 1.
 */
#ifndef VCC_EVAL_MAIN_H
#define VCC_EVAL_MAIN_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the generated file tells main() about the compiled model. */
typedef struct {
    size_t arena_bytes;
    const char *default_weights;             /* the safetensors vcc wrote beside the program */
    const VccIoInfo *input;                  /* the clip batch (N, C, T, H, W) */
    const VccIoInfo *output;                 /* the logits (N, K) */
    const VccStateInfo *state;               /* parameters and BN statistics, from the weights file */
    int nstate;
    void (*init)(VccRt *rt, unsigned char *arena); /* uploads the compiled-in constants */
    void (*step)(VccRt *rt, unsigned char *arena, const VccOptim *o); /* o: zeros (no update) */
} VccEvalModel;

static void vcc_eval_usage(FILE *f, const VccEvalModel *m) {
    char shape[256];
    fprintf(f,
            "usage: %s --data X.npy [--labels Y.npy] [--weights W.safetensors] [--logits OUT.npy]\n"
            "\n"
            "Evaluate the compiled model in inference form (BatchNormalization with its running statistics,\n"
            "Dropout off) over a data set, %lld samples per batch.\n"
            "\n"
            "  --data X.npy       clips, float32 %s\n"
            "  --labels Y.npy     class indices, int64 (S,), values in [0, %lld): print top-1, top-5, mean loss\n"
            "  --weights W        parameters and BN statistics, safetensors: the trainer's --out file or a\n"
            "                     checkpoint (default %s beside this program)\n"
            "  --logits OUT.npy   write the logits, float32 (S, %lld)\n",
            vcc_program, (long long)m->input->dims[0], vcc_clip_shape(m->input->rank, m->input->dims, shape, sizeof shape),
            (long long)m->output->dims[1], m->default_weights, (long long)m->output->dims[1]);
    vcc_threads_help(f, 18);
    fputs("  -h, --help         this text\n", f);
}

/* Whether logit a ranks before logit b: NaN above every number (as torch.argmax and torch.topk order
 * them), else the larger value. */
static int vcc_eval_above(float a, float b) { return isnan(a) ? !isnan(b) : !isnan(b) && a > b; }

/* Cross-entropy of one row of logits (K) against label y, in double: logsumexp(z) - z[y]. Also the
 * label's rank (0 = top-1): the logits ranked above z[y] (vcc_eval_above) plus the ones equal to it
 * (NaN equal to NaN) at a lower index. Ties go to the lower index, as torch.argmax's first maximum, so
 * a label is top-1 exactly where argmax(z) == y (PyTorch leaves the order of ties in topk unspecified). */
static double vcc_eval_row(const float *z, int64_t K, int64_t y, int64_t *rank) {
    double mx = z[0], sum = 0.0;
    for (int64_t k = 1; k < K; k++)
        if (z[k] > mx) mx = z[k];
    *rank = 0;
    for (int64_t k = 0; k < K; k++) {
        sum += exp((double)z[k] - mx);
        *rank += vcc_eval_above(z[k], z[y]) || (k < y && !vcc_eval_above(z[y], z[k]));
    }
    return mx + log(sum) - (double)z[y];
}

static int vcc_eval_main(int argc, char **argv, const VccEvalModel *m) {
    const char *data = NULL, *labels_path = NULL, *weights = NULL, *logits_path = NULL, *threads = NULL;
    char wbuf[4096];
    vcc_omp_passive(argv);
    vcc_set_program(argv[0]);
    vcc_watch_stdout();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            vcc_eval_usage(stdout, m);
            return 0;
        }
        if (vcc_opt_match(argc, argv, &i, "--data", &data) || vcc_opt_match(argc, argv, &i, "--labels", &labels_path) ||
            vcc_opt_match(argc, argv, &i, "--weights", &weights) ||
            vcc_opt_match(argc, argv, &i, "--logits", &logits_path) || vcc_threads_match(argc, argv, &i, &threads))
            continue;
        vcc_usage_error("unknown option '%s'", a);
    }
    if (!data) vcc_usage_error("--data is required");
    if (!labels_path && !logits_path) vcc_usage_error("give --labels (accuracy and loss) or --logits (the outputs), or both");
    int beside = !weights;
    if (!weights) weights = vcc_beside_program(argv[0], m->default_weights, wbuf, sizeof wbuf);
    {
        VccFileArg in[3] = {{"--data", data}, {"--labels", labels_path}, {"--weights", weights}};
        VccFileArg out[1] = {{"--logits", logits_path}};
        vcc_check_distinct(in, 3, out, 1);
    }
    if (logits_path) vcc_check_writable("--logits", logits_path);

    const int64_t N = m->input->dims[0], K = m->output->dims[1];
    VccNpy x, y;
    vcc_load_clips(data, m->input->rank, m->input->dims, &x);
    const int64_t S = x.dims[0];
    if (labels_path) vcc_load_labels(labels_path, S, K, &y);
    const int64_t *labels = labels_path ? (const int64_t *)y.data : NULL;

    VccRt rt;
    vcc_rt_init(&rt);
    vcc_threads_apply(&rt, threads);
    unsigned char *arena = (unsigned char *)vcc_arena_alloc(&rt, m->arena_bytes);
    if (!arena) vcc_dief("cannot allocate the %zu-byte arena", m->arena_bytes);
    m->init(&rt, arena);
    vcc_load_state(&rt, m->state, m->nstate, arena, weights, beside);

    size_t sample_bytes = x.nbytes / (size_t)S;
    float *batch_logits = (float *)malloc(m->output->bytes ? m->output->bytes : 1);
    float *all = logits_path ? (float *)malloc(sizeof(float) * (size_t)(S * K)) : NULL;
    if (!batch_logits || (logits_path && !all)) vcc_die("out of memory");
    double loss_sum = 0.0;
    int64_t top1 = 0, topk = 0, kk = K < 5 ? K : 5;
    for (int64_t b0 = 0; b0 < S; b0 += N) {
        int64_t real = S - b0 < N ? S - b0 : N;
        for (int64_t i = 0; i < N; i++) { /* a short last batch repeats its last sample */
            int64_t s = b0 + (i < real ? i : real - 1);
            vcc_upload(&rt, arena + m->input->offset + (size_t)i * sample_bytes,
                       (const unsigned char *)x.data + (size_t)s * sample_bytes, sample_bytes);
        }
        m->step(&rt, arena, &vcc_no_optim);
        vcc_download(&rt, batch_logits, arena + m->output->offset, m->output->bytes);
        for (int64_t i = 0; i < real; i++) {
            const float *z = batch_logits + i * K;
            if (all) memcpy(all + (b0 + i) * K, z, sizeof(float) * (size_t)K);
            if (!labels) continue;
            int64_t rank;
            loss_sum += vcc_eval_row(z, K, labels[b0 + i], &rank);
            top1 += rank < 1;
            topk += rank < kk;
        }
    }
    vcc_rt_sync(&rt);
    if (labels)
        printf("samples %lld top1 %.6f top%lld %.6f loss %.7g\n", (long long)S, (double)top1 / (double)S,
               (long long)kk, (double)topk / (double)S, loss_sum / (double)S);
    if (all) {
        char err[1024];
        int64_t dims[2] = {S, K};
        if (vcc_npy_save(logits_path, "f4", 2, dims, all, err, sizeof err)) vcc_die(err);
        if (!labels) printf("samples %lld logits written to %s (%lld, %lld)\n", (long long)S, logits_path, (long long)S, (long long)K);
    }
    free(all);
    free(batch_logits);
    vcc_npy_free(&x);
    if (labels) vcc_npy_free(&y);
    vcc_arena_free(&rt, arena);
    vcc_rt_destroy(&rt);
    return 0;
}

#endif /* VCC_EVAL_MAIN_H */
