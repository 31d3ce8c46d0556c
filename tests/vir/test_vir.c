/*
 * test_vir.c — the .vir reader (frontend/vir.y): error messages and their positions, what it builds,
 * and mutated inputs.
 *
 *   test_vir errors WORKDIR             each bad .vir below is written to WORKDIR and loaded with
 *                                       vcc_vir_load: status, no graph, first message exactly
 *                                       "WORKDIR/<case>.vir:LINE:COL: error: ...", ctx->file restored
 *   test_vir semantics FEATURES.vir     what the reader makes of tests/vir/features.vir: tensor order,
 *                                       kinds, attribute types, links, plan fields, no weights
 *   test_vir fuzz N SEED.vir...         N mutations of each seed (byte edits, line edits, truncation):
 *                                       no crash; whatever parses must print, verify, and re-parse to
 *                                       the same text (print(parse(print(parse(x)))) == print(parse(x)))
 *
 * Run it under -fsanitize=address,undefined (a build configured with
 * -DCMAKE_C_FLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer") or valgrind for the fuzz
 * mode to mean what it says.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "frontend.h"

static int failures;

#define CHECK(cond, ...)                                                                                      \
    do {                                                                                                      \
        if (!(cond)) {                                                                                        \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);                          \
            fprintf(stderr, __VA_ARGS__);                                                                     \
            fputc('\n', stderr);                                                                              \
            failures++;                                                                                       \
        }                                                                                                     \
    } while (0)

static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = vcc_malloc(cap);
    for (;;) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        buf = vcc_realloc(buf, cap *= 2);
    }
    fclose(f);
    *len = n;
    return buf;
}

/* ------------------------------------------------------------------ errors */

typedef struct {
    const char *name;
    const char *text;
    VccStatus status;
    const char *message; /* the first message after "<path>:" */
} ErrorCase;

#define HDR "opset 17\ninput \"x\" f32[2,3]\n"
#define RELU "node 0 forward Relu \"r\" (\"x\") -> (\"y\" f32[2,3])\n"
#define ARENA "arena bytes=0 persistent=0 planned=0 lower_bound=0 no_reuse=0\n"

static const ErrorCase kErrors[] = {
    /* the four the format promises to locate */
    {"syntax", HDR "node 0 forward Relu \"r\" (\"x\" -> (\"y\" f32[2,3])\n", VCC_ERR_PARSE,
     "3:30: error: syntax error, unexpected ->, expecting ',' or ')'"},
    {"unknown_op", HDR "node 0 forward Rellu \"r\" (\"x\") -> (\"y\" f32[2,3])\n", VCC_ERR_UNSUPPORTED,
     "3:16: error: unknown op 'Rellu'"},
    {"undefined_tensor", HDR RELU "node 1 forward Add \"a\" (\"y\", \"z\") -> (\"s\" f32[2,3])\n", VCC_ERR_PARSE,
     "4:30: error: undefined tensor 'z'"},
    {"type_mismatch", HDR RELU "output \"y\"\nplan \"x\" activation bytes=24 live=[0,0] offset=-1\n"
                      "plan \"y\" activation bytes=12 live=[0,0] offset=-1\narena bytes=0 persistent=0 planned=0 "
                      "lower_bound=0 no_reuse=0\n",
     VCC_ERR_SHAPE, "6:27: error: type mismatch: tensor 'y' is f32[2,3] (24 bytes) but its plan says bytes=12"},
    /* scanner */
    {"unexpected_char", HDR "node 0 forward Relu \"r\" (\"x\") -> (\"y\" f32[2;3])\n", VCC_ERR_PARSE,
     "3:44: error: unexpected character ';'"},
    {"unterminated_string", HDR "output \"y\n", VCC_ERR_PARSE, "3:8: error: unterminated string"},
    {"bad_escape", "opset 17\ninput \"a\\tb\" f32[1]\n", VCC_ERR_PARSE,
     "2:7: error: unknown escape '\\t' in string (only \\\", \\\\ and \\xNN)"},
    {"int_range", "opset 99999999999999999999\n", VCC_ERR_PARSE,
     "1:7: error: integer 99999999999999999999 is out of range"},
    {"float_range", HDR "node 0 forward Relu \"r\" (\"x\") -> (\"y\" f32[2,3]) {a=1e39}\n", VCC_ERR_PARSE,
     "3:52: error: number 1e39 is out of range for f32"},
    {"empty", "", VCC_ERR_PARSE, "1:1: error: syntax error, unexpected end of file, expecting opset or end of line"},
    {"no_newline_syntax", "opset", VCC_ERR_PARSE, "1:6: error: syntax error, unexpected end of line, expecting integer"},
    /* structure */
    {"decl_after_node", HDR RELU "param \"w\" f32[1]\n", VCC_ERR_PARSE,
     "4:1: error: syntax error, unexpected identifier"},
    {"unknown_kind", "opset 17\nweight \"w\" f32[1]\n", VCC_ERR_PARSE,
     "2:1: error: unknown tensor kind 'weight' (input, label, param, buffer, const, act, loss, grad, grad_temp, "
     "opt_state, workspace, grad_planned)"},
    {"unknown_dtype", "opset 17\nparam \"w\" f16[1]\n", VCC_ERR_UNSUPPORTED,
     "2:11: error: unknown dtype 'f16' (f32, f64, i8, i16, i32, i64, u8, u16, u32, u64, bool or ? for not inferred yet)"},
    {"rank9", "opset 17\nparam \"w\" f32[1,1,1,1,1,1,1,1,1]\n", VCC_ERR_UNSUPPORTED, "2:31: error: more than 8 dims"},
    /* a constant's value (data=, its little-endian bytes in hex): the program is compiled with it */
    {"const_no_value", "opset 17\nconst \"c\" f32[2]\n", VCC_ERR_PARSE,
     "2:1: error: const 'c' has no value (data=\"...\", as vcc's dumps write it)"},
    {"const_data_length", "opset 17\nconst \"c\" f32[2] data=\"0000803f\"\n", VCC_ERR_PARSE,
     "2:23: error: data= of const 'c' has 8 hex digits; its type takes 8 bytes (16 digits)"},
    {"const_data_not_hex", "opset 17\nconst \"c\" f32[] data=\"0000x03f\"\n", VCC_ERR_PARSE,
     "2:22: error: data= of const 'c' is not hex digits (at digit 4)"},
    {"data_on_param", "opset 17\nparam \"w\" f32[] data=\"0000803f\"\n", VCC_ERR_PARSE,
     "2:1: error: data= gives the value of a const; 'w' is declared 'param'"},
    {"data_key", "opset 17\nconst \"c\" f32[] value=\"0000803f\"\n", VCC_ERR_PARSE,
     "2:17: error: expected 'data=' (a constant's value), found 'value='"},
    {"negative_dim", "opset 17\nparam \"w\" f32[2,-3]\n", VCC_ERR_SHAPE,
     "2:17: error: dim -3 is negative (-1 is the only unknown dim)"},
    {"huge_type", "opset 17\nparam \"w\" f32[4611686018427387904,4]\n", VCC_ERR_SHAPE,
     "2:11: error: tensor type has more bytes than int64 counts"},
    {"duplicate_tensor", HDR "node 0 forward Relu \"r\" (\"x\") -> (\"x\" f32[2,3])\n", VCC_ERR_PARSE,
     "3:35: error: tensor 'x' is already defined on line 2"},
    {"node_number", HDR "node 1 forward Relu \"r\" (\"x\") -> (\"y\" f32[2,3])\n", VCC_ERR_PARSE,
     "3:6: error: node 1 where node 0 is expected (nodes are numbered in order)"},
    {"unknown_phase", HDR "node 0 forwards Relu \"r\" (\"x\") -> (\"y\" f32[2,3])\n", VCC_ERR_PARSE,
     "3:8: error: unknown phase 'forwards' (forward, loss, backward, update)"},
    {"read_before_def", HDR "node 0 forward Relu \"r\" (\"y\") -> (\"y\" f32[2,3])\n", VCC_ERR_PARSE,
     "3:26: error: undefined tensor 'y'"},
    {"attr_twice", HDR "node 0 forward Relu \"r\" (\"x\") -> (\"y\" f32[2,3]) {a=1, a=2}\n", VCC_ERR_PARSE,
     "3:55: error: attribute 'a' is given twice"},
    {"attr_list_mixed", HDR "node 0 forward Relu \"r\" (\"x\") -> (\"y\" f32[2,3]) {a=[1,\"s\"]}\n", VCC_ERR_PARSE,
     "3:55: error: syntax error, unexpected string, expecting integer or number"},
    {"undefined_output", HDR "output \"nope\"\n", VCC_ERR_PARSE, "3:8: error: undefined tensor 'nope'"},
    /* plan */
    {"plan_missing", HDR RELU "plan \"x\" activation bytes=24 live=[0,0] offset=-1\narena bytes=0 persistent=0 "
                     "planned=0 lower_bound=0 no_reuse=0\n",
     VCC_ERR_PARSE, "5:1: error: tensor 'y' has no plan line"},
    {"plan_twice", HDR "plan \"x\" activation bytes=24 live=[0,0] offset=-1\n"
                   "plan \"x\" activation bytes=24 live=[0,0] offset=-1\n" ARENA,
     VCC_ERR_PARSE, "4:6: error: tensor 'x' already has a plan line (line 3)"},
    {"plan_no_arena", HDR "plan \"x\" activation bytes=24 live=[0,0] offset=-1\n", VCC_ERR_PARSE,
     "4:1: error: syntax error, unexpected end of file, expecting plan or arena or end of line"},
    {"plan_key", HDR "plan \"x\" activation bites=24 live=[0,0] offset=-1\n" ARENA, VCC_ERR_PARSE,
     "3:21: error: expected 'bytes=', found 'bites='"},
    {"plan_category", HDR "plan \"x\" gradient bytes=24 live=[0,0] offset=-1\narena bytes=0 persistent=0 planned=0 "
                      "lower_bound=0 no_reuse=0\n",
     VCC_ERR_PARSE, "3:6: error: plan category 'gradient' contradicts input tensor 'x' (activation)"},
    {"plan_unknown_category", HDR "plan \"x\" weights bytes=24 live=[0,0] offset=-1\n" ARENA, VCC_ERR_PARSE,
     "3:10: error: unknown plan category 'weights' (parameter, gradient, optimizer_state, workspace, activation, "
     "saved_activation)"},
    {"plan_live", HDR "plan \"x\" activation bytes=24 live=[3,1] offset=-1\n" ARENA, VCC_ERR_PARSE,
     "3:35: error: live=[3,1] is not an interval of schedule steps (0 <= START <= END)"},
    {"plan_live_word", HDR "plan \"x\" activation bytes=24 live=forever offset=-1\n" ARENA, VCC_ERR_PARSE,
     "3:35: error: expected 'live=[START,END]' or 'live=persistent'"},
    {"plan_ref_key", HDR "plan \"x\" activation bytes=24 live=[0,0] offset=-1 alias_of=\"x\"\n", VCC_ERR_PARSE,
     "3:51: error: expected 'view_of=' or 'inplace_of=', found 'alias_of='"},
    {"plan_cycle", HDR RELU "plan \"x\" activation bytes=24 live=[0,0] offset=256 view_of=\"y\"\n"
                   "plan \"y\" activation bytes=24 live=[0,0] offset=256 view_of=\"x\"\n"
                   "arena bytes=0 persistent=0 planned=0 lower_bound=0 no_reuse=0\n",
     VCC_ERR_PARSE, "4:6: error: tensor 'x' shares bytes with itself (a view_of/inplace_of cycle)"},
    {"plan_view_too_big", "opset 17\ninput \"x\" f32[2]\n"
                          "node 0 forward Relu \"r\" (\"x\") -> (\"y\" f32[2,3])\n"
                          "plan \"x\" activation bytes=8 live=[0,0] offset=256\n"
                          "plan \"y\" activation bytes=24 live=[0,0] offset=256 inplace_of=\"x\"\n"
                          "arena bytes=0 persistent=0 planned=0 lower_bound=0 no_reuse=0\n",
     VCC_ERR_SHAPE, "5:6: error: type mismatch: tensor 'y' (24 bytes) uses the bytes of 'x' (8 bytes)"},
    {"plan_offset", HDR RELU "plan \"x\" activation bytes=24 live=[0,0] offset=256\n"
                    "plan \"y\" activation bytes=24 live=[0,0] offset=512 view_of=\"x\"\n"
                    "arena bytes=0 persistent=0 planned=0 lower_bound=0 no_reuse=0\n",
     VCC_ERR_PARSE, "5:48: error: offset=512 but 'x', whose bytes tensor 'y' uses, is at offset=256"},
    {"arena_key", HDR "plan \"x\" activation bytes=24 live=[0,0] offset=-1\n"
                  "arena bytes=0 persistent=0 planned=0 lower=0 no_reuse=0\n",
     VCC_ERR_PARSE, "4:38: error: expected 'lower_bound=', found 'lower='"},
};

static void run_error_case(const char *dir, const ErrorCase *c, bool with_ctx_file) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.vir", dir, c->name);
    FILE *f = fopen(path, "wb");
    if (!f) {
        CHECK(f != NULL, "cannot write %s", path);
        return;
    }
    fputs(c->text, f);
    fclose(f);

    char *diag = NULL;
    size_t dlen = 0;
    VccCtx ctx;
    vcc_ctx_init(&ctx, with_ctx_file ? "outer.vir" : NULL);
    ctx.diag = open_memstream(&diag, &dlen);
    VccGraph *g = (VccGraph *)&ctx; /* must be overwritten with NULL */
    VccStatus st = vcc_vir_load(&ctx, path, &g);
    fclose(ctx.diag);

    char want[2048];
    snprintf(want, sizeof want, "%s:%s\n", path, c->message);
    const char *nl = strchr(diag, '\n');
    size_t first = nl ? (size_t)(nl - diag) + 1 : strlen(diag);
    CHECK(st == c->status, "%s: status %d, expected %d", c->name, st, c->status);
    CHECK(g == NULL, "%s: a graph came back with an error", c->name);
    CHECK(ctx.nerrors >= 1, "%s: no error counted", c->name);
    CHECK(first == strlen(want) && strncmp(diag, want, first) == 0, "%s:\n  got:      %.*s  expected: %s", c->name,
          (int)first, diag, want);
    CHECK(with_ctx_file ? ctx.file && strcmp(ctx.file, "outer.vir") == 0 : ctx.file == NULL,
          "%s: ctx->file not restored", c->name);
    free(diag);
}

static void test_errors(const char *dir) {
    mkdir(dir, 0777); /* may exist */
    for (size_t i = 0; i < sizeof kErrors / sizeof kErrors[0]; i++) run_error_case(dir, &kErrors[i], i % 2 == 0);

    /* a missing file */
    char path[1024], *diag = NULL;
    size_t dlen = 0;
    snprintf(path, sizeof path, "%s/does-not-exist.vir", dir);
    VccCtx ctx;
    vcc_ctx_init(&ctx, NULL);
    ctx.diag = open_memstream(&diag, &dlen);
    VccGraph *g;
    VccStatus st = vcc_vir_load(&ctx, path, &g);
    fclose(ctx.diag);
    CHECK(st == VCC_ERR_IO && g == NULL && strstr(diag, "does-not-exist.vir: error: cannot open the file"), "%s", diag);
    free(diag);

    /* several semantic errors: all reported, in order, capped */
    char text[8192] = HDR;
    for (int i = 0; i < 30; i++)
        snprintf(text + strlen(text), sizeof text - strlen(text), "output \"missing%d\"\n", i);
    vcc_ctx_init(&ctx, NULL);
    diag = NULL;
    ctx.diag = open_memstream(&diag, &dlen);
    st = vcc_vir_parse(&ctx, "many.vir", text, strlen(text), &g, NULL);
    fclose(ctx.diag);
    int lines = 0;
    for (const char *s = diag; *s; s++) lines += *s == '\n';
    CHECK(st == VCC_ERR_PARSE && g == NULL && lines == 20 && strstr(diag, "many.vir:3:8: error: undefined tensor 'missing0'") &&
              strstr(diag, "(too many errors)"),
          "%d lines:\n%s", lines, diag);
    free(diag);
}

/* ------------------------------------------------------------------ semantics of features.vir */

static int tensor(const VccGraph *g, const char *name) {
    int t = vcc_tensor_find(g, name);
    CHECK(t >= 0, "no tensor '%s'", name);
    return t;
}

static void test_semantics(const char *path) {
    VccCtx ctx;
    vcc_ctx_init(&ctx, NULL);
    VccGraph *g;
    bool has_plan;
    VccStatus st = vcc_vir_read(&ctx, path, &g, &has_plan);
    CHECK(st == VCC_OK, "%s does not load", path);
    if (st) return;
    CHECK(has_plan, "the plan was not seen");
    CHECK(vcc_verify(&ctx, g, "vir") == VCC_OK, "the verifier rejects the graph");
    CHECK(g->opset == 17, "opset %lld", (long long)g->opset);
    CHECK(g->ntensors == 27 && g->nnodes == 15, "%d tensors, %d nodes", g->ntensors, g->nnodes);

    /* tensor order is the plan's: clip first, the loss's outputs where the plan lists them */
    CHECK(tensor(g, "clip") == 0 && tensor(g, "conv_out") == 10 && tensor(g, "/conv/Conv.grad_filter.ws") == 26,
          "tensor order");
    /* kinds: declared ones as written, produced ones reconstructed */
    struct {
        const char *name;
        VccTensorKind kind;
    } kinds[] = {{"clip", VCC_T_INPUT},         {"conv.weight", VCC_T_PARAM},
                 {"bn.running_mean", VCC_T_BUFFER}, {"shape", VCC_T_CONST},
                 {"labels", VCC_T_LABEL},       {"conv.weight.momentum", VCC_T_OPT_STATE},
                 {"conv_out", VCC_T_ACT},       {"/conv/Conv.ws", VCC_T_WORKSPACE},
                 {"loss", VCC_T_LOSS},          {"loss.prob", VCC_T_ACT},
                 {"logits.grad", VCC_T_GRAD_TEMP}, {"fc.weight.grad", VCC_T_GRAD},
                 {"conv.weight.grad", VCC_T_GRAD}, {"/conv/Conv.grad_filter.ws", VCC_T_WORKSPACE},
                 {"odd \"quoted\" \\ name", VCC_T_ACT}};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        int t = tensor(g, kinds[i].name);
        if (t >= 0)
            CHECK(g->tensors[t].kind == kinds[i].kind, "'%s' is %s, expected %s", kinds[i].name,
                  vcc_tensor_kind_name(g->tensors[t].kind), vcc_tensor_kind_name(kinds[i].kind));
    }
    /* no weights: values only for the constants (data=, little-endian bytes: the Reshape's shape (2, 4), the loss
     * gradient's seed 1.0f); not-inferred types in the frontend's convention */
    int seed_t = tensor(g, "loss.grad_seed"), shape_t = tensor(g, "shape");
    for (int t = 0; t < g->ntensors; t++)
        if (t != seed_t && t != shape_t) CHECK(g->tensors[t].data == NULL && g->tensors[t].data_bytes == 0, "data");
    const unsigned char *sd = g->tensors[shape_t].data;
    CHECK(g->tensors[shape_t].data_bytes == 16 && sd[0] == 2 && sd[8] == 4 && sd[1] == 0 && sd[15] == 0, "shape value");
    CHECK(g->tensors[seed_t].data_bytes == 4 && *(const float *)g->tensors[seed_t].data == 1.0f, "seed value");
    const VccTensor *odd = &g->tensors[tensor(g, "odd \"quoted\" \\ name")];
    CHECK(odd->dtype == VCC_DT_UNDEF && odd->shape.rank == 0 && odd->shape.dims[0] == -1 && odd->shape.dims[7] == -1,
          "?[] type");
    const VccTensor *seed = &g->tensors[tensor(g, "loss.grad_seed")];
    CHECK(seed->dtype == VCC_F32 && seed->shape.rank == 0 && vcc_tensor_bytes(seed) == 4, "scalar");

    /* graph-level links */
    CHECK(g->ninputs == 2 && g->inputs[0] == tensor(g, "clip") && g->inputs[1] == tensor(g, "labels"), "inputs");
    CHECK(g->data_input == tensor(g, "clip") && g->label == tensor(g, "labels") && g->loss == tensor(g, "loss"),
          "data_input/label/loss");
    CHECK(g->noutputs == 1 && g->outputs[0] == tensor(g, "logits"), "outputs");
    int w = tensor(g, "conv.weight"), fw = tensor(g, "fc.weight");
    CHECK(g->tensors[w].grad == tensor(g, "conv.weight.grad") && g->tensors[tensor(g, "conv.weight.grad")].param_of == w &&
              g->tensors[tensor(g, "conv.weight.momentum")].param_of == w,
          "conv.weight links");
    CHECK(g->tensors[fw].grad == tensor(g, "fc.weight.grad"), "fc.weight links");

    /* nodes: ops, phases, absent inputs/outputs, attribute types */
    const VccNode *conv = &g->nodes[0], *gemm = &g->nodes[4], *gf = &g->nodes[11], *sgd = &g->nodes[13];
    CHECK(conv->op == VCC_OP_CONV && conv->phase == VCC_PHASE_FORWARD && conv->nin == 3 && conv->in[2] == -1 &&
              conv->onnx_op && strcmp(conv->onnx_op, "Conv") == 0,
          "conv node");
    CHECK(gf->op == VCC_OP_CONV_GRAD_FILTER && gf->phase == VCC_PHASE_BACKWARD && gf->nout == 3 && gf->out[1] == -1 &&
              gf->onnx_op == NULL,
          "grad filter node");
    CHECK(sgd->op == VCC_OP_SGD && sgd->phase == VCC_PHASE_UPDATE && sgd->nout == 0 && sgd->in[2] == -1, "sgd node");
    CHECK(g->nodes[5].phase == VCC_PHASE_LOSS, "loss phase");
    const VccAttr *a = vcc_attr_get(gemm, "alpha");
    CHECK(a && a->type == VCC_A_FLOAT && a->f == 1.0f, "alpha=1.0 is a float");
    a = vcc_attr_get(gemm, "transB");
    CHECK(a && a->type == VCC_A_INT && a->i == 1, "transB=1 is an int");
    a = vcc_attr_get(gemm, "scales");
    CHECK(a && a->type == VCC_A_FLOATS && a->n == 5 && a->floats[1] == 2.5f && a->floats[3] == 9.99999975e-06f,
          "float list");
    a = vcc_attr_get(&g->nodes[7], "empty");
    CHECK(a && a->type == VCC_A_INTS && a->n == 0 && a->ints != NULL, "empty list");
    a = vcc_attr_get(conv, "pads");
    CHECK(a && a->type == VCC_A_INTS && a->n == 6 && a->ints[2] == 1, "int list");
    CHECK(strcmp(vcc_attr_string(gf, "s", ""), "a \"b\" \\ c") == 0, "string with escapes");
    CHECK(strcmp(vcc_attr_string(&g->nodes[5], "reduction", ""), "mean") == 0, "reduction");

    /* plan fields */
    const VccTensor *relu = &g->tensors[tensor(g, "relu_out")], *flat = &g->tensors[tensor(g, "flat")];
    CHECK(relu->inplace_of == tensor(g, "conv_out") && relu->alias_of == -1 && relu->start == 1 && relu->end == 10 &&
              relu->saved && relu->offset == 8448,
          "relu_out plan");
    CHECK(flat->alias_of == tensor(g, "pool_out") && vcc_tensor_root(g, tensor(g, "flat")) == tensor(g, "pool_out"),
          "flat view");
    CHECK(g->tensors[w].start == -1 && g->tensors[w].end == -1 && g->tensors[w].offset == 0, "persistent");
    CHECK(g->arena_bytes == 53760 && g->persistent_bytes == 8192 && g->planned_bytes == 45568 &&
              g->lower_bound_bytes == 50000 && g->no_reuse_bytes == 120000,
          "arena");
    vcc_graph_free(g);
}

/* ------------------------------------------------------------------ mutations */

typedef struct {
    uint64_t s;
} Rng;

static uint64_t rnd(Rng *r) { /* xorshift64* */
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 2685821657736338717ull;
}

static size_t below(Rng *r, size_t n) { return n ? (size_t)(rnd(r) % n) : 0; }

/* Start of the line holding byte i, and the start of the next line. */
static void line_span(const char *t, size_t len, size_t i, size_t *b, size_t *e) {
    *b = i;
    while (*b > 0 && t[*b - 1] != '\n') (*b)--;
    *e = i;
    while (*e < len && t[*e] != '\n') (*e)++;
    if (*e < len) (*e)++;
}

/* One random edit of src into a new buffer (len in *n). */
static char *mutate(Rng *r, const char *src, size_t len, size_t *n) {
    static const char *const tokens[] = {"\"", "\\", "[", "]", "(", ")", "{", "}", ",", "=", "?", "_", "->", "#",
                                         "\n", " ", "-1", "0", "9223372036854775807", "99999999999999999999",
                                         "1e39", "nan", "-inf", "0.5", "node ", "plan ", "arena ", "output ",
                                         "opset ", "f32", "i64", "view_of=\"x\"", "inplace_of=", "live=persistent",
                                         "\"loss\"", "\"input\"", "\xff", "\x00"};
    if (len > (size_t)1 << 30) len = (size_t)1 << 30; /* seeds are small; this bound keeps sizes sane */
    char *out = vcc_malloc(len + 64);
    size_t i = below(r, len + 1), k = 0;
    switch (below(r, 7)) {
    case 0: /* replace a byte with a token's first byte or a random byte */
        memcpy(out, src, len);
        k = len;
        if (len) out[below(r, len)] = rnd(r) & 1 ? tokens[below(r, sizeof tokens / sizeof *tokens)][0] : (char)rnd(r);
        break;
    case 1: { /* insert a token */
        const char *tok = tokens[below(r, sizeof tokens / sizeof *tokens)];
        size_t tl = tok[0] ? strlen(tok) : 1;
        memcpy(out, src, i);
        memcpy(out + i, tok, tl);
        memcpy(out + i + tl, src + i, len - i);
        k = len + tl;
        break;
    }
    case 2: { /* delete a short span */
        size_t d = below(r, 12) + 1;
        if (i + d > len) d = len - i;
        memcpy(out, src, i);
        memcpy(out + i, src + i + d, len - i - d);
        k = len - d;
        break;
    }
    case 3: { /* delete a line */
        size_t b, e;
        line_span(src, len, i < len ? i : (len ? len - 1 : 0), &b, &e);
        memcpy(out, src, b);
        memcpy(out + b, src + e, len - e);
        k = len - (e - b);
        break;
    }
    case 4: { /* duplicate a line */
        size_t b, e;
        line_span(src, len, i < len ? i : (len ? len - 1 : 0), &b, &e);
        out = vcc_realloc(out, len + (e - b) + 1);
        memcpy(out, src, e);
        memcpy(out + e, src + b, e - b);
        memcpy(out + e + (e - b), src + e, len - e);
        k = len + (e - b);
        break;
    }
    case 5: /* truncate */
        memcpy(out, src, i);
        k = i;
        break;
    default: { /* change a digit (sizes, offsets, intervals, indices) */
        memcpy(out, src, len);
        k = len;
        for (size_t j = 0; j < len; j++) {
            size_t at = (i + j) % (len ? len : 1);
            if (len && out[at] >= '0' && out[at] <= '9') {
                out[at] = (char)('0' + below(r, 10));
                break;
            }
        }
        break;
    }
    }
    *n = k;
    return out;
}

static char *print_to_string(const VccGraph *g, bool plan, size_t *len) {
    char *s = NULL;
    FILE *f = open_memstream(&s, len);
    vcc_print_graph(f, g, plan);
    fclose(f);
    return s;
}

static void fuzz_one(const char *text, size_t len, int *accepted) {
    char *diag = NULL;
    size_t dlen = 0;
    VccCtx ctx;
    vcc_ctx_init(&ctx, NULL);
    ctx.diag = open_memstream(&diag, &dlen);
    VccGraph *g;
    bool plan;
    VccStatus st = vcc_vir_parse(&ctx, "fuzz.vir", text, len, &g, &plan);
    if (st == VCC_OK) {
        (*accepted)++;
        vcc_verify(&ctx, g, "fuzz");
        size_t l1, l2;
        char *p1 = print_to_string(g, plan, &l1);
        VccGraph *g2;
        bool plan2;
        VccStatus st2 = vcc_vir_parse(&ctx, "fuzz-printed.vir", p1, l1, &g2, &plan2);
        fflush(ctx.diag);
        CHECK(st2 == VCC_OK, "a graph the reader accepted prints as text it refuses:\n%s", diag);
        if (st2 == VCC_OK) {
            char *p2 = print_to_string(g2, plan2, &l2);
            CHECK(l1 == l2 && memcmp(p1, p2, l1) == 0, "print(parse(print(parse(x)))) != print(parse(x))");
            free(p2);
            vcc_graph_free(g2);
        }
        free(p1);
        vcc_graph_free(g);
    }
    fclose(ctx.diag);
    if (st != VCC_OK) CHECK(g == NULL && ctx.nerrors > 0 && dlen > 0, "a refusal without a message or with a graph");
    free(diag);
}

static void test_fuzz(int n, int nseeds, char **seeds) {
    for (int s = 0; s < nseeds; s++) {
        size_t len;
        char *seed = read_all(seeds[s], &len);
        CHECK(seed != NULL, "cannot read %s", seeds[s]);
        if (!seed) continue;
        Rng r = {0x9e3779b97f4a7c15ull ^ (uint64_t)(s + 1)};
        int accepted = 0;
        fuzz_one(seed, len, &accepted);
        CHECK(accepted == 1, "the seed %s itself does not parse", seeds[s]);
        for (int i = 0; i < n; i++) {
            size_t l1, l2;
            char *m1 = mutate(&r, seed, len, &l1);
            fuzz_one(m1, l1, &accepted);
            if (i % 4 == 0) { /* and a second edit on top */
                char *m2 = mutate(&r, m1, l1, &l2);
                fuzz_one(m2, l2, &accepted);
                free(m2);
            }
            free(m1);
        }
        printf("%s: %d mutations, %d accepted\n", seeds[s], n + (n + 3) / 4, accepted - 1);
        free(seed);
    }
}

int main(int argc, char **argv) {
    if (argc >= 3 && strcmp(argv[1], "errors") == 0) {
        test_errors(argv[2]);
    } else if (argc == 3 && strcmp(argv[1], "semantics") == 0) {
        test_semantics(argv[2]);
    } else if (argc >= 4 && strcmp(argv[1], "fuzz") == 0) {
        test_fuzz(atoi(argv[2]), argc - 3, argv + 3);
    } else {
        fputs("usage: test_vir errors WORKDIR | semantics FEATURES.vir | fuzz N SEED.vir...\n", stderr);
        return 2;
    }
    if (failures) fprintf(stderr, "%d check(s) failed\n", failures);
    else puts("ok");
    return failures ? 1 : 0;
}
