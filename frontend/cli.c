/*
 * cli.c — the vcc command line.
 *
 *   vcc MODEL.onnx [-o train.c | -o train.cu] [--shape NAME=2x3x8x112x112 ...] [--dump-ir=PASS]
 *       [--plan-json FILE] [--momentum M] [--forward-only]
 *
 * Reads the model, runs the pass pipeline, and writes the trainer, its initial weights
 * (<output without extension>.safetensors) and the plan JSON, and prints the trainer's build command
 * as it runs from the current folder (paths shell-quoted; the binary of X.c is X, of X.cu X_cuda; the
 * file's first line holds the same command relative to its own folder); with none of -o, --plan-json and
 * --dump-ir it prints a one-line summary of the plan. Every output is written to a temporary
 * file and renamed, so a failure leaves no half-written output. Exit status 0 on success, 1 on any error
 * (the message names the file, node and op), 2 on a usage error.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../codegen/codegen.h"
#include "../passes/passes.h"
#include "frontend.h"

#define VCC_VERSION "0.1.0"

static void usage(FILE *f) {
    fputs("usage: vcc MODEL.onnx [-o OUT.c|OUT.cu] [options]\n"
          "\n"
          "Compile an ONNX model into a training program (forward, softmax cross-entropy, backward, SGD)\n"
          "whose every tensor lives in one statically planned arena.\n"
          "\n"
          "  -o FILE            write a C trainer (FILE.c, OpenBLAS) or a CUDA trainer (FILE.cu, cuDNN + cuBLAS),\n"
          "                     plus FILE's initial weights as <FILE without extension>.safetensors, and print\n"
          "                     the command that builds it, run from here: X.c builds the binary X, X.cu builds\n"
          "                     X_cuda (the C and CUDA trainers of a model can share a folder)\n"
          "  --shape NAME=DIMS  bind a symbolic input shape (NAME=2x3x8x112x112) or one symbolic dim (batch=2)\n"
          "  --dump-ir=PASS     print the IR after PASS: onnx canonical shape loss autodiff optimizer schedule\n"
          "                     liveness inplace memplan (memplan shows live intervals, offsets, arena size)\n"
          "  --plan-json FILE   write the memory plan as JSON\n"
          "  --momentum M       default SGD momentum baked into the trainer (default 0.9)\n"
          "  --forward-only     compile the forward graph alone: a program that evaluates the model once,\n"
          "                     ./fwd IN.npy... -o OUT.npy... (used by the ONNX conformance tests)\n"
          "  --version, --help\n",
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
    b->name = vcc_malloc((size_t)(eq - arg) + 1);
    memcpy(b->name, arg, (size_t)(eq - arg));
    b->name[eq - arg] = 0;
    return 0;
}

static bool has_suffix(const char *s, const char *suf) {
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && strcmp(s + n - m, suf) == 0;
}

/* Write to path via path.tmp; returns the open temp stream and fills tmp. */
static FILE *open_tmp(const char *path, char *tmp, size_t len) {
    snprintf(tmp, len, "%s.tmp", path);
    return fopen(tmp, "w");
}

static int commit_tmp(VccCtx *ctx, FILE *f, const char *tmp, const char *path) {
    int bad = ferror(f) != 0;
    if (fclose(f) != 0) bad = 1;
    if (bad || rename(tmp, path) != 0) {
        fprintf(ctx->diag, "vcc: %s: cannot write: %s\n", path, strerror(errno));
        remove(tmp);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    const char *model = NULL, *out = NULL, *plan_json = NULL, *dump = NULL;
    VccShapeBinding shapes[32];
    int nshapes = 0;
    float momentum = 0.9f;
    bool forward_only = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--version")) {
            printf("vcc %s\n", VCC_VERSION);
            return 0;
        } else if (!strcmp(a, "-o") && i + 1 < argc) {
            out = argv[++i];
        } else if (!strcmp(a, "--plan-json") && i + 1 < argc) {
            plan_json = argv[++i];
        } else if (!strcmp(a, "--forward-only")) {
            forward_only = true;
        } else if (!strncmp(a, "--dump-ir=", 10)) {
            dump = a + 10;
        } else if (!strcmp(a, "--momentum") && i + 1 < argc) {
            char *end;
            momentum = strtof(argv[++i], &end);
            if (*end || end == argv[i] || !(momentum >= 0.0f && momentum < 1e30f)) {
                fprintf(stderr, "vcc: --momentum needs a finite number >= 0, got '%s'\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(a, "--shape") && i + 1 < argc) {
            int bad = nshapes == 32 || parse_shape(argv[++i], &shapes[nshapes]);
            for (int j = 0; !bad && j < nshapes; j++)
                if (!strcmp(shapes[j].name, shapes[nshapes].name)) {
                    fprintf(stderr, "vcc: --shape %s is given twice\n", shapes[j].name);
                    free(shapes[nshapes].name);
                    bad = 2;
                }
            if (bad) {
                if (bad == 1)
                    fprintf(stderr, "vcc: --shape needs NAME=DIMS with dims from 1 to 2^31-1, like "
                                    "input=2x3x8x112x112 or batch=2; got '%s'\n", argv[i]);
                for (int j = 0; j < nshapes; j++) free(shapes[j].name);
                return 2;
            }
            nshapes++;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--plan-json") || !strcmp(a, "--momentum") ||
                   !strcmp(a, "--shape")) {
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
        usage(stderr);
        return 2;
    }
    if (dump) {
        bool known = false;
        for (int i = 0; vcc_pass_names[i]; i++) known |= !strcmp(dump, vcc_pass_names[i]);
        if (!known) {
            fprintf(stderr, "vcc: unknown pass '%s' for --dump-ir (see vcc --help)\n", dump);
            return 2;
        }
    }
    VccTarget target = VCC_TARGET_C;
    if (out) {
        if (has_suffix(out, ".cu")) target = VCC_TARGET_CUDA;
        else if (!has_suffix(out, ".c")) {
            fprintf(stderr, "vcc: output '%s' must end in .c (CPU trainer) or .cu (CUDA trainer)\n", out);
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
    }

    VccCtx ctx;
    vcc_ctx_init(&ctx, model);
    ctx.shapes = shapes;
    ctx.nshapes = nshapes;
    ctx.momentum = momentum;
    ctx.dump_after = dump;
    ctx.forward_only = forward_only;
    VccGraph *g = NULL;
    int rc = 1;
    char tmp[4096], wpath[4096], cmd[20000], cmd_here[20000];
    FILE *f = NULL;
    if (vcc_onnx_load(&ctx, model, &g) != VCC_OK) goto done;
    if (vcc_run_pipeline(&ctx, g) != VCC_OK) goto done;
    if (plan_json) {
        if (!(f = open_tmp(plan_json, tmp, sizeof tmp))) {
            fprintf(stderr, "vcc: %s: cannot write: %s\n", plan_json, strerror(errno));
            goto done;
        }
        vcc_plan_write_json(f, g);
        if (commit_tmp(&ctx, f, tmp, plan_json)) goto done;
    }
    if (out) {
        /* weights beside the trainer: train.c -> train.safetensors */
        snprintf(wpath, sizeof wpath, "%s", out);
        *strrchr(wpath, '.') = 0;
        strncat(wpath, ".safetensors", sizeof wpath - strlen(wpath) - 1);
        const char *wbase = strrchr(wpath, '/');
        wbase = wbase ? wbase + 1 : wpath;
        /* the file's first line builds from the file's folder; the printed command from here */
        if (vcc_build_command(target, out, VCC_BUILD_IN_FILE_DIR, cmd, sizeof cmd) ||
            vcc_build_command(target, out, VCC_BUILD_FROM_CWD, cmd_here, sizeof cmd_here)) {
            fprintf(stderr, "vcc: %s: output path too long\n", out);
            goto done;
        }
        if (!(f = open_tmp(out, tmp, sizeof tmp))) {
            fprintf(stderr, "vcc: %s: cannot write: %s\n", out, strerror(errno));
            goto done;
        }
        if (vcc_emit_trainer(&ctx, g, target, cmd, wbase, f) != VCC_OK) {
            fclose(f);
            remove(tmp);
            goto done;
        }
        if (vcc_write_weights(&ctx, g, wpath) != VCC_OK) {
            fclose(f);
            remove(tmp);
            goto done;
        }
        if (commit_tmp(&ctx, f, tmp, out)) {
            remove(wpath);
            goto done;
        }
        printf("%s\n", cmd_here);
    }
    if (!out && !plan_json && !dump)
        printf("%s: %d steps, arena %lld bytes (persistent %lld, planned %lld), lower bound %lld, no reuse %lld\n",
               model, g->nnodes, (long long)g->arena_bytes, (long long)g->persistent_bytes,
               (long long)g->planned_bytes, (long long)g->lower_bound_bytes, (long long)g->no_reuse_bytes);
    rc = 0;
done:
    vcc_graph_free(g);
    for (int i = 0; i < nshapes; i++) free(shapes[i].name);
    return rc;
}
