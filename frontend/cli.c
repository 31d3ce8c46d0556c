/*
 * cli.c — the vcc command line.
 *
 *   vcc [plan] MODEL.onnx|DUMP.vir [-o train.c | -o train.cu] [--shape NAME=2x3x8x112x112 ...]
 *       [--dump-ir PASS] [--plan-json FILE] [--plan-trace FILE] [--plan-svg FILE]
 *       [--loss ce|mse|graph] [--optimizer sgd|adamw] [--momentum M] [--forward-only | --eval]
 *       [--allow-inference-export] [--no-fuse-attention] [--keep-grads] [--workspace-limit BYTES]
 *       [--memory-limit SIZE] [--precision fp32|tf32] [--cpu-conv dnnl|im2col]
 *   vcc MODEL.onnx --fit SIZE [--vary NAME] [--shape ...] [compile options]
 *
 * Every option that takes a value accepts it as the next argument or after '=' (--dump-ir memplan,
 * --dump-ir=memplan). Reads the model (an ONNX file, or a .vir dump: then the passes after the one it
 * was dumped after run), runs the pass pipeline, and writes the program, its initial weights
 * (<output without extension>.safetensors) and the plan JSON, and prints the trainer's build command
 * as it runs from the current folder (paths shell-quoted; the binary of X.c is X, of X.cu X_cuda; the
 * file's first line holds the same command relative to its own folder); with none of -o, --plan-json,
 * --plan-trace, --plan-svg and --dump-ir it prints a one-line summary of the plan. `vcc plan` takes the
 * same options and prints the plan report (passes/planreport.h) instead of the summary. With
 * --memory-limit, passes/remat.c recomputes values until the arena fits (a line beside the summary, or
 * on stderr, says what it cost); --fit prints the largest batch that fits (frontend/fit.h). Every output is
 * written to a temporary file and renamed, so a failure leaves no half-written output. --precision tf32 lets a
 * CUDA trainer's cuDNN convolutions and cuBLAS products use TF32 tensor cores (runtime/cuda/base.cuh); it is
 * refused with a .c output (the C trainer computes in plain float32). --precision bf16 (passes/precision.c)
 * plans bfloat16 activations: a .cu trainer stores them in 2 bytes (__nv_bfloat16, the CUDA runtime's bf16
 * kernel overloads), a .c trainer keeps them in float32 storage (VccCtx.bf16_store_bytes 4). Exit status 0 on success, 1 on any error (the message names the file, node and op), 2 on a usage error.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "../codegen/codegen.h"
#include "../passes/passes.h"
#include "../passes/planreport.h"
#include "dsa_cmd.h"
#include "fit.h"
#include "frontend.h"
#include "outfile.h"
#include "../runtime/vcc_io.h"
#include "plan_cmd.h"

#define VCC_VERSION "0.1.0"

static void usage(FILE *f) {
    fputs("usage: vcc MODEL.onnx [-o OUT.c|OUT.cu] [options]\n"
          "       vcc plan MODEL.onnx [options]\n"
          "       vcc dsa FILE.csv [--capacity N] [-o OUT.csv]   plan a MiniMalloc CSV (vcc dsa --help)\n"
          "\n"
          "Compile an ONNX model into a training program (forward, loss, backward, SGD with momentum or AdamW)\n"
          "whose every tensor lives in one statically planned arena.\n"
          "\n"
          "  -o FILE            write a C trainer (FILE.c, OpenBLAS) or a CUDA trainer (FILE.cu, cuDNN + cuBLAS),\n"
          "                     plus FILE's initial weights as <FILE without extension>.safetensors, and print\n"
          "                     the command that builds it, run from here: X.c builds the binary X, X.cu builds\n"
          "                     X_cuda (the C and CUDA trainers of a model can share a folder)\n"
          "  --shape NAME=DIMS  bind a symbolic input shape (NAME=2x3x8x112x112) or one symbolic dim (batch=2)\n"
          "  --dump-ir PASS     print the IR after PASS: onnx canonical shape fuse precision loss autodiff\n"
          "                     optimizer storage schedule liveness inplace memplan remat (memplan shows live\n"
          "                     intervals, offsets, arena size; fuse shows each FusedAttention with the nodes it\n"
          "                     replaced; remat the plan after --memory-limit's recomputed \"<node>.recompute\"\n"
          "                     clones)\n"
          "  --plan-json FILE   write the memory plan as JSON\n"
          "  --plan-trace FILE  write the memory plan as Chrome trace-event JSON (open it in ui.perfetto.dev):\n"
          "                     1 us = 1 schedule step, one track per arena offset, each tensor an event\n"
          "  --plan-svg FILE    draw the memory plan as SVG: schedule steps across, arena offsets up, tensors\n"
          "                     coloured by category\n"
          "  --loss ce|mse|graph  what the trainer minimizes: ce, softmax cross-entropy of the output (logits\n"
          "                     (N, K)) with int64 labels, ./train --labels Y.npy (the default); mse, the mean\n"
          "                     squared error of the output against float targets of its shape, ./train\n"
          "                     --targets T.npy; graph, the model's output itself, a float scalar the graph\n"
          "                     computes (a second float input is read from --targets, an int64 one from --labels)\n"
          "  --optimizer sgd|adamw  the trainer's update: sgd, torch.optim.SGD with momentum (the default);\n"
          "                     adamw, torch.optim.AdamW (its exp_avg and exp_avg_sq live in the arena). The\n"
          "                     trainer takes the hyperparameters (--lr, --weight-decay, --momentum or --beta1\n"
          "                     --beta2 --eps), --lr-schedule and (with --keep-grads) --clip-grad-norm at run time\n"
          "  --momentum M       default SGD momentum baked into the trainer (default 0.9; sgd only)\n"
          "  --keep-grads       keep every parameter gradient in the arena until all updates ran, for the\n"
          "                     trainer's --save-grads and --clip-grad-norm (which need all gradients after\n"
          "                     backward). By default each parameter is updated as soon as its gradient is\n"
          "                     final and the gradient's bytes are reused: a smaller arena, the same numbers\n"
          "  --workspace-limit BYTES  the most bytes one convolution's workspace may take (default 16MiB, 32MiB\n"
          "                     with --cpu-conv dnnl; a\n"
          "                     number, optionally with a suffix K, M, G or KiB, MiB, GiB: powers of 1024). The\n"
          "                     C trainer unfolds a conv's input (im2col) in chunks of output positions that fit\n"
          "                     and multiplies chunk by chunk; the CUDA trainer chunks its im2col path alike and\n"
          "                     hands cuDNN the same bytes as its workspace limit. A conv whose single output\n"
          "                     position needs more gets one position's columns, and vcc says so. Without\n"
          "                     this option vcc starts from that default and halves the chunks of the workspaces that\n"
          "                     set the peak (down to 64 output positions), undoing the last halvings where\n"
          "                     together they lower it by less than 0.5%; with it, every conv keeps what the\n"
          "                     limit gives\n"
          "  --cpu-conv im2col|dnnl  how the C trainer computes convolutions: im2col (the default), im2col +\n"
          "                     OpenBLAS for every pass; dnnl, oneDNN's convolutions (link -ldnnl; its blocked\n"
          "                     copies live in the conv's workspace, sized for them where they fit\n"
          "                     --workspace-limit, else, or where the CPU needs more, im2col runs; weight\n"
          "                     gradients only where oneDNN has a direct kernel for them, as on AVX-512)\n"
          "  --memory-limit SIZE  keep the arena within SIZE (bytes, or with KiB, MiB, GiB: 24GiB) by recomputing\n"
          "                     saved values in backward: cheap ones first (normalization outputs from their\n"
          "                     saved statistics, elementwise ops), then convolutions, the most bytes per extra\n"
          "                     FLOP first; the same numbers as without. Where that is not enough and --workspace-limit\n"
          "                     is not given, conv workspaces at the peak are halved too (smaller im2col chunks,\n"
          "                     or cuDNN algorithms within less workspace: those sums then round differently).\n"
          "                     The summary gives the arena before and after and the extra FLOPs; a limit\n"
          "                     that cannot be met is an error naming the smallest arena reachable with the\n"
          "                     same numbers and, where lower, with workspaces halved\n"
          "  --recompute-flops PCT  with --memory-limit or --fit: recompute no more than PCT percent of the\n"
          "                     step's FLOPs (default: no bound)\n"
          "  --precision fp32|tf32|bf16  the trainer's arithmetic: fp32, plain FP32 math (the default; the\n"
          "                     CUDA trainer's numbers are the C trainer's up to summation order); tf32 (CUDA\n"
          "                     trainers), TF32 tensor cores allowed in cuDNN convolutions and cuBLAS products, as\n"
          "                     PyTorch's default for cuDNN convolutions (torch.backends.cudnn.allow_tf32), tensors\n"
          "                     float32; bf16, mixed precision as torch.autocast(dtype=torch.bfloat16): activations\n"
          "                     and gradients hold bfloat16 values (2 bytes each in the plan), convolutions and\n"
          "                     matrix products read bfloat16 copies of their float32 inputs; parameters, their\n"
          "                     gradients, optimizer state, statistics and the loss stay float32. bf16 plans come\n"
          "                     from vcc plan, --plan-json, --fit and --dump-ir; a C trainer (-o X.c) computes the\n"
          "                     bf16 numbers in float32 storage, a CUDA trainer (-o X.cu) stores them in 2 bytes.\n"
          "                     Both CUDA paths have run on an H200 (README.md, bench/README.md)\n"
          "  --fit SIZE [--vary NAME]  print the largest value of the symbolic dim NAME (default batch; the\n"
          "                     model exported with it symbolic) whose arena fits in SIZE, without and with\n"
          "                     recomputation (--memory-limit), and the arena of each; nothing is written\n"
          "  --forward-only     compile the forward graph alone: a program that evaluates the model once,\n"
          "                     ./fwd IN.npy... -o OUT.npy... (used by the ONNX conformance tests)\n"
          "  --eval             compile the evaluation program: BatchNormalization with its running statistics,\n"
          "                     Dropout off; ./eval --data X.npy {--labels Y.npy | --logits F.npy | both}\n"
          "                     [--weights trained.safetensors] prints top-1/top-5 accuracy and mean loss, or\n"
          "                     writes the logits\n"
          "  --no-fuse-attention  keep scaled dot-product attention as the graph writes it (MatMul, Softmax,\n"
          "                     MatMul: the L x L scores and probabilities saved for backward) instead of one\n"
          "                     FusedAttention that saves the output and a log-sum-exp per row (always so in a\n"
          "                     bf16 CUDA trainer: the fused kernel is float32 only)\n"
          "  --allow-inference-export\n"
          "                     train an inference-form export as it is (BatchNormalization folded into the\n"
          "                     convolutions, exporter-named parameters) instead of refusing it\n"
          "  --ops              list the ONNX ops vcc compiles (ai.onnx domain) with their op family\n"
          "  --version, --help\n"
          "\n"
          "vcc plan prints the memory plan: arena, lower bound, no-reuse sum, bytes by category at the peak\n"
          "step, the tensors live there (largest first, with op and layer) and what in-place sharing, views and\n"
          "fused attention removed. It takes every option above.\n"
          "\n"
          "MODEL may be a .vir dump (vcc MODEL.onnx --dump-ir PASS > m.vir): the passes after PASS run on it,\n"
          "so an edited schedule or plan can be re-planned or checked. A .vir file holds its constants but no\n"
          "weights: run the program with --weights.\n",
          f);
}

/* NAME=D1xD2x...: every Di a positive decimal integer below 2^31. Returns 0, or 1 (nothing allocated). */
static int parse_shape(const char *arg, VccShapeBinding *b) {
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || !eq[1]) return 1;
    b->rank = 0;
    for (const char *p = eq + 1;;) {
        if (*p < '0' || *p > '9' || b->rank == VCC_MAX_RANK) return 1;
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (v <= 0 || v >= (1LL << 31) || errno) return 1;
        b->dims[b->rank++] = v;
        if (*end == 0) break;
        if (*end != 'x') return 1;
        p = end + 1;
    }
    b->opt = NULL;
    b->name = vcc_malloc((size_t)(eq - arg) + 1);
    memcpy(b->name, arg, (size_t)(eq - arg));
    b->name[eq - arg] = 0;
    return 0;
}

/* A byte count: decimal digits, optionally followed by K, M, G (or KiB, MiB, GiB; powers of 1024), from
 * min to 2^47 bytes (VCC_MAX_TENSOR_BYTES). Returns 0 with *bytes set, or 1. */
static int parse_bytes(const char *arg, int64_t min, int64_t *bytes) {
    static const char *const suffix[3][2] = {{"K", "KiB"}, {"M", "MiB"}, {"G", "GiB"}};
    if (*arg < '0' || *arg > '9') return 1;
    char *end;
    errno = 0;
    long long v = strtoll(arg, &end, 10);
    if (errno || v < 0) return 1;
    int shift = 0;
    for (int i = 0; i < 3 && *end; i++)
        if (!strcmp(end, suffix[i][0]) || !strcmp(end, suffix[i][1])) shift = 10 * (i + 1);
    if (*end && !shift) return 1;
    if (v > (VCC_MAX_TENSOR_BYTES >> shift)) return 1;
    *bytes = (int64_t)v << shift;
    return *bytes < min;
}

/* The value of option name at argv[*i]: "--name VALUE" (advancing *i) or "--name=VALUE". NULL when
 * argv[*i] is another option; *missing is set when it is this option without a value. */
static const char *opt_value(int argc, char **argv, int *i, const char *name, bool *missing) {
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0) return NULL;
    if (a[n] == '=') return a + n + 1;
    if (a[n] != 0) return NULL;
    if (*i + 1 >= argc) {
        *missing = true;
        return NULL;
    }
    return argv[++*i];
}

/* Store an option's value, refusing a repeated option (the earlier value would be dropped without a
 * word) and an empty one. Returns 0, or 1 with the usage error printed. */
static int set_once(const char **slot, const char *v, const char *opt) {
    if (*slot) {
        fprintf(stderr, "vcc: %s is given twice ('%s', '%s')\n", opt, *slot, v);
        return 1;
    }
    if (!*v) {
        fprintf(stderr, "vcc: %s needs a non-empty value\n", opt);
        return 1;
    }
    *slot = v;
    return 0;
}

/* Whether path names an existing regular file. */
static bool is_regular(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* An output must not be the model or another output. The program and its weights must not be an
 * existing file that is not a regular one (a device, a FIFO, a folder: the rename of the finished output
 * would replace it); the plan JSON, trace and SVG may go to a device or FIFO (--plan-json /dev/stdout:
 * written directly), not to a folder. out writes out and <out without extension>.safetensors. Prints the
 * usage error; returns 1 when they clash. */
static int paths_clash(const char *model, const char *out, const char *plan_json, const char *trace, const char *svg) {
    char *weights = out && strrchr(out, '.') ? vcc_strfmt("%.*s.safetensors", (int)(strrchr(out, '.') - out), out)
                                             : NULL;
    const char *paths[6] = {model, out, weights, plan_json, trace, svg};
    const char *names[6] = {"the model", "-o", "the weights beside -o", "--plan-json", "--plan-trace", "--plan-svg"};
    int rc = 0;
    for (int i = 1; i < 6 && !rc; i++) {
        struct stat sb;
        if (!paths[i]) continue;
        if (stat(paths[i], &sb) == 0 && !S_ISREG(sb.st_mode) && (i < 3 || S_ISDIR(sb.st_mode))) {
            fprintf(stderr, "vcc: %s '%s' exists and is not a regular file; it would be replaced\n", names[i],
                    paths[i]);
            rc = 1;
        }
        for (int j = 0; j < i && !rc; j++)
            if (paths[j] && vcc_io_same_file(paths[i], paths[j]) &&
                !(i >= 3 && access(paths[i], F_OK) == 0 && !is_regular(paths[i]))) { /* /dev/stdout twice is fine */
                fprintf(stderr, "vcc: %s '%s' is also %s\n", names[i], paths[i], names[j]);
                rc = 1;
            }
    }
    free(weights);
    return rc;
}

/* One plan file's contents: the JSON, the trace or the SVG of g (ctx: the compilation's file and options). */
typedef struct {
    const VccGraph *g;
    const VccCtx *ctx;
} PlanFile;

static void write_json(FILE *f, const void *arg) {
    const PlanFile *p = arg;
    vcc_plan_write_json(f, p->g, p->ctx->precision);
}

static void write_trace(FILE *f, const void *arg) {
    const PlanFile *p = arg;
    vcc_plan_write_trace(f, p->g, p->ctx->file);
}

static void write_svg(FILE *f, const void *arg) {
    const PlanFile *p = arg;
    vcc_plan_write_svg(f, p->g, p->ctx->file);
}

/* The pass a .vir dump was written after, from its first line "# vcc IR after PASS" (what --dump-ir
 * writes); -1 when the line is not there. */
static int vir_stage(const char *path) {
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) return -2; /* the reader says why */
    FILE *f = fopen(path, "r");
    if (!f) return -2;
    char line[128] = {0};
    int stage = -1;
    if (fgets(line, sizeof line, f) && !strncmp(line, "# vcc IR after ", 15)) {
        line[strcspn(line, "\r\n")] = 0;
        stage = vcc_pass_index(line + 15);
    }
    fclose(f);
    return stage;
}

/* The largest conv-family workspace of g (bytes; 0 when there is none) into *largest; where one exceeds
 * limit (a single output position's im2col columns are larger: vcc_conv_ws_bytes), a note on stderr
 * names how many and the largest. */
static void conv_workspaces(const VccGraph *g, int64_t limit, int64_t *largest) {
    int over = 0, worst = -1;
    *largest = 0;
    for (int k = 0; k < g->nnodes; k++) {
        const VccNode *n = &g->nodes[k];
        if (strcmp(vcc_op_family(n->op), "conv") || n->nout < 1 || n->out[n->nout - 1] < 0) continue;
        int64_t b = vcc_tensor_bytes(&g->tensors[n->out[n->nout - 1]]);
        if (b > *largest) *largest = b, worst = k;
        over += b > limit;
    }
    if (over)
        fprintf(stderr, "vcc: note: %d conv workspace%s above --workspace-limit %lld: one output position's im2col "
                        "columns need up to %lld bytes (node '%s')\n", over, over > 1 ? "s are" : " is",
                (long long)limit, (long long)*largest, g->nodes[worst].name);
}

/* Rename the finished temporary file *tmp (when not NULL) over path and free it (*tmp = NULL). Returns 0,
 * or 1 with the error on stderr; with weights (the weights file already renamed beside this program),
 * also that the folder now holds new weights beside the old program. */
static int rename_output(char **tmp, const char *path, const char *weights) {
    if (!*tmp) return 0;
    char err[1024];
    int bad = vcc_io_rename(*tmp, path, err, sizeof err);
    free(*tmp);
    *tmp = NULL;
    if (bad) fprintf(stderr, "vcc: %s\n", err);
    if (bad && weights)
        fprintf(stderr, "vcc: %s already holds the new weights; compile again before running the program\n", weights);
    return bad;
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "dsa")) return vcc_dsa_main(argc - 1, argv + 1);
    const char *model = NULL, *out = NULL, *plan_json = NULL, *plan_trace = NULL, *plan_svg = NULL, *dump = NULL;
    bool plan_cmd = vcc_plan_subcommand(argc, argv); /* vcc plan MODEL [options]: the options that follow */
    if (plan_cmd) argv[1] = argv[0], argv++, argc--;
    VccShapeBinding shapes[32];
    int nshapes = 0;
    float momentum = 0.9f;
    bool forward_only = false, eval = false, allow_inference = false, no_fuse = false, keep_grads = false,
         cpu_conv_dnnl = false;
    const char *momentum_text = NULL, *loss_text = NULL, *optimizer_text = NULL, *ws_text = NULL,
               *limit_text = NULL, *fit_text = NULL, *vary = NULL, *precision_text = NULL,
               *cpu_conv_text = NULL, *recompute_text = NULL;
    double recompute_flops = -1;
    int64_t ws_limit = VCC_WORKSPACE_LIMIT_DEFAULT, memory_limit = 0, fit_limit = 0;
    VccOptimKind optimizer = VCC_OPTIM_SGD;
    VccLossKind loss = VCC_LOSS_CE;
    VccPrecision precision = VCC_PRECISION_FP32;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        bool missing = false;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--version")) {
            printf("vcc %s\n", VCC_VERSION);
            return 0;
        } else if (!strcmp(a, "--ops")) {
            /* the ONNX ops (ai.onnx domain) vcc compiles, one per line with its family */
            for (int op = 0; op < VCC_OP_COUNT; op++)
                if (vcc_op_is_onnx((VccOp)op)) printf("%s %s\n", vcc_op_name((VccOp)op), vcc_op_family((VccOp)op));
            for (int c = 0; vcc_ctrl_op_name(c); c++) printf("%s ctrlflow\n", vcc_ctrl_op_name(c));
            return 0;
        } else if ((v = opt_value(argc, argv, &i, "-o", &missing))) {
            if (set_once(&out, v, "-o")) return 2;
        } else if ((v = opt_value(argc, argv, &i, "--plan-json", &missing))) {
            if (set_once(&plan_json, v, "--plan-json")) return 2;
        } else if ((v = opt_value(argc, argv, &i, "--plan-trace", &missing))) {
            if (set_once(&plan_trace, v, "--plan-trace")) return 2;
        } else if ((v = opt_value(argc, argv, &i, "--plan-svg", &missing))) {
            if (set_once(&plan_svg, v, "--plan-svg")) return 2;
        } else if ((v = opt_value(argc, argv, &i, "--dump-ir", &missing))) {
            if (set_once(&dump, v, "--dump-ir")) return 2;
        } else if (!strcmp(a, "--forward-only")) {
            forward_only = true;
        } else if (!strcmp(a, "--eval")) {
            eval = true;
        } else if (!strcmp(a, "--allow-inference-export")) {
            allow_inference = true;
        } else if (!strcmp(a, "--no-fuse-attention")) {
            no_fuse = true;
        } else if (!strcmp(a, "--keep-grads")) {
            keep_grads = true;
        } else if ((v = opt_value(argc, argv, &i, "--loss", &missing))) {
            if (set_once(&loss_text, v, "--loss")) return 2;
            if (!strcmp(v, "ce")) loss = VCC_LOSS_CE;
            else if (!strcmp(v, "mse")) loss = VCC_LOSS_MSE;
            else if (!strcmp(v, "graph")) loss = VCC_LOSS_GRAPH;
            else {
                fprintf(stderr, "vcc: --loss needs ce, mse or graph, got '%s'\n", v);
                return 2;
            }
        } else if ((v = opt_value(argc, argv, &i, "--optimizer", &missing))) {
            if (set_once(&optimizer_text, v, "--optimizer")) return 2;
            if (!strcmp(v, "sgd")) optimizer = VCC_OPTIM_SGD;
            else if (!strcmp(v, "adamw")) optimizer = VCC_OPTIM_ADAMW;
            else {
                fprintf(stderr, "vcc: --optimizer needs sgd or adamw, got '%s'\n", v);
                return 2;
            }
        } else if ((v = opt_value(argc, argv, &i, "--precision", &missing))) {
            if (set_once(&precision_text, v, "--precision")) return 2;
            if (!strcmp(v, "fp32")) precision = VCC_PRECISION_FP32;
            else if (!strcmp(v, "tf32")) precision = VCC_PRECISION_TF32;
            else if (!strcmp(v, "bf16")) precision = VCC_PRECISION_BF16;
            else {
                fprintf(stderr, "vcc: --precision needs fp32, tf32 or bf16, got '%s'\n", v);
                return 2;
            }
        } else if ((v = opt_value(argc, argv, &i, "--momentum", &missing))) {
            if (set_once(&momentum_text, v, "--momentum")) return 2;
            if (vcc_io_parse_float(v, &momentum)) { /* the trainer's --momentum rules */
                fprintf(stderr, "vcc: --momentum needs a plain decimal >= 0 within float32 (0.9, 1e-3; no sign, "
                                "spaces, hex, inf or nan), got '%s'\n", v);
                return 2;
            }
        } else if ((v = opt_value(argc, argv, &i, "--cpu-conv", &missing))) {
            if (set_once(&cpu_conv_text, v, "--cpu-conv")) return 2;
            if (!strcmp(v, "dnnl")) cpu_conv_dnnl = true;
            else if (!strcmp(v, "im2col")) cpu_conv_dnnl = false;
            else {
                fprintf(stderr, "vcc: --cpu-conv needs dnnl or im2col, got '%s'\n", v);
                return 2;
            }
        } else if ((v = opt_value(argc, argv, &i, "--workspace-limit", &missing))) {
            if (set_once(&ws_text, v, "--workspace-limit")) return 2;
            if (parse_bytes(v, 4, &ws_limit)) {
                fprintf(stderr, "vcc: --workspace-limit needs a byte count from 4 to 2^47, optionally with a suffix "
                                "K, M, G (KiB, MiB, GiB), like 16MiB or 4096; got '%s'\n", v);
                return 2;
            }
        } else if ((v = opt_value(argc, argv, &i, "--memory-limit", &missing))) {
            if (set_once(&limit_text, v, "--memory-limit")) return 2;
            if (parse_bytes(v, 1, &memory_limit)) {
                fprintf(stderr, "vcc: --memory-limit needs a byte count up to 2^47, optionally with a suffix K, M, G (KiB, MiB, GiB), like 24GiB; got '%s'\n", v);
                return 2;
            }
        } else if ((v = opt_value(argc, argv, &i, "--recompute-flops", &missing))) {
            if (set_once(&recompute_text, v, "--recompute-flops")) return 2;
            char *end = NULL;
            errno = 0;
            recompute_flops = strtod(v, &end);
            if (end && *end == '%') end++;
            if (end == v || !end || *end || errno || !(recompute_flops >= 0 && recompute_flops <= 1000)) {
                fprintf(stderr, "vcc: --recompute-flops needs a percentage of the step's FLOPs from 0 to 1000, like 5 "
                                "or 5%%; got '%s'\n", v);
                return 2;
            }
        } else if ((v = opt_value(argc, argv, &i, "--fit", &missing))) {
            if (set_once(&fit_text, v, "--fit")) return 2;
            if (parse_bytes(v, 1, &fit_limit)) {
                fprintf(stderr, "vcc: --fit needs a byte count up to 2^47, optionally with a suffix K, M, G (KiB, MiB, GiB), like 24GiB; got '%s'\n", v);
                return 2;
            }
        } else if ((v = opt_value(argc, argv, &i, "--vary", &missing))) {
            if (set_once(&vary, v, "--vary")) return 2;
        } else if ((v = opt_value(argc, argv, &i, "--shape", &missing))) {
            int bad = nshapes == 32 || parse_shape(v, &shapes[nshapes]);
            for (int j = 0; !bad && j < nshapes; j++)
                if (!strcmp(shapes[j].name, shapes[nshapes].name)) {
                    fprintf(stderr, "vcc: --shape %s is given twice\n", shapes[j].name);
                    free(shapes[nshapes].name);
                    bad = 2;
                }
            if (bad) {
                if (bad == 1)
                    fprintf(stderr, "vcc: --shape needs NAME=DIMS with dims from 1 to 2^31-1, like "
                                    "input=2x3x8x112x112 or batch=2; got '%s'\n", v);
                for (int j = 0; j < nshapes; j++) free(shapes[j].name);
                return 2;
            }
            nshapes++;
        } else if (missing) {
            fprintf(stderr, "vcc: option %s needs a value\n", a);
            return 2;
        } else if (a[0] == '-') {
            fprintf(stderr, "vcc: unknown option '%s' (see vcc --help)\n", a);
            return 2;
        } else if (!model) {
            model = a;
        } else {
            fprintf(stderr, "vcc: more than one model given ('%s', '%s')\n", model, a);
            return 2;
        }
    }
    if (!model) {
        fputs(plan_cmd ? "vcc: no model given: vcc plan MODEL.onnx [options] (see vcc --help)\n"
                       : "vcc: no model given: vcc MODEL.onnx [-o OUT.c|OUT.cu] [options] (see vcc --help)\n",
              stderr);
        return 2;
    }
    if (paths_clash(model, out, plan_json, plan_trace, plan_svg)) return 2;
    if (forward_only && eval) {
        fprintf(stderr, "vcc: --forward-only and --eval are two different programs; give one\n");
        return 2;
    }
    if (loss_text && (forward_only || eval)) {
        fprintf(stderr, "vcc: --loss chooses a trainer's loss; %s programs have none\n",
                forward_only ? "--forward-only" : "--eval");
        return 2;
    }
    if (optimizer_text && (forward_only || eval)) {
        fprintf(stderr, "vcc: --optimizer chooses a trainer's update; %s programs have none\n",
                forward_only ? "--forward-only" : "--eval");
        return 2;
    }
    if (momentum_text && optimizer == VCC_OPTIM_ADAMW) {
        fprintf(stderr, "vcc: --momentum is the SGD momentum; an --optimizer adamw trainer takes --beta1 and "
                        "--beta2 at run time\n");
        return 2;
    }
    if (limit_text && (forward_only || eval)) {
        fprintf(stderr, "vcc: --memory-limit recomputes the values a trainer's backward reads; %s programs have no "
                        "backward\n", forward_only ? "--forward-only" : "--eval");
        return 2;
    }
    if (recompute_text && !limit_text && !fit_text) {
        fprintf(stderr, "vcc: --recompute-flops bounds the recomputation of --memory-limit or --fit; give one of "
                        "them\n");
        return 2;
    }
    if (vary && !fit_text) {
        fprintf(stderr, "vcc: --vary names the dim --fit searches over; give --fit SIZE\n");
        return 2;
    }
    if (fit_text && (out || plan_json || plan_trace || plan_svg || dump || plan_cmd || limit_text || forward_only ||
                     eval || vcc_has_suffix(model, ".vir"))) {
        fprintf(stderr, "vcc: --fit searches over compilations of an ONNX trainer and writes nothing: give it without "
                        "-o, --plan-*, --dump-ir, plan, --memory-limit, --forward-only and --eval\n");
        return 2;
    }
    if (!vary) vary = "batch";
    for (int j = 0; fit_text && j < nshapes; j++)
        if (!strcmp(shapes[j].name, vary)) {
            fprintf(stderr, "vcc: --fit varies %s; do not bind it with --shape\n", vary);
            for (int k = 0; k < nshapes; k++) free(shapes[k].name);
            return 2;
        }
    if (dump && vcc_pass_index(dump) < 0) {
        fprintf(stderr, "vcc: unknown pass '%s' for --dump-ir (one of:", dump);
        for (int k = 0; vcc_pass_names[k]; k++) fprintf(stderr, " %s", vcc_pass_names[k]);
        fputs(")\n", stderr);
        return 2;
    }
    VccTarget target = VCC_TARGET_C;
    if (out) {
        if (vcc_has_suffix(out, ".cu")) target = VCC_TARGET_CUDA;
        else if (!vcc_has_suffix(out, ".c")) {
            fprintf(stderr, "vcc: output '%s' must end in .c (CPU program) or .cu (CUDA program)\n", out);
            return 2;
        }
        /* the file name becomes part of the printed build command and the file's first line */
        const char *base = strrchr(out, '/');
        base = base ? base + 1 : out;
        bool safe = base[0] != '.' && base[0] != '-';
        for (const char *c = base; *c; c++)
            safe &= (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                    *c == '.' || *c == '_' || *c == '-' || *c == '+';
        if (!safe) {
            fprintf(stderr, "vcc: output name '%s' must start with a letter or digit and use only letters, digits "
                            "and . _ - + (it becomes part of the build command)\n", base);
            return 2;
        }
        /* the printed build command writes the program beside it: it must not overwrite a file that is not
         * a program (-o model.onnx.c would build over model.onnx, -o t.cu.c over the CUDA source t.cu) */
        char exe[8192];
        struct stat sb;
        if (!vcc_program_path(target, out, exe, sizeof exe) && stat(exe, &sb) == 0 &&
            !(S_ISREG(sb.st_mode) && (sb.st_mode & S_IXUSR))) {
            fprintf(stderr, "vcc: -o %s: the build command would write the program to '%s', an existing file that "
                            "is not a program; choose another name\n", out, exe);
            return 2;
        }
    }
    if (precision == VCC_PRECISION_TF32 && out && target == VCC_TARGET_C) {
        fprintf(stderr, "vcc: --precision tf32 is for CUDA trainers (TF32 tensor cores in cuDNN and cuBLAS); the C "
                        "trainer '%s' computes in plain float32: give -o FILE.cu, or leave out --precision\n", out);
        return 2;
    }
    if (precision == VCC_PRECISION_BF16 && out && target == VCC_TARGET_CUDA && (eval || forward_only)) {
        fprintf(stderr, "vcc: --precision bf16 with %s: the program's outputs would hold bfloat16, which its "
                        "output files do not take; give -o FILE.c (float32 storage), or leave out --precision\n",
                eval ? "--eval" : "--forward-only");
        return 2;
    }
    bool vir = vcc_has_suffix(model, ".vir");
    int stage = 0;
    if (vir) {
        stage = vir_stage(model);
        if (stage == -1) {
            fprintf(stderr, "vcc: %s: the first line must name the pass the dump follows ('# vcc IR after PASS', as "
                            "--dump-ir writes it)\n", model);
            return 1;
        }
    }

    VccCtx ctx;
    vcc_ctx_init(&ctx, model);
    ctx.shapes = shapes;
    ctx.nshapes = nshapes;
    ctx.momentum = momentum;
    ctx.optimizer = optimizer;
    ctx.loss = loss;
    ctx.dump_after = dump;
    ctx.forward_only = forward_only;
    /* a CUDA bf16 trainer runs attention unfused (MatMul, Softmax, MatMul): the fused kernel is float32 only */
    ctx.no_fuse_attention = no_fuse || (precision == VCC_PRECISION_BF16 && out && target == VCC_TARGET_CUDA);
    ctx.keep_grads = keep_grads;
    if (!ws_text && cpu_conv_dnnl) ws_limit = VCC_WORKSPACE_LIMIT_DNNL_DEFAULT;
    ctx.workspace_limit = ws_limit;
    ctx.workspace_limit_fixed = ws_text != NULL;
    ctx.cpu_conv_dnnl = cpu_conv_dnnl; /* both targets plan alike: the CUDA trainer gets the same workspaces */
    ctx.precision = precision;
    ctx.bf16_store_bytes = out && target == VCC_TARGET_C ? 4 : 2; /* a C trainer keeps bfloat16 values in floats */
    ctx.memory_limit = memory_limit;
    ctx.recompute_flops_max = recompute_flops;
    ctx.eval = eval;
    ctx.allow_inference_export = allow_inference;
    ctx.from_dump = vir;
    VccGraph *g = NULL;
    int rc = 1;
    char *tmp = NULL, *wpath = NULL, *wtmp = NULL, *plan_tmp[3] = {NULL, NULL, NULL}, cmd[20000], cmd_here[20000];
    FILE *f = NULL;
    if (fit_text) {
        rc = vcc_fit(&ctx, model, fit_limit, vary, stdout);
        goto done;
    }
    VccStatus st = vir ? vcc_vir_load(&ctx, model, &g) : vcc_onnx_load(&ctx, model, &g);
    if (st == VCC_OK) st = vcc_run_passes_after(&ctx, g, vir ? stage : 0);
    if (st != VCC_OK) goto done;
    int64_t ws_largest;
    conv_workspaces(g, ws_limit, &ws_largest);
    const PlanFile plan_file = {g, &ctx};
    /* Every output is complete, in a temporary file beside it (or written to its stream or device), and
     * the standard output written, before any output replaces what was there: a failure up to the
     * renames leaves no output behind. */
    const char *plan_path[3] = {plan_json, plan_trace, plan_svg};
    const VccTextWriter plan_write[3] = {write_json, write_trace, write_svg};
    for (int i = 0; i < 3; i++)
        if (plan_path[i] && vcc_text_output_prepare("vcc", plan_path[i], plan_write[i], &plan_file, &plan_tmp[i]))
            goto done;
    char err[1024];
    if (out) {
        /* weights beside the program: train.c -> train.safetensors */
        wpath = vcc_strfmt("%.*s.safetensors", (int)(strrchr(out, '.') - out), out);
        const char *wbase = strrchr(wpath, '/');
        wbase = wbase ? wbase + 1 : wpath;
        /* the file's first line builds from the file's folder; the printed command from here */
        bool dnnl = vcc_uses_dnnl(&ctx, g, target);
        if (vcc_build_command(target, out, VCC_BUILD_IN_FILE_DIR, dnnl, cmd, sizeof cmd) ||
            vcc_build_command(target, out, VCC_BUILD_FROM_CWD, dnnl, cmd_here, sizeof cmd_here)) {
            fprintf(stderr, "vcc: %s: output path too long\n", out);
            goto done;
        }
        if (!(f = vcc_io_create_tmp(out, &tmp, err, sizeof err))) {
            fprintf(stderr, "vcc: %s\n", err);
            goto done;
        }
        bool written = vcc_emit_trainer(&ctx, g, target, cmd, wbase, f) == VCC_OK &&
                       (vir || vcc_write_weights(&ctx, g, wpath, &wtmp) == VCC_OK);
        if (!written) {
            fclose(f);
            goto done;
        }
        if (vcc_io_finish(f, tmp, out, err, sizeof err)) { /* tmp removed */
            fprintf(stderr, "vcc: %s\n", err);
            free(tmp);
            tmp = NULL;
            goto done;
        }
        printf("%s\n", cmd_here);
        if (vir)
            fprintf(stderr, "vcc: note: %s holds no weights; run the program with --weights FILE.safetensors (the "
                            "file vcc wrote beside a program compiled from the ONNX model)\n", model);
    }
    if (plan_cmd) {
        VccGraph *unfused = vcc_plan_unfused(&ctx, model, g);
        vcc_plan_report(stdout, g, model, unfused);
        vcc_graph_free(unfused);
    } else if (!out && !plan_json && !plan_trace && !plan_svg && !dump)
        printf("%s: %d steps, arena %lld bytes (persistent %lld, planned %lld), lower bound %lld, no reuse %lld, "
               "largest conv workspace %lld (limit %lld)\n",
               model, g->nnodes, (long long)g->arena_bytes, (long long)g->persistent_bytes,
               (long long)g->planned_bytes, (long long)g->lower_bound_bytes, (long long)g->no_reuse_bytes,
               (long long)ws_largest, (long long)ws_limit);
    if (memory_limit && !plan_cmd && g->step_flops <= 0) /* a dump after remat: its plan as given */
        fprintf(out || plan_json || plan_trace || plan_svg || dump ? stderr : stdout,
                "%s: --memory-limit %lld: arena %lld bytes, the plan as dumped after remat\n", model,
                (long long)memory_limit, (long long)g->arena_bytes);
    else if (memory_limit && !plan_cmd) /* beside the summary, or on stderr when stdout holds a dump or nothing */
        fprintf(out || plan_json || plan_trace || plan_svg || dump ? stderr : stdout,
                "%s: --memory-limit %lld: arena %lld bytes without recomputation, %lld with %d value%s recomputed "
                "(+%.2f%% FLOPs)%s\n", model, (long long)memory_limit, (long long)g->arena_unlimited_bytes,
                (long long)g->arena_bytes, g->remat_values, g->remat_values == 1 ? "" : "s",
                g->step_flops > 0 ? 100.0 * g->remat_flops / g->step_flops : 0.0,
                g->remat_ws_shrunk ? " and " VCC_REMAT_WS_NOTE : "");
    if (fflush(stdout) != 0 || ferror(stdout)) { /* a full disk must not pass for a complete dump */
        fprintf(stderr, "vcc: cannot write to standard output: %s\n", strerror(errno));
        goto done;
    }
    /* the renames: the weights, then the program (a failure between them is said), then the plan files */
    if (rename_output(&wtmp, wpath, NULL)) goto done;
    if (rename_output(&tmp, out, vir ? NULL : wpath)) goto done;
    for (int i = 0; i < 3; i++)
        if (rename_output(&plan_tmp[i], plan_path[i], NULL)) goto done;
    rc = 0;
done:
    /* outputs not renamed into place: their temporary files go */
    for (int i = 0; i < 3; i++)
        if (plan_tmp[i]) remove(plan_tmp[i]), free(plan_tmp[i]);
    if (tmp) remove(tmp);
    if (wtmp) remove(wtmp);
    vcc_diag_finish(&ctx);
    vcc_problems_clear(&ctx);
    vcc_graph_free(g);
    free(tmp);
    free(wtmp);
    free(wpath);
    for (int i = 0; i < nshapes; i++) free(shapes[i].name);
    return rc;
}
