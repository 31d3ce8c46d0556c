/*
 * vcc_main.h — the trainer's main(): command line, data loading, the step loop, checkpoints and resume.
 * Inlined into every generated trainer after vcc_elem.h, vcc_io.h, the target runtime
 * (vcc_cpu.h or vcc_cuda.cuh) and vcc_state.h; it only calls the VccRt interface, so one main serves both targets.
 *
 * Letter legend: N batch, C channels, T frames, H height, W width, S samples in the data file.
 *
 *   ./train --data X.npy --labels Y.npy | --targets T.npy [--steps S] [--optimizer sgd|adamw] [--lr LR]
 *           [--momentum M] (SGD) | [--beta1 B1] [--beta2 B2] [--eps E] (AdamW) [--weight-decay WD]
 *           [--clip-grad-norm MAX] [--lr-schedule constant|cosine] [--warmup-steps W]
 *           [--weights W.safetensors] [--out trained.safetensors] [--save-grads grads.safetensors]
 *           [--checkpoint-dir DIR] [--checkpoint-every K] [--keep-last N] [--resume DIR|FILE] [--seed S]
 *           [--cudnn-search time|heuristic] [--cuda-graph on|off] (CUDA)
 *
 * (The binary of train.cu is train_cuda; every message starts with the binary's own name.)
 * X is float32 (S, C, T, H, W) with (C, T, H, W) as compiled, Y int64 (S,) with values in [0, K) (the
 * labels of softmax cross-entropy, or an int64 input of a model that computes its own loss), T float32
 * (S, ...) the targets of mean squared error (or a model's second float input, with its own loss); the
 * program reads the files its loss needs (--help lists them).
 * Steps: --steps S is the run's TOTAL step count, counted from step 1: a fresh run trains steps 1..S,
 * a run resumed at step k trains k+1..S, so the same command line plus --resume ends at the same step.
 * Step k trains on the N samples that follow the data position, (p + i) mod S for i < N, where p starts
 * at 0 and advances by N each step (step k: samples (k-1)*N + i mod S), and prints "step <k> loss <value>".
 * Defaults: --steps 1, --lr 0.01, --momentum as compiled (0.9), --weight-decay 0 (SGD) or 0.01 (AdamW),
 * --beta1 0.9, --beta2 0.999, --eps 1e-8, --weights the safetensors vcc wrote beside the trainer (looked
 * up in the binary's folder). --out saves parameters and BN running statistics after the last step (a
 * complete --weights file); --save-grads the last step's parameter gradients (named as their
 * parameters; as backward computed them: --clip-grad-norm scales them inside the updates).
 * --save-grads and --clip-grad-norm need a program compiled with vcc --keep-grads, which keeps every
 * gradient until all updates ran; by default each parameter is updated as soon as its gradient is final
 * (the gradient's bytes are reused), and either option is a usage error naming vcc --keep-grads.
 *
 * Optimizer: the one the program was compiled with (vcc --optimizer sgd|adamw; its state is part of the
 * arena plan). SGD is torch.optim.SGD (dampening 0, no Nesterov): g += wd*p; v = momentum*v + g;
 * p -= lr*v. AdamW is torch.optim.AdamW (amsgrad and maximize off), with t the run's step number:
 * p *= 1 - lr*wd; m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g^2; p -= lr/(1-b1^t) * m/(sqrt(v)/sqrt(1-b2^t) + eps).
 * --optimizer NAME only confirms the compiled one; another name, or an option of the other optimizer
 * (--momentum on AdamW; --beta1, --beta2, --eps on SGD), is a usage error saying how to recompile.
 * --clip-grad-norm MAX: torch.nn.utils.clip_grad_norm_ before every update: the 2-norm of all parameter
 * gradients together (float64), and every gradient times MAX / (norm + 1e-6) when that is below 1.
 * Learning rate of step s (1-based) with --lr LR, --warmup-steps W (default 0) and --steps S:
 *   s <= W: LR * s / W;  after: LR (--lr-schedule constant, the default) or
 *   LR * 0.5 * (1 + cos(pi * (s - W) / (S - W))) (--lr-schedule cosine).
 *
 * CUDA (a runtime that defines VCC_RT_CUDA): --cudnn-search time (the default) chooses each convolution
 * direction's cuDNN algorithm at its first call by timing the candidates on that call's tensors
 * (cudnnFind*AlgorithmEx, cuda/conv.cuh), heuristic by cuDNN's heuristic ranking without running any; --help
 * names the precision compiled in (vcc --precision: fp32 or tf32, VCC_PRECISION_NAME). --cuda-graph on
 * replays the step as one CUDA graph from the second step on (vcc_graph_step), refused where a kernel
 * argument changes from step to step (AdamW, a scheduled learning rate, Dropout).
 *
 * Seed: --seed S (a decimal integer, default 0) keys the draws of the model's Dropout masks: the mask of
 * a Dropout node at step k is a pure function of (S, the node, k) (runtime/elem/dropout.h), the same on
 * the CPU and the GPU, so the same command line draws the same masks and another seed other masks. A
 * Dropout with an ONNX seed attribute draws with that seed instead.
 *
 * Checkpoints: --checkpoint-dir DIR (created if missing) receives DIR/step<k>.safetensors after every
 * K-th step (--checkpoint-every K, default 100; 0 = none but the last) and after the run's last step:
 * parameters, BN running statistics and the optimizer state (SGD: "<param>.momentum"; AdamW:
 * "<param>.exp_avg" and "<param>.exp_avg_sq", whose step count is the checkpoint's step), and in the
 * safetensors "__metadata__": vcc_checkpoint "1", step, data_position, samples, batch, steps, optimizer
 * ("sgd" or "adamw"), lr, weight_decay and momentum (SGD) or beta1, beta2 and eps (AdamW) (the shortest
 * decimal text that reads back as the float given), clip_grad_norm ("none" or the max norm), lr_schedule,
 * warmup_steps, seed, model (a fingerprint of
 * the compiled state table and arena size, the input shape and the class count), data (a fingerprint
 * of the clips and labels; data_file and labels_file name them), run (an id drawn when the run
 * started, kept across resumes) and program (the binary's name). A step's line is
 * printed after its checkpoint is on disk. Each file is written to a new temporary file
 * <file>.tmp.XXXXXX (created exclusively, never through a symlink), fsync'ed and renamed, so a file named
 * step<k>.safetensors is always complete; a run that claims the folder removes the temporary files of
 * writes that were cut short. After a checkpoint is written, older ones
 * beyond the newest N are deleted (--keep-last N, default 2; 0 keeps all). A fresh run refuses a DIR
 * that already holds checkpoints (it would overwrite another run's); the message says how to resume
 * that run or to choose another folder. One trainer at a time writes into a folder (a POSIX lock on
 * DIR/.vcc.lock, dropped when the process ends); a second one is refused, naming the first's pid.
 *
 * Resume: --resume DIR continues the run from the newest checkpoint in DIR that loads (a damaged one is
 * skipped with a warning); --resume FILE from that checkpoint. Parameters, BN statistics, the optimizer
 * state, the step (AdamW's step count and the schedule's position), the data position and the seed are restored, so the resumed run draws the dropout masks and
 * prints the losses the uninterrupted run would have, bit for bit (on the GPU as far as the run itself is reproducible: cuDNN's
 * atomics-based algorithms are not bitwise deterministic). The checkpoint must come from the same
 * compiled model and optimizer (a checkpoint of the other optimizer is refused, naming both), the same
 * data and labels and the same hyperparameters (--lr, --momentum or --beta1/--beta2/--eps, --weight-decay,
 * --clip-grad-norm, --lr-schedule, --warmup-steps, and with a cosine schedule --steps; else an error names
 * the difference; --seed, when given, must be the run's; a checkpoint without a seed, from a program
 * before --seed, has the default 0, one without the newer keys a constant schedule and no clipping;
 * --weights CKPT starts a new run from a checkpoint's weights and optimizer state instead, at step 1).
 * With --resume DIR, checkpoints go on into DIR unless --checkpoint-dir names another (empty) folder.
 * --weights and --resume exclude each other.
 *
 * Signals: with a checkpoint folder, SIGINT or SIGTERM lets the current step finish, writes its
 * checkpoint, and exits with status 128 + signal; the first signal is acknowledged on stderr at once
 * ("stopping after this step ..."); a second signal ends the program at once.
 *
 * Files: outputs (--out, --save-grads, checkpoints) are checked before the run (a writable folder; an
 * existing output must be a regular file, never a FIFO, device or folder, which the rename would
 * replace) and again when written; an output may not name the same file as an input or another output
 * (status 2). Inputs must be regular files (a FIFO is refused, not waited on). Numbers on the command
 * line are plain decimals ("0.01", "1e-3"; no sign, spaces, hex, inf or nan), and an option given
 * twice is a usage error.
 *
 * Errors: one line "<program>: <file>: <problem>" and exit status 1 (bad data, files, values); a
 * malformed command line (unknown option, missing value, missing --data/--labels, an option given
 * twice, an output naming an input's file) exits with status 2. A failed write to stdout ends the
 * program with status 1 and "<program>: cannot write to standard output: <reason>".
 */
#ifndef VCC_MAIN_H
#define VCC_MAIN_H

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#define VCC_ISATTY(fd) isatty(fd)

/* What the generated file tells main() about the compiled model. */
typedef struct {
    size_t arena_bytes;
    const char *default_weights;             /* the safetensors vcc wrote beside the trainer */
    int input_rank;
    int64_t input_dims[8];                   /* (N, C, T, H, W) as compiled */
    size_t input_offset, label_offset, loss_offset;
    int64_t num_classes;                     /* labels are checked to lie in [0, K); 0: not checked */
    float default_momentum;
    const VccStateInfo *state;
    int nstate;
    void (*init)(VccRt *rt, unsigned char *arena); /* uploads the compiled-in constants */
    void (*step)(VccRt *rt, unsigned char *arena, const VccOptim *o);
    int has_labels;                          /* int64 labels (N) at label_offset, from --labels */
    int target_rank;                         /* float targets (N, ...) at target_offset, from --targets; 0: none */
    int64_t target_dims[8];
    size_t target_offset;
    const char *loss;                        /* what the step minimizes, for --help */
    int optimizer;                           /* VCC_OPTIMIZER_SGD or VCC_OPTIMIZER_ADAMW, as compiled */
    int keeps_grads;                         /* compiled with vcc --keep-grads: the gradients outlive the step's
                                                updates (--save-grads, --clip-grad-norm); 0: each parameter is
                                                updated as soon as its gradient is final */
    int draws_random;                        /* the step draws random numbers keyed by the step number (Dropout,
                                                Random*Like, attention dropout): no --cuda-graph */
} VccModel;

enum { VCC_OPTIMIZER_SGD = 0, VCC_OPTIMIZER_ADAMW = 1 };
static const char *const vcc_optimizer_names[2] = {"sgd", "adamw"};

/* "an SGD" or "an AdamW" for the optimizer named name ("sgd", "adamw"), for messages. */
static const char *vcc_optimizer_an(const char *name) { return !strcmp(name, "adamw") ? "an AdamW" : "an SGD"; }

/* The trainer's command line. */
typedef struct {
    const char *data, *labels, *targets, *weights, *out, *grads, *ckpt_dir, *resume;
    long steps, every, keep;                 /* every / keep: -1 until given */
    long seed;                               /* --seed: -1 until given (then the default, 0, or the checkpoint's) */
    long warmup;                             /* --warmup-steps */
    const char *threads;                     /* --threads' text, NULL: the physical cores (C programs) */
    int conv_heuristic;                      /* --cudnn-search heuristic (CUDA only; 0: time, the default) */
    int cuda_graph;                          /* --cuda-graph on (CUDA only; 0: off, the default) */
    int cosine;                              /* --lr-schedule cosine */
    float lr, momentum, wd, beta1, beta2, eps, clip; /* as given, rounded to float32 (clip 0: none) */
    double lr64, wd64, beta1_64, beta2_64, eps64, clip64; /* the same decimals read as doubles (AdamW, clip) */
    char weights_buf[4096];
    int weights_beside;                      /* no --weights: the file vcc wrote beside the program */
} VccTrainArgs;

#define VCC_CKPT_EVERY_DEFAULT 100
#define VCC_KEEP_LAST_DEFAULT 2
#define VCC_CKPT_ROLES ((1 << VCC_ROLE_PARAM) | (1 << VCC_ROLE_BUFFER) | (1 << VCC_ROLE_CONST) | (1 << VCC_ROLE_OPT_STATE))

/* Set by SIGINT/SIGTERM while a checkpoint folder is in use: stop after the current step. */
static volatile sig_atomic_t vcc_stop_signal = 0;

/* The line the first signal writes to stderr (made before the handler is installed: the handler
 * itself may only call async-signal-safe functions such as write(2)), and its length in bytes. */
static char vcc_stop_ack[4500];
static size_t vcc_stop_ack_len = 0;

/* The handler of SIGINT/SIGTERM: note the signal (the step loop stops after the current step and
 * writes its checkpoint), say so on stderr at once, and restore the default action so that a second
 * signal ends the program at once. */
static void vcc_on_stop_signal(int sig) {
    vcc_stop_signal = sig;
    signal(sig, SIG_DFL);
    ssize_t w = write(2, vcc_stop_ack, vcc_stop_ack_len);
    (void)w;
}

/* Install vcc_on_stop_signal for SIGINT and SIGTERM, with its acknowledgement naming the checkpoint
 * folder dir. */
static void vcc_catch_stop_signals(const char *dir) {
    int n = snprintf(vcc_stop_ack, sizeof vcc_stop_ack,
                     "%s: stopping after this step to write its checkpoint to %s; a second signal stops at once "
                     "without it\n", vcc_program, dir);
    vcc_stop_ack_len = n < 0 ? 0 : (size_t)n < sizeof vcc_stop_ack ? (size_t)n : sizeof vcc_stop_ack - 1;
    signal(SIGINT, vcc_on_stop_signal);
    signal(SIGTERM, vcc_on_stop_signal);
}

/* The shortest "%.<p>g" text of v that reads back as v (0.05f -> "0.05"), into buf (32 bytes). */
static const char *vcc_float_text(float v, char *buf) {
    for (int p = 6; p <= 9; p++) {
        snprintf(buf, 32, "%.*g", p, (double)v);
        if (strtof(buf, NULL) == v) break;
    }
    return buf;
}

static void vcc_usage(FILE *f, const VccModel *m) {
    char shape[256], tshape[256], mom[32];
    int adamw = m->optimizer == VCC_OPTIMIZER_ADAMW;
    fprintf(f, "usage: %s --data X.npy%s%s [options]\n\nTrain the compiled model (%s, %s); prints "
               "\"step <k> loss <value>\"\nper step.\n\n  --data X.npy            clips, float32 %s\n",
            vcc_program, m->has_labels ? " --labels Y.npy" : "", m->target_rank ? " --targets T.npy" : "", m->loss,
            adamw ? "AdamW" : "SGD with momentum", vcc_clip_shape(m->input_rank, m->input_dims, shape, sizeof shape));
    if (m->has_labels && m->num_classes > 0)
        fprintf(f, "  --labels Y.npy          class indices, int64 (S,), values in [0, %lld)\n", (long long)m->num_classes);
    else if (m->has_labels)
        fprintf(f, "  --labels Y.npy          labels, int64 (S,)\n");
    if (m->target_rank)
        fprintf(f, "  --targets T.npy         targets, float32 %s\n",
                vcc_clip_shape(m->target_rank, m->target_dims, tshape, sizeof tshape));
    fprintf(f,
            "  --steps S               total steps of the run, counted from step 1, also when resumed (default 1)\n"
            "  --optimizer %-5s       the optimizer this program was compiled with (vcc --optimizer); another\n"
            "                          name is refused\n"
            "  --lr LR                 learning rate (default 0.01)\n",
            vcc_optimizer_names[m->optimizer]);
    if (adamw)
        fputs("  --beta1 B1              AdamW's first-moment decay, in [0, 1) (default 0.9)\n"
              "  --beta2 B2              AdamW's second-moment decay, in [0, 1) (default 0.999)\n"
              "  --eps E                 added to AdamW's denominator (default 1e-8)\n"
              "  --weight-decay WD       decoupled weight decay, p *= 1 - lr*WD each step (default 0.01)\n"
              "                          (torch.optim.AdamW: p -= lr/(1-B1^t) * m / (sqrt(v)/sqrt(1-B2^t) + E),\n"
              "                          t the step)\n", f);
    else
        fprintf(f,
                "  --momentum M            SGD momentum (default %s, as compiled)\n"
                "  --weight-decay WD       L2 weight decay added to the gradient (default 0)\n",
                vcc_float_text(m->default_momentum, mom));
    const char *nokeep = m->keeps_grads ? "" : "\n                          (a program compiled with vcc --keep-grads)";
    fprintf(f,
            "  --clip-grad-norm MAX    before each update, scale all gradients by MAX / (norm + 1e-6) when that is\n"
            "                          below 1, norm their total 2-norm (torch.nn.utils.clip_grad_norm_)%s\n"
            "  --lr-schedule constant|cosine\n"
            "  --warmup-steps W        the learning rate of step s (1-based): LR * s / W for s <= W; then LR\n"
            "                          (constant, the default) or LR * 0.5 * (1 + cos(pi * (s - W) / (S - W)))\n"
            "                          (cosine, S = --steps); W defaults to 0\n"
            "  --weights W             initial weights and BN statistics, safetensors (default %s beside\n"
            "                          this program); a checkpoint also restores the optimizer state\n"
            "  --out FILE              parameters and BN statistics after the last step\n"
            "  --save-grads FILE       the last step's parameter gradients%s\n"
            "  --checkpoint-dir DIR    write DIR/step<k>.safetensors: weights, optimizer state, step, data position\n"
            "  --checkpoint-every K    every K steps, and after the last step (default %d; 0: the last only)\n"
            "  --keep-last N           keep the N newest checkpoints of the run (default %d; 0: all)\n"
            "  --resume DIR|FILE       continue the run of the newest complete checkpoint in DIR (or of FILE)\n"
            "                          where it stopped: same step numbers, samples, schedule and losses\n"
            "  --seed S                the seed of the Dropout masks (default 0; a resumed run keeps its own)\n",
            nokeep, m->default_weights, nokeep, VCC_CKPT_EVERY_DEFAULT, VCC_KEEP_LAST_DEFAULT);
    vcc_threads_help(f, 23);
#ifdef VCC_RT_CUDA
    fputs("  --cudnn-search time|heuristic\n"
          "                          how each convolution's cuDNN algorithm is chosen at its first call: time\n"
          "                          (the default) runs the candidates on the step's own tensors and keeps the\n"
          "                          fastest that fits the planned workspace; heuristic takes cuDNN's ranking\n"
          "  --cuda-graph on|off     on: steps after the first replay one CUDA graph of the step's kernels and\n"
          "                          library calls, captured at the second step (default off); for SGD at a\n"
          "                          constant learning rate, without Dropout: the same numbers as off\n",
          f);
#endif
    fputs("  -h, --help              this text\n", f);
#if !defined(VCC_RT_CUDA) && defined(VCC_PRECISION_BF16)
    fputs("\nPrecision: bf16 (compiled in: vcc --precision bf16): activations and their gradients hold bfloat16\n"
          "values (rounded to nearest even as they are stored, kept in float32), convolutions and matrix products\n"
          "read bfloat16 copies of their float32 inputs; parameters, gradients, optimizer state and the loss are\n"
          "float32.\n",
          f);
#endif
#ifdef VCC_RT_CUDA
    fprintf(f, "\nPrecision: %s (compiled in: vcc --precision %s): cuDNN convolutions and cuBLAS products %s\n",
            VCC_PRECISION_NAME, VCC_PRECISION_NAME,
            VCC_PRECISION_TF32 ? "may use\nTF32 tensor cores (inputs rounded to a 10-bit mantissa), as PyTorch's cuDNN "
                                 "default; tensors are float32."
                               : "use\nplain FP32 math (no TF32).");
#endif
}

/* vcc_option_real: option opt's value text (a plain decimal, vcc_option_float's rules) as float32 into *f
 * and as the double nearest the decimal into *d (AdamW's and the schedule's arithmetic is in double, as
 * PyTorch's on Python numbers); dies naming the option. */
static void vcc_option_real(const char *opt, const char *text, float *f, double *d) {
    vcc_option_float(opt, text, f);
    *d = strtod(text, NULL);
}

/* Parse the command line into a (exits 0 after --help, 2 on a malformed command line, an option given
 * twice or an option of the other optimizer, 1 on bad values). */
static void vcc_train_args(int argc, char **argv, const VccModel *m, VccTrainArgs *a) {
    memset(a, 0, sizeof *a);
    int adamw = m->optimizer == VCC_OPTIMIZER_ADAMW;
    a->steps = 1;
    a->every = a->keep = a->seed = -1;
    a->lr = 0.01f;
    a->lr64 = 0.01;
    a->momentum = m->default_momentum;
    a->wd = adamw ? 0.01f : 0.0f;
    a->wd64 = adamw ? 0.01 : 0.0;
    a->beta1 = 0.9f, a->beta1_64 = 0.9;
    a->beta2 = 0.999f, a->beta2_64 = 0.999;
    a->eps = 1e-8f, a->eps64 = 1e-8;
    const char *steps = NULL, *every = NULL, *keep = NULL, *lr = NULL, *mom = NULL, *wd = NULL, *seed = NULL;
    const char *opt = NULL, *b1 = NULL, *b2 = NULL, *eps = NULL, *clip = NULL, *sched = NULL, *warm = NULL;
    const char *search = NULL, *graph = NULL;
    for (int i = 1; i < argc; i++) {
        const char *x = argv[i];
        if (!strcmp(x, "-h") || !strcmp(x, "--help")) {
            vcc_usage(stdout, m);
            exit(0);
        }
        if (vcc_opt_match(argc, argv, &i, "--data", &a->data) ||
            (m->has_labels && vcc_opt_match(argc, argv, &i, "--labels", &a->labels)) ||
            (m->target_rank && vcc_opt_match(argc, argv, &i, "--targets", &a->targets)) ||
            vcc_opt_match(argc, argv, &i, "--weights", &a->weights) || vcc_opt_match(argc, argv, &i, "--out", &a->out) ||
            vcc_opt_match(argc, argv, &i, "--save-grads", &a->grads) ||
            vcc_opt_match(argc, argv, &i, "--checkpoint-dir", &a->ckpt_dir) ||
            vcc_opt_match(argc, argv, &i, "--resume", &a->resume) || vcc_opt_match(argc, argv, &i, "--steps", &steps) ||
            vcc_opt_match(argc, argv, &i, "--checkpoint-every", &every) ||
            vcc_opt_match(argc, argv, &i, "--keep-last", &keep) || vcc_opt_match(argc, argv, &i, "--lr", &lr) ||
            vcc_opt_match(argc, argv, &i, "--momentum", &mom) || vcc_opt_match(argc, argv, &i, "--weight-decay", &wd) ||
            vcc_opt_match(argc, argv, &i, "--seed", &seed) || vcc_opt_match(argc, argv, &i, "--optimizer", &opt) ||
            vcc_opt_match(argc, argv, &i, "--beta1", &b1) || vcc_opt_match(argc, argv, &i, "--beta2", &b2) ||
            vcc_opt_match(argc, argv, &i, "--eps", &eps) || vcc_opt_match(argc, argv, &i, "--clip-grad-norm", &clip) ||
            vcc_opt_match(argc, argv, &i, "--lr-schedule", &sched) ||
            vcc_opt_match(argc, argv, &i, "--warmup-steps", &warm) ||
            vcc_threads_match(argc, argv, &i, &a->threads))
            continue;
#ifdef VCC_RT_CUDA
        if (vcc_opt_match(argc, argv, &i, "--cudnn-search", &search) ||
            vcc_opt_match(argc, argv, &i, "--cuda-graph", &graph))
            continue;
#endif
        if (!strcmp(x, "--labels") || !strcmp(x, "--targets")) /* the other loss's file */
            vcc_usage_error("unknown option '%s': this trainer minimizes %s and reads %s", x, m->loss,
                            m->has_labels ? "--labels Y.npy" : m->target_rank ? "--targets T.npy" : "neither");
        if (x[0] == '-') vcc_usage_error("unknown option '%s'", x);
        vcc_usage_error("unexpected argument '%s' (files are given with --data, --labels, ...)", x);
    }
    if (search && strcmp(search, "time") != 0 && strcmp(search, "heuristic") != 0)
        vcc_usage_error("--cudnn-search needs time or heuristic, got '%s'", search);
    a->conv_heuristic = search && !strcmp(search, "heuristic");
    if (graph && strcmp(graph, "on") != 0 && strcmp(graph, "off") != 0)
        vcc_usage_error("--cuda-graph needs on or off, got '%s'", graph);
    a->cuda_graph = graph && !strcmp(graph, "on");
    if (opt && strcmp(opt, "sgd") != 0 && strcmp(opt, "adamw") != 0)
        vcc_usage_error("--optimizer needs sgd or adamw, got '%s'", opt);
    if (opt && strcmp(opt, vcc_optimizer_names[m->optimizer]) != 0)
        vcc_usage_error("--optimizer %s: this program was compiled for %s; compile %s trainer with vcc MODEL.onnx "
                        "--optimizer %s", opt, vcc_optimizer_names[m->optimizer], vcc_optimizer_an(opt), opt);
    {
        const char *other = !adamw && b1 ? "--beta1" : !adamw && b2 ? "--beta2" : !adamw && eps ? "--eps"
                          : adamw && mom ? "--momentum" : NULL;
        if (other)
            vcc_usage_error("%s is an option of %s; this program was compiled for %s (vcc MODEL.onnx --optimizer %s "
                            "compiles a trainer that takes it)", other, adamw ? "SGD" : "AdamW",
                            adamw ? "AdamW" : "SGD", adamw ? "sgd" : "adamw");
    }
    /* without vcc --keep-grads each update runs as soon as its gradient is final, and the gradient's bytes
     * go to the tensors after it: no gradient outlives the step, and no update waits for the global norm */
    if ((a->grads || clip) && !m->keeps_grads)
        vcc_usage_error("%s needs %s; this program updates each parameter as soon as its gradient is final "
                        "(compile a trainer that keeps its gradients with vcc MODEL.onnx --keep-grads)",
                        a->grads ? "--save-grads" : "--clip-grad-norm",
                        a->grads ? "the gradients after the step" : "the norm of all gradients before the first update");
    if (!a->data || (m->has_labels && !a->labels) || (m->target_rank && !a->targets))
        vcc_usage_error("%s are required", m->has_labels && m->target_rank ? "--data, --labels and --targets"
                                           : m->has_labels                 ? "--data and --labels"
                                           : m->target_rank                ? "--data and --targets"
                                                                           : "--data");
    if (steps) vcc_option_count("--steps", steps, &a->steps);
    if (every) vcc_option_count("--checkpoint-every", every, &a->every);
    if (keep) vcc_option_count("--keep-last", keep, &a->keep);
    if (lr) vcc_option_real("--lr", lr, &a->lr, &a->lr64);
    if (mom) vcc_option_float("--momentum", mom, &a->momentum);
    if (wd) vcc_option_real("--weight-decay", wd, &a->wd, &a->wd64);
    if (b1) vcc_option_real("--beta1", b1, &a->beta1, &a->beta1_64);
    if (b2) vcc_option_real("--beta2", b2, &a->beta2, &a->beta2_64);
    if (eps) vcc_option_real("--eps", eps, &a->eps, &a->eps64);
    if (b1 && a->beta1_64 >= 1.0) vcc_dief("--beta1 needs a number in [0, 1), got '%s'", b1);
    if (b2 && a->beta2_64 >= 1.0) vcc_dief("--beta2 needs a number in [0, 1), got '%s'", b2);
    if (clip) {
        vcc_option_real("--clip-grad-norm", clip, &a->clip, &a->clip64);
        if (!(a->clip64 > 0.0)) vcc_dief("--clip-grad-norm needs a max norm > 0, got '%s'", clip);
    }
    if (sched && strcmp(sched, "constant") != 0 && strcmp(sched, "cosine") != 0)
        vcc_usage_error("--lr-schedule needs constant or cosine, got '%s'", sched);
    a->cosine = sched && !strcmp(sched, "cosine");
    if (warm) vcc_option_count("--warmup-steps", warm, &a->warmup);
    if (seed) vcc_option_count("--seed", seed, &a->seed);
    /* a CUDA graph replays its kernels with the arguments they were captured with: every one must be the
     * same at every step */
    if (a->cuda_graph && m->optimizer == VCC_OPTIMIZER_ADAMW)
        vcc_usage_error("--cuda-graph on: AdamW's bias correction changes every step; use --cuda-graph off");
    if (a->cuda_graph && (a->cosine || a->warmup > 0))
        vcc_usage_error("--cuda-graph on needs a constant learning rate (--lr-schedule constant, no --warmup-steps)");
    if (a->cuda_graph && m->draws_random)
        vcc_usage_error("--cuda-graph on: this model draws new Dropout masks every step; use --cuda-graph off");
#if defined(VCC_RT_CUDA) && !defined(CUDA_API_PER_THREAD_DEFAULT_STREAM)
    if (a->cuda_graph)
        vcc_usage_error("--cuda-graph on: built without nvcc --default-stream per-thread (vcc's printed command "
                        "has it), so there is no stream to capture");
#endif
    if (a->resume && a->weights)
        vcc_usage_error("--weights and --resume exclude each other (a resumed run takes its weights from the checkpoint)");
    a->weights_beside = !a->weights;
    if (!a->weights) a->weights = vcc_beside_program(argv[0], m->default_weights, a->weights_buf, sizeof a->weights_buf);
}

/* The learning-rate factor of step s (1-based) of a run of --steps S: s / W while s <= W (--warmup-steps
 * W), then 1 (constant) or 0.5 * (1 + cos(pi * (s - W) / (S - W))) (cosine). The step's rate is
 * --lr times it, as torch.optim.lr_scheduler.LambdaLR multiplies the base rate by its lambda. */
static double vcc_lr_factor(const VccTrainArgs *a, long s) {
    if (s <= a->warmup) return (double)s / (double)a->warmup;
    if (!a->cosine) return 1.0;
    return 0.5 * (1.0 + cos(3.14159265358979323846 * (double)(s - a->warmup) / (double)(a->steps - a->warmup)));
}

/* What a run is: the model, the data and the hyperparameters a resumed run must share with it. */
typedef struct {
    char model[17], data[17], run[17];
    char lr[32], momentum[32], wd[32], seed[32];
    char beta1[32], beta2[32], eps[32], clip[32], warmup[32];
    const char *optimizer, *schedule;
} VccRunId;

/* The metadata of a checkpoint after step `step` with the data position pos. */
static int vcc_ckpt_meta(const VccRunId *id, const VccTrainArgs *a, const VccModel *m, int64_t S, long step, int64_t pos,
                         VccStMeta *meta, char (*num)[32]) {
    int n = 0;
#define VCC_META(k, v) (meta[n].key = (k), meta[n].value = (v), n++)
    snprintf(num[0], 32, "%ld", step);
    snprintf(num[1], 32, "%lld", (long long)pos);
    snprintf(num[2], 32, "%lld", (long long)S);
    snprintf(num[3], 32, "%lld", (long long)m->input_dims[0]);
    snprintf(num[4], 32, "%ld", a->steps);
    VCC_META("vcc_checkpoint", "1");
    VCC_META("step", num[0]);
    VCC_META("data_position", num[1]);
    VCC_META("samples", num[2]);
    VCC_META("batch", num[3]);
    VCC_META("steps", num[4]);
    VCC_META("optimizer", id->optimizer);
    VCC_META("lr", id->lr);
    if (m->optimizer == VCC_OPTIMIZER_ADAMW) {
        VCC_META("beta1", id->beta1);
        VCC_META("beta2", id->beta2);
        VCC_META("eps", id->eps);
    } else {
        VCC_META("momentum", id->momentum);
    }
    VCC_META("weight_decay", id->wd);
    VCC_META("clip_grad_norm", id->clip);
    VCC_META("lr_schedule", id->schedule);
    VCC_META("warmup_steps", id->warmup);
    VCC_META("seed", id->seed);
    VCC_META("model", id->model);
    VCC_META("data", id->data);
    VCC_META("data_file", a->data);
    if (a->labels) VCC_META("labels_file", a->labels);
    if (a->targets) VCC_META("targets_file", a->targets);
    VCC_META("run", id->run);
    VCC_META("program", vcc_program);
#undef VCC_META
    return n;
}

/* A metadata value that must be present, or die naming the checkpoint. */
static const char *vcc_ckpt_need(const VccSafetensors *st, const char *path, const char *key) {
    const char *v = vcc_st_meta(st, key);
    if (!v)
        vcc_dief("%s: not a resumable vcc checkpoint (its metadata has no '%s'); to start a new run from its "
                 "weights use --weights %s",
                 path, key, path);
    return v;
}

/* Check that the checkpoint st at path continues this run (same optimizer, model, data, hyperparameters and
 * schedule, and seed when --seed is given; a step within --steps) and return its step, data position and seed; dies with
 * what differs. */
static void vcc_ckpt_accept(const VccSafetensors *st, const char *path, const VccRunId *id, const VccTrainArgs *a,
                            int64_t S, int64_t N, long *step, int64_t *pos, char *run, long *seed_out) {
    long k = -1, samples = -1, batch = -1, p = -1;
    if (strcmp(vcc_ckpt_need(st, path, "vcc_checkpoint"), "1") != 0)
        vcc_dief("%s: checkpoint format %s is not the format 1 this program reads", path, vcc_st_meta(st, "vcc_checkpoint"));
    const char *opt = vcc_st_meta(st, "optimizer");
    if (!opt) opt = "sgd"; /* checkpoints before AdamW */
    if (strcmp(opt, id->optimizer) != 0)
        vcc_dief("%s: a checkpoint of a trainer compiled with --optimizer %s; this program was compiled with "
                 "--optimizer %s: resume it with %s trainer (vcc MODEL.onnx --optimizer %s)",
                 path, opt, id->optimizer, vcc_optimizer_an(opt), opt);
    if (strcmp(vcc_ckpt_need(st, path, "model"), id->model) != 0)
        vcc_dief("%s: written by a different compiled model (model fingerprint %s, this program's %s)", path,
                 vcc_st_meta(st, "model"), id->model);
    if (vcc_parse_count(vcc_ckpt_need(st, path, "step"), &k) || vcc_parse_count(vcc_ckpt_need(st, path, "samples"), &samples) ||
        vcc_parse_count(vcc_ckpt_need(st, path, "batch"), &batch) ||
        vcc_parse_count(vcc_ckpt_need(st, path, "data_position"), &p) || batch != N || p >= samples)
        vcc_dief("%s: damaged run metadata (step, samples, batch or data_position)", path);
    if (strcmp(vcc_ckpt_need(st, path, "data"), id->data) != 0 || samples != S)
        vcc_dief("%s: the run trained on other data (%s%s%s, fingerprint %s; here %s%s%s, fingerprint %s): resume "
                 "with the run's data files, or start a new run from this checkpoint with --weights %s",
                 path, vcc_ckpt_need(st, path, "data_file"), a->labels ? " and " : "",
                 a->labels ? vcc_ckpt_need(st, path, "labels_file") : "", vcc_st_meta(st, "data"), a->data,
                 a->labels ? " and " : "", a->labels ? a->labels : "", id->data, path);
    /* the hyperparameters; keys newer than the checkpoint format have the values of the program before them */
    const char *keys[8] = {"lr", "momentum", "weight_decay", "beta1", "beta2", "eps", "clip_grad_norm", "warmup_steps"};
    const char *opts[8] = {"--lr", "--momentum", "--weight-decay", "--beta1", "--beta2", "--eps", "--clip-grad-norm",
                           "--warmup-steps"};
    const char *ours[8] = {id->lr, id->momentum, id->wd, id->beta1, id->beta2, id->eps, id->clip, id->warmup};
    const char *absent[8] = {NULL, NULL, NULL, NULL, NULL, NULL, "none", "0"};
    int adamw = !strcmp(id->optimizer, "adamw");
    for (int i = 0; i < 8; i++) {
        if ((i == 1 && adamw) || (i >= 3 && i <= 5 && !adamw)) continue;
        const char *theirs = absent[i] ? vcc_st_meta(st, keys[i]) : vcc_ckpt_need(st, path, keys[i]);
        if (!theirs) theirs = absent[i];
        if (strcmp(theirs, ours[i]) != 0)
            vcc_dief("%s: the run used %s %s, this command line gives %s %s: resume with the run's hyperparameters, "
                     "or start a new run from this checkpoint with --weights %s",
                     path, opts[i], theirs, opts[i], ours[i], path);
    }
    const char *sched = vcc_st_meta(st, "lr_schedule");
    if (!sched) sched = "constant";
    if (strcmp(sched, id->schedule) != 0)
        vcc_dief("%s: the run used --lr-schedule %s, this command line gives --lr-schedule %s: resume with the run's "
                 "schedule, or start a new run from this checkpoint with --weights %s", path, sched, id->schedule, path);
    long their_steps = -1;
    if (!strcmp(sched, "cosine") &&
        (vcc_parse_count(vcc_ckpt_need(st, path, "steps"), &their_steps) || their_steps != a->steps))
        vcc_dief("%s: the run's cosine schedule ends at --steps %s, this command line gives --steps %ld: resume with "
                 "the run's --steps", path, vcc_st_meta(st, "steps"), a->steps);
    long seed = 0;
    const char *seed_text = vcc_st_meta(st, "seed");
    if (seed_text && vcc_parse_count(seed_text, &seed)) vcc_dief("%s: damaged run metadata (seed '%s')", path, seed_text);
    if (a->seed >= 0 && a->seed != seed)
        vcc_dief("%s: the run used --seed %ld, this command line gives --seed %ld: resume with the run's seed (or "
                 "without --seed), or start a new run from this checkpoint with --weights %s",
                 path, seed, a->seed, path);
    if (k > a->steps)
        vcc_dief("%s: the run is at step %ld, past --steps %ld (--steps counts the run's steps from 1)", path, k, a->steps);
    snprintf(run, 17, "%.16s", vcc_ckpt_need(st, path, "run"));
    *seed_out = seed;
    *step = k;
    *pos = p;
}

/* Whether two paths name the same folder. */
static int vcc_same_dir(const char *x, const char *y) {
    struct stat sx, sy;
    return stat(x, &sx) == 0 && stat(y, &sy) == 0 && sx.st_dev == sy.st_dev && sx.st_ino == sy.st_ino;
}

/* Make sure the checkpoint folder may receive this run's checkpoints: created if missing, writable,
 * locked against other trainers, holding no other run's checkpoints (from_dir: the folder of the
 * checkpoint this run resumes from, whose checkpoints are this run's; NULL for a fresh run); leftover
 * temporary files of cut-short writes are removed. Dies with one line otherwise. */
static void vcc_ckpt_claim(const char *dir, const char *from_dir) {
    struct stat sb;
    char err[1024], path[4200];
    long *steps;
    int n;
    if (stat(dir, &sb) != 0) {
        if (mkdir(dir, 0777) != 0) vcc_dief("%s: cannot create the checkpoint folder: %s", dir, strerror(errno));
    } else if (!S_ISDIR(sb.st_mode)) {
        vcc_dief("%s: --checkpoint-dir is not a folder", dir);
    }
    vcc_check_writable("--checkpoint-dir", vcc_ckpt_path(dir, 0, path, sizeof path));
    /* one trainer per folder at a time: a POSIX record lock on DIR/.vcc.lock, held until exit (the
     * system drops it when the process ends, however it ends); never opened through a symlink, and a
     * FIFO there does not block the open */
    snprintf(path, sizeof path, "%s/.vcc.lock", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0666);
    struct flock lk;
    memset(&lk, 0, sizeof lk);
    lk.l_type = F_WRLCK;
    lk.l_whence = SEEK_SET;
    if (fd < 0) vcc_dief("%s: cannot create: %s", path, strerror(errno));
    if (fcntl(fd, F_SETLK, &lk) != 0) {
        if (fcntl(fd, F_GETLK, &lk) == 0 && lk.l_type != F_UNLCK)
            vcc_dief("%s: another trainer (process %ld) is writing checkpoints here; wait for it or choose another "
                     "--checkpoint-dir", dir, (long)lk.l_pid);
        vcc_dief("%s: cannot lock %s: %s", dir, path, strerror(errno));
    }
    if (vcc_ckpt_list(dir, 0, &steps, &n, err, sizeof err)) vcc_die(err);
    if (n && !from_dir)
        vcc_dief("%s: holds the checkpoints of another run (newest %s); to continue that run add --resume %s, to "
                 "start a new one choose another --checkpoint-dir",
                 dir, vcc_ckpt_path(dir, steps[0], path, sizeof path), dir);
    if (n && !vcc_same_dir(dir, from_dir))
        vcc_dief("%s: holds the checkpoints of another run (newest %s); give the resumed run an empty "
                 "--checkpoint-dir, or resume the run in it with --resume %s",
                 dir, vcc_ckpt_path(dir, steps[0], path, sizeof path), dir);
    free(steps);
    vcc_ckpt_remove_tmp(dir);
}

/* Load --data, --labels and --targets (those the model reads), checked against the compiled shapes and
 * class count and against the data's sample count; absent ones are left empty. */
static void vcc_load_data(const VccModel *m, const VccTrainArgs *a, VccNpy *x, VccNpy *y, VccNpy *t) {
    memset(y, 0, sizeof *y);
    memset(t, 0, sizeof *t);
    vcc_load_clips(a->data, m->input_rank, m->input_dims, x);
    if (m->has_labels) vcc_load_labels(a->labels, x->dims[0], m->num_classes, y);
    if (m->target_rank) vcc_load_samples(a->targets, "targets", m->target_rank, m->target_dims, x->dims[0], t);
}

#ifdef VCC_RT_CUDA
/* vcc_graph_step: one training step as a CUDA graph (the trainer's --cuda-graph on): the first call
 * captures m->step's kernels and cuDNN/cuBLAS calls on the per-thread default stream (nvcc
 * --default-stream per-thread; vcc_rt_init puts the library handles on it) into a graph and
 * instantiates it in *exec; every call launches *exec. The graph's addresses are the arena's, fixed for
 * the run, and the parser refuses the options under which a kernel argument changes from step to step
 * (AdamW's step count, a scheduled learning rate, Dropout's step number), so a launch computes what
 * m->step would. The first step of a run must have run m->step itself: it chooses the cuDNN algorithms
 * (cudnnFind*, which cannot be captured). A failed capture call exits with the call's error
 * (VCC_CUDA_CHECK). */
static void vcc_graph_step(VccRt *rt, const VccModel *m, unsigned char *arena, const VccOptim *o, cudaGraphExec_t *exec)
{
    if (!*exec) {
        cudaGraph_t g = NULL;
        VCC_CUDA_CHECK(cudaStreamBeginCapture(cudaStreamPerThread, cudaStreamCaptureModeRelaxed));
        m->step(rt, arena, o);
        VCC_CUDA_CHECK(cudaStreamEndCapture(cudaStreamPerThread, &g));
        VCC_CUDA_CHECK(cudaGraphInstantiateWithFlags(exec, g, 0));
        VCC_CUDA_CHECK(cudaGraphDestroy(g));
    }
    VCC_CUDA_CHECK(cudaGraphLaunch(*exec, cudaStreamPerThread));
}
#endif

static int vcc_trainer_main(int argc, char **argv, const VccModel *m) {
    VccTrainArgs a;
    char err[1024], path[4200];
    vcc_omp_passive(argv);
    vcc_set_program(argv[0]);
    vcc_watch_stdout();
    vcc_train_args(argc, argv, m, &a);

    /* where checkpoints go, and what --resume names */
    struct stat sb;
    int resume_is_dir = 0;
    if (a.resume) {
        if (stat(a.resume, &sb) != 0) vcc_dief("%s: cannot open: %s", a.resume, strerror(errno));
        resume_is_dir = S_ISDIR(sb.st_mode);
    }
    const char *ckpt_dir = a.ckpt_dir ? a.ckpt_dir : resume_is_dir ? a.resume : NULL;
    if (!ckpt_dir && (a.every >= 0 || a.keep >= 0))
        vcc_usage_error("%s needs --checkpoint-dir", a.every >= 0 ? "--checkpoint-every" : "--keep-last");
    long every = a.every >= 0 ? a.every : VCC_CKPT_EVERY_DEFAULT, keep = a.keep >= 0 ? a.keep : VCC_KEEP_LAST_DEFAULT;
    {
        VccFileArg in[5] = {{"--data", a.data}, {"--labels", a.labels}, {"--targets", a.targets},
                            {"--weights", a.resume ? NULL : a.weights}, {"--resume", a.resume && !resume_is_dir ? a.resume : NULL}};
        VccFileArg out[2] = {{"--out", a.out}, {"--save-grads", a.grads}};
        vcc_check_distinct(in, 5, out, 2);
    }
    if (a.out) vcc_check_writable("--out", a.out);
    if (a.grads) vcc_check_writable("--save-grads", a.grads);

    /* the checkpoint folder of a run resumed from a file is that file's folder; an existing checkpoint
     * folder is claimed (locked) now, before anything is loaded or said about resuming */
    char from_dir[4200];
    if (a.resume && resume_is_dir) {
        snprintf(from_dir, sizeof from_dir, "%s", a.resume);
    } else if (a.resume) {
        const char *slash = strrchr(a.resume, '/');
        if (!slash) snprintf(from_dir, sizeof from_dir, ".");
        else snprintf(from_dir, sizeof from_dir, "%.*s", (int)(slash == a.resume ? 1 : slash - a.resume), a.resume);
    }
    int claimed = 0;
    if (ckpt_dir && stat(ckpt_dir, &sb) == 0) {
        vcc_ckpt_claim(ckpt_dir, a.resume ? from_dir : NULL);
        claimed = 1;
    }

    VccRt rt;
    vcc_rt_init(&rt);
    vcc_threads_apply(&rt, a.threads);
#ifdef VCC_RT_CUDA
    rt.conv_search = a.conv_heuristic ? VCC_CONV_SEARCH_HEURISTIC : VCC_CONV_SEARCH_TIME;
#endif

    /* data (S, C, T, H, W) float32, labels (S,) int64, targets (S, ...) float32, checked against the
     * compiled shapes */
    VccNpy x, y, tg;
    vcc_load_data(m, &a, &x, &y, &tg);
    const int64_t *labels = (const int64_t *)y.data;
    int64_t N = m->input_dims[0], S = x.dims[0];

    /* what identifies this run */
    VccRunId id;
    uint64_t model_fp = vcc_state_fingerprint(m->state, m->nstate, m->arena_bytes);
    for (int d = 0; d < m->input_rank; d++) model_fp = vcc_fnv_u64(model_fp, (uint64_t)m->input_dims[d]);
    model_fp = vcc_fnv_u64(model_fp, (uint64_t)m->num_classes);
    snprintf(id.model, sizeof id.model, "%016llx", (unsigned long long)model_fp);
    uint64_t data_fp = vcc_fnv_u64(vcc_array_fingerprint(&x), m->has_labels ? vcc_array_fingerprint(&y) : 0);
    if (m->target_rank) data_fp = vcc_fnv_u64(data_fp, vcc_array_fingerprint(&tg));
    snprintf(id.data, sizeof id.data, "%016llx", (unsigned long long)data_fp);
    vcc_float_text(a.lr, id.lr);
    vcc_float_text(a.momentum, id.momentum);
    vcc_float_text(a.wd, id.wd);
    vcc_float_text(a.beta1, id.beta1);
    vcc_float_text(a.beta2, id.beta2);
    vcc_float_text(a.eps, id.eps);
    if (a.clip > 0) vcc_float_text(a.clip, id.clip);
    else snprintf(id.clip, sizeof id.clip, "none");
    snprintf(id.warmup, sizeof id.warmup, "%ld", a.warmup);
    id.optimizer = vcc_optimizer_names[m->optimizer];
    id.schedule = a.cosine ? "cosine" : "constant";

    /* one arena for everything; persistent state from the weights file or the checkpoint */
    unsigned char *arena = (unsigned char *)vcc_arena_alloc(&rt, m->arena_bytes);
    if (!arena) vcc_dief("cannot allocate the %zu-byte arena", m->arena_bytes);
    m->init(&rt, arena);
    long start = 0;
    int64_t pos = 0;
    if (a.resume) {
        VccSafetensors st;
        if (resume_is_dir) {
            long file_step;
            if (vcc_ckpt_newest(a.resume, &st, path, sizeof path, &file_step, err, sizeof err)) vcc_die(err);
        } else {
            snprintf(path, sizeof path, "%s", a.resume);
            if (vcc_st_load(path, &st, err, sizeof err)) vcc_die(err);
        }
        vcc_ckpt_accept(&st, path, &id, &a, S, N, &start, &pos, id.run, &a.seed);
        if (vcc_state_check(&st, path, m->state, m->nstate, 1, err, sizeof err)) vcc_die(err);
        vcc_state_upload(&rt, &st, m->state, m->nstate, arena);
        vcc_st_free(&st);
        fprintf(stderr, "%s: resuming from %s at step %ld of %ld%s\n", vcc_program, path, start, a.steps,
                start == a.steps ? " (nothing left to train)" : "");
    } else {
        vcc_load_state(&rt, m->state, m->nstate, arena, a.weights, a.weights_beside);
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        uint64_t r = vcc_fnv_u64(vcc_fnv_u64(vcc_fnv_u64(model_fp, (uint64_t)now.tv_sec), (uint64_t)now.tv_nsec), (uint64_t)getpid());
        snprintf(id.run, sizeof id.run, "%016llx", (unsigned long long)r);
    }
    if (a.seed < 0) a.seed = 0;
    rt.seed = (uint64_t)a.seed;
    snprintf(id.seed, sizeof id.seed, "%ld", a.seed);
    if (ckpt_dir) {
        if (!claimed) vcc_ckpt_claim(ckpt_dir, a.resume ? from_dir : NULL);
        vcc_catch_stop_signals(ckpt_dir);
    }
    if (a.grads && start == a.steps)
        vcc_dief("%s: --save-grads needs a step to run, and the run is already at step %ld = --steps", a.grads, start);

    size_t sample_bytes = (size_t)(x.nbytes / (size_t)S), target_bytes = m->target_rank ? (size_t)(tg.nbytes / (size_t)S) : 0;
    int64_t *batch_labels = (int64_t *)malloc(sizeof(int64_t) * (size_t)N);
    if (!batch_labels) vcc_die("out of memory");
    int progress = VCC_ISATTY(2);
    struct timespec t0, t1;
#ifdef VCC_RT_CUDA
    cudaGraphExec_t graph_exec = NULL; /* --cuda-graph on: the step's graph, captured at the run's second step */
#endif
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long k = start + 1; k <= a.steps; k++) {
        for (int64_t i = 0; i < N; i++) {
            int64_t s = (pos + i) % S;
            vcc_upload(&rt, arena + m->input_offset + (size_t)i * sample_bytes, (const unsigned char *)x.data + (size_t)s * sample_bytes,
                       sample_bytes);
            if (labels) batch_labels[i] = labels[s];
            if (target_bytes)
                vcc_upload(&rt, arena + m->target_offset + (size_t)i * target_bytes,
                           (const unsigned char *)tg.data + (size_t)s * target_bytes, target_bytes);
        }
        if (labels) vcc_upload(&rt, arena + m->label_offset, batch_labels, sizeof(int64_t) * (size_t)N);
        rt.step = (uint64_t)k;
        /* the step's hyperparameters: SGD's in float32 as given (times the schedule's factor), AdamW's in double */
        double f = vcc_lr_factor(&a, k);
        VccOptim o = {m->optimizer == VCC_OPTIMIZER_ADAMW ? a.lr64 * f : (double)(float)((double)a.lr * f), a.momentum,
                      m->optimizer == VCC_OPTIMIZER_ADAMW ? a.wd64 : (double)a.wd, a.beta1_64, a.beta2_64, a.eps64,
                      (int64_t)k, a.clip > 0 ? a.clip64 : 0.0};
#ifdef VCC_RT_CUDA
        if (a.cuda_graph && k > start + 1) vcc_graph_step(&rt, m, arena, &o, &graph_exec);
        else
#endif
            m->step(&rt, arena, &o);
        float loss = vcc_read_scalar(&rt, (const float *)(arena + m->loss_offset));
        pos = (pos + N) % S;
        int stop = vcc_stop_signal != 0;
        if (ckpt_dir && ((every > 0 && k % every == 0) || k == a.steps || stop)) {
            VccStMeta meta[32];
            char num[8][32];
            int nmeta = vcc_ckpt_meta(&id, &a, m, S, k, pos, meta, num);
            vcc_ckpt_path(ckpt_dir, k, path, sizeof path);
            if (vcc_save_state_meta(&rt, m->state, m->nstate, arena, path, VCC_CKPT_ROLES, meta, nmeta, err, sizeof err))
                vcc_die(err);
            vcc_ckpt_prune(ckpt_dir, k, keep);
        }
        if (progress) fputs("\r\033[K", stderr); /* clear the progress line before the step line */
        printf("step %ld loss %.7g\n", k, (double)loss);
        vcc_stdout_check();
        if (stop) {
            fprintf(stderr, "%s: stopped by signal %d after step %ld; %s holds its checkpoint: add --resume %s to continue\n",
                    vcc_program, (int)vcc_stop_signal, k, vcc_ckpt_path(ckpt_dir, k, path, sizeof path), ckpt_dir);
            exit(128 + (int)vcc_stop_signal);
        }
        if (progress) {
            clock_gettime(CLOCK_MONOTONIC, &t1);
            double el = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
            double per = el / (double)(k - start);
            fprintf(stderr, "\r%ld/%ld steps  %.1f samples/s  ETA %.0f s   ", k, a.steps, (double)N / per,
                    per * (double)(a.steps - k));
            if (k == a.steps) fputc('\n', stderr);
        }
    }
    vcc_rt_sync(&rt);
#ifdef VCC_RT_CUDA
    if (graph_exec) VCC_CUDA_CHECK(cudaGraphExecDestroy(graph_exec));
#endif
    if (a.grads && vcc_save_state(&rt, m->state, m->nstate, arena, a.grads, 1 << VCC_ROLE_GRAD, err, sizeof err)) vcc_die(err);
    if (a.out && vcc_save_state(&rt, m->state, m->nstate, arena, a.out, (1 << VCC_ROLE_PARAM) | (1 << VCC_ROLE_BUFFER) | (1 << VCC_ROLE_CONST), err,
                                sizeof err))
        vcc_die(err);
    free(batch_labels);
    vcc_npy_free(&x);
    vcc_npy_free(&y);
    vcc_npy_free(&tg);
    vcc_arena_free(&rt, arena);
    vcc_rt_destroy(&rt);
    return 0;
}

#endif /* VCC_MAIN_H */
