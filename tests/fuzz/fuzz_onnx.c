/*
 * fuzz_onnx.c — fuzz target: bytes as an ONNX model through everything vcc does with one.
 *
 * The input is written to model.onnx in a private scratch folder (vcc_onnx_load reads a path), then
 * compiled twice, as `vcc model.onnx -o train.c` and `vcc model.onnx --forward-only -o fwd.c` would:
 *
 *   vcc_onnx_load -> vcc_run_pipeline -> vcc_plan_check, the plan JSON, the IR printed with its plan
 *   and read back (print(parse(print(g))) == print(g)), vcc_emit_trainer for the C and the CUDA
 *   target, and (training) vcc_write_weights, read back with the runtime's vcc_st_load.
 *
 * A symbolic dim named "batch" is bound to 2 when the bytes hold that word (as --shape batch=2 would).
 * Diagnostics go to a memory stream. Checked, besides "no crash, no sanitizer report, no hang":
 *   - every status != VCC_OK came with at least one error line (ctx->nerrors grew, text ends in '\n';
 *     past the error cap only the count), and a failed load leaves *out NULL;
 *   - VCC_OK output is non-empty: a trainer starts with its "// build" line, the JSON with '{';
 *   - a forward-only program has at least one output, a training graph a loss;
 *   - the error text is fit for a terminal (no raw control characters, valid UTF-8): names from the
 *     model must reach it escaped (VCC_FUZZ_TEXT_CHECK=0 skips this check).
 */
#define _POSIX_C_SOURCE 200809L
#include "../../codegen/codegen.h"
#include "../../frontend/frontend.h"
#include "../../passes/passes.h"
#include "../../runtime/vcc_io.h"
#include "fuzz_util.h"

typedef struct {
    VccCtx ctx;
    char *diag;
    size_t dlen;
} Session;

static void session_open(Session *s, bool forward_only) {
    s->diag = NULL;
    s->dlen = 0;
    vcc_ctx_init(&s->ctx, "model.onnx");
    s->ctx.diag = open_memstream(&s->diag, &s->dlen);
    FUZZ_CHECK(s->ctx.diag != NULL, "open_memstream");
    s->ctx.dump = s->ctx.diag;
    s->ctx.forward_only = forward_only;
}

static void session_close(Session *s, const char *outcome) {
    vcc_diag_finish(&s->ctx);
    fclose(s->ctx.diag);
    if (fuzz_verbose()) {
        fprintf(stderr, "fuzz_onnx: %s: %s; diagnostics (escaped):\n", s->ctx.forward_only ? "forward-only" : "training",
                outcome);
        fuzz_print_escaped(stderr, s->diag, s->dlen, 4000);
    }
    fuzz_check_text("an ONNX model's diagnostics", s->diag, s->dlen);
    free(s->diag);
}

/* Mark where a stage starts: the error count and the diagnostic length. */
typedef struct {
    int nerrors;
    size_t dlen;
} Mark;

static Mark mark(Session *s) {
    fflush(s->ctx.diag);
    return (Mark){s->ctx.nerrors, s->dlen};
}

/* A stage that returned st != VCC_OK must have reported it: one more error and a finished line. */
static void check_reported(Session *s, Mark m, VccStatus st, const char *stage) {
    if (st == VCC_OK) return;
    fflush(s->ctx.diag);
    /* past the error cap (ctx->max_errors) errors are counted, not printed */
    bool capped = s->ctx.max_errors > 0 && m.nerrors >= s->ctx.max_errors;
    bool ok = s->ctx.nerrors > m.nerrors && (capped || (s->dlen > m.dlen && s->diag[s->dlen - 1] == '\n'));
    if (!ok) {
        fprintf(stderr, "fuzz check failed: %s%s returned status %d without an error line; diagnostics so far:\n",
                stage, s->ctx.forward_only ? " (forward-only)" : "", (int)st);
        fuzz_print_escaped(stderr, s->diag, s->dlen, 4000);
        abort();
    }
}

/* The dump of a planned graph reads back to the same graph: print(parse(print(g))) == print(g). */
static void check_dump_roundtrip(Session *s, const VccGraph *g) {
    size_t l1, l2;
    char *p1 = fuzz_print_graph(g, true, &l1);
    VccGraph *g2 = NULL;
    bool plan = false;
    Mark m = mark(s);
    VccStatus st = vcc_vir_parse(&s->ctx, "dump.vir", p1, l1, &g2, &plan);
    if (st != VCC_OK) {
        fflush(s->ctx.diag);
        fprintf(stderr, "fuzz check failed: the memplan dump of an accepted model does not read back:\n");
        fuzz_print_escaped(stderr, s->diag + m.dlen, s->dlen - m.dlen, 4000);
        abort();
    }
    FUZZ_CHECK(plan, "the memplan dump read back without its plan");
    char *p2 = fuzz_print_graph(g2, true, &l2);
    FUZZ_CHECK(l1 == l2 && memcmp(p1, p2, l1) == 0, "print(parse(dump)) != dump (%zu vs %zu bytes)", l2, l1);
    free(p2);
    free(p1);
    vcc_graph_free(g2);
}

static void check_emit(Session *s, const VccGraph *g, VccTarget target) {
    const char *cmd = target == VCC_TARGET_CUDA ? "nvcc -O2 train.cu -o train -lcudnn -lcublas"
                                                : "cc -O2 -std=c11 train.c -o train -lopenblas -lm";
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    FUZZ_CHECK(f != NULL, "open_memstream");
    Mark m = mark(s);
    VccStatus st = vcc_emit_trainer(&s->ctx, g, target, cmd, "train.safetensors", f);
    fclose(f);
    check_reported(s, m, st, target == VCC_TARGET_CUDA ? "vcc_emit_trainer (CUDA)" : "vcc_emit_trainer (C)");
    if (st == VCC_OK)
        FUZZ_CHECK(len > 8 && memcmp(text, "// build", 8) == 0, "the emitted program is empty or has no build line");
    free(text);
}

/* The weights file vcc writes beside the trainer is one the trainer's reader accepts, with every
 * parameter and buffer that has data. */
static void check_weights(Session *s, const VccGraph *g) {
    const char *path = fuzz_path(1, "train.safetensors");
    Mark m = mark(s);
    char *tmp = NULL, err[512];
    VccStatus st = vcc_write_weights(&s->ctx, g, path, &tmp);
    check_reported(s, m, st, "vcc_write_weights");
    FUZZ_CHECK((st == VCC_OK) == (tmp != NULL), "vcc_write_weights: status %d with temporary file %s", (int)st,
               tmp ? tmp : "(none)");
    if (st != VCC_OK || !tmp) return;
    int renamed = vcc_io_rename(tmp, path, err, sizeof err);
    free(tmp);
    FUZZ_CHECK(renamed == 0, "the weights' temporary file cannot be renamed: %s", err);
    if (renamed) return;
    int want = 0;
    for (int t = 0; t < g->ntensors; t++) {
        const VccTensor *x = &g->tensors[t];
        want += x->data && x->alias_of < 0 && (x->kind == VCC_T_PARAM || x->kind == VCC_T_BUFFER);
    }
    VccSafetensors st_file;
    int rc = vcc_st_load(path, &st_file, err, sizeof err);
    FUZZ_CHECK(rc == 0, "the weights vcc wrote do not load: %s", err);
    FUZZ_CHECK(st_file.n == want, "the weights file holds %d tensors, expected %d", st_file.n, want);
    for (int i = 0; i < st_file.n; i++) {
        int t = vcc_tensor_find(g, st_file.entries[i].name);
        FUZZ_CHECK(t >= 0, "the weights file names a tensor the graph does not have");
        const VccTensor *x = &g->tensors[t];
        const VccStEntry *e = &st_file.entries[i];
        FUZZ_CHECK(e->end - e->begin == x->data_bytes &&
                       (x->data_bytes == 0 || memcmp(st_file.buf + e->begin, x->data, x->data_bytes) == 0),
                   "the weights file's bytes differ from the graph's");
    }
    vcc_st_free(&st_file);
    unlink(path);
}

static void compile(const char *path, bool forward_only, bool bind_batch) {
    Session s;
    session_open(&s, forward_only);
    VccShapeBinding batch = {"batch", 1, {2}, NULL};
    if (bind_batch) {
        s.ctx.shapes = &batch;
        s.ctx.nshapes = 1;
    }
    VccGraph *g = (VccGraph *)&s; /* must be overwritten */
    Mark m = mark(&s);
    VccStatus st = vcc_onnx_load(&s.ctx, path, &g);
    check_reported(&s, m, st, "vcc_onnx_load");
    if (st != VCC_OK) {
        FUZZ_CHECK(g == NULL, "a failed load returned a graph");
        session_close(&s, "refused by the loader");
        return;
    }
    FUZZ_CHECK(g != NULL, "a successful load returned no graph");
    m = mark(&s);
    st = vcc_run_pipeline(&s.ctx, g);
    check_reported(&s, m, st, "vcc_run_pipeline");
    if (st == VCC_OK) {
        if (forward_only)
            FUZZ_CHECK(g->noutputs > 0, "a forward-only program with no outputs");
        else
            FUZZ_CHECK(g->loss >= 0 && g->loss < g->ntensors, "a training graph without a loss");
        m = mark(&s);
        st = vcc_plan_check(&s.ctx, g);
        check_reported(&s, m, st, "vcc_plan_check");
        FUZZ_CHECK(st == VCC_OK, "the plan memplan made fails its own check");

        char *json = NULL;
        size_t jlen = 0;
        FILE *f = open_memstream(&json, &jlen);
        FUZZ_CHECK(f != NULL, "open_memstream");
        vcc_plan_write_json(f, g, s.ctx.precision);
        fclose(f);
        FUZZ_CHECK(jlen > 0 && json[0] == '{', "the plan JSON is empty");
        free(json);

        check_dump_roundtrip(&s, g);
        check_emit(&s, g, VCC_TARGET_C);
        check_emit(&s, g, VCC_TARGET_CUDA);
        if (!forward_only) check_weights(&s, g);
    }
    vcc_graph_free(g);
    session_close(&s, st == VCC_OK ? "compiled" : "refused by a pass");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_path(0, "model.onnx");
    fuzz_write_file(path, data, size);
    /* a symbolic dim named "batch" is bound to 2 (--shape batch=2) when the bytes name one */
    static const char batch[] = "batch";
    bool bind = false;
    for (size_t i = 0; !bind && i + 5 <= size; i++) bind = memcmp(data + i, batch, 5) == 0;
    compile(path, false, bind);
    compile(path, true, bind);
    unlink(path);
    return 0;
}
