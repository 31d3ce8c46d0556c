/*
 * fuzz_vir.c — fuzz target: bytes as textual IR (.vir) through the reader (frontend/vir.y).
 *
 * vcc_vir_parse on the bytes; when it accepts them: vcc_verify, print (with the plan when the text had
 * one), parse the printed text again and print that: the second print must equal the first
 * (print(parse(print(parse(x)))) == print(parse(x))). Checked as well: a refusal comes with an error
 * line and no graph, and the error text is fit for a terminal (VCC_FUZZ_TEXT_CHECK=0 skips that).
 */
#define _POSIX_C_SOURCE 200809L
#include "../../frontend/frontend.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *diag = NULL;
    size_t dlen = 0;
    VccCtx ctx;
    vcc_ctx_init(&ctx, NULL);
    ctx.diag = open_memstream(&diag, &dlen);
    FUZZ_CHECK(ctx.diag != NULL, "open_memstream");
    VccGraph *g = (VccGraph *)&ctx; /* must be overwritten */
    bool plan = false;
    VccStatus st = vcc_vir_parse(&ctx, "fuzz.vir", (const char *)data, size, &g, &plan);
    if (st != VCC_OK) {
        fflush(ctx.diag);
        FUZZ_CHECK(g == NULL, "a refused text returned a graph");
        FUZZ_CHECK(ctx.nerrors > 0 && dlen > 0 && diag[dlen - 1] == '\n', "status %d without an error line", (int)st);
    } else {
        FUZZ_CHECK(g != NULL, "an accepted text returned no graph");
        VccStatus vst = vcc_verify(&ctx, g, "fuzz");
        (void)vst; /* the reader promises structure, not every invariant of a pass's output */
        size_t l1, l2;
        char *p1 = fuzz_print_graph(g, plan, &l1);
        VccGraph *g2 = NULL;
        bool plan2 = false;
        size_t before = (fflush(ctx.diag), dlen);
        VccStatus st2 = vcc_vir_parse(&ctx, "fuzz-printed.vir", p1, l1, &g2, &plan2);
        if (st2 != VCC_OK) {
            fflush(ctx.diag);
            fprintf(stderr, "fuzz check failed: a graph the reader accepted prints as text it refuses:\n");
            fuzz_print_escaped(stderr, diag + before, dlen - before, 4000);
            fprintf(stderr, "printed text:\n");
            fuzz_print_escaped(stderr, p1, l1, 4000);
            abort();
        }
        FUZZ_CHECK(plan2 == plan, "the plan went %s in the round trip", plan ? "missing" : "in");
        char *p2 = fuzz_print_graph(g2, plan2, &l2);
        FUZZ_CHECK(l1 == l2 && memcmp(p1, p2, l1) == 0, "print(parse(print(parse(x)))) != print(parse(x))");
        free(p2);
        free(p1);
        vcc_graph_free(g2);
        vcc_graph_free(g);
    }
    vcc_diag_finish(&ctx);
    fclose(ctx.diag);
    if (fuzz_verbose()) {
        fprintf(stderr, "fuzz_vir: %s; diagnostics (escaped):\n", st == VCC_OK ? "accepted" : "refused");
        fuzz_print_escaped(stderr, diag, dlen, 4000);
    }
    fuzz_check_text("a .vir file's diagnostics", diag, dlen);
    free(diag);
    return 0;
}
