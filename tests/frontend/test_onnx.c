/*
 * test_onnx.c — the ONNX loader against models written by gen_models.py.
 *
 *   test_onnx GENDIR                       run every check (exit 0 when all pass); VCC_MUTANTS=n
 *                                          sets how many mutated files are loaded (default 400)
 *   test_onnx --histogram MODEL [NAME=AxBx..]...   load one model and print its op histogram
 *
 * Initializer and Constant values are compared with the reference bytes gen_models.py wrote from its
 * numpy arrays (GENDIR/ref/<model>/<tensor>.bin), read here with stdio, not through vcc. Error cases
 * check the status, that no graph is returned, and that the diagnostic names the file (and the node,
 * op, tensor or dim concerned).
 */
#define _POSIX_C_SOURCE 200809L

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend.h"
#include "../../passes/passes.h"

static int failures, checks;
static const char *gendir;

#define CHECK(cond, ...)                                                                      \
    do {                                                                                      \
        checks++;                                                                             \
        if (!(cond)) {                                                                        \
            failures++;                                                                       \
            fprintf(stderr, "%s:%d: FAIL: %s: ", __FILE__, __LINE__, #cond);                   \
            fprintf(stderr, __VA_ARGS__);                                                     \
            fputc('\n', stderr);                                                              \
        }                                                                                     \
    } while (0)

/* ------------------------------------------------------------------ loading with captured diagnostics */

typedef struct {
    char path[1024];
    char *diag; /* everything vcc_error wrote */
    size_t diag_len;
    VccStatus st;
    VccGraph *g;
} Load;

static void load(Load *l, const char *rel, VccShapeBinding *b, int nb) {
    snprintf(l->path, sizeof l->path, "%s/%s", gendir, rel);
    VccCtx ctx;
    vcc_ctx_init(&ctx, l->path);
    ctx.shapes = b;
    ctx.nshapes = nb;
    l->diag = NULL;
    l->diag_len = 0;
    ctx.diag = open_memstream(&l->diag, &l->diag_len);
    if (!ctx.diag) {
        perror("open_memstream");
        exit(2);
    }
    l->st = vcc_onnx_load(&ctx, l->path, &l->g);
    /* unsupported constructs are kept by the loader and reported, all at once, by the support check */
    if (l->st == VCC_OK) {
        l->st = vcc_check_supported(&ctx, l->g);
        if (l->st != VCC_OK) {
            vcc_graph_free(l->g);
            l->g = NULL;
        }
    }
    fclose(ctx.diag);
}

static void unload(Load *l) {
    vcc_graph_free(l->g);
    free(l->diag);
    l->g = NULL;
    l->diag = NULL;
}

/* Load a good model: status OK, no diagnostics. */
static bool load_ok(Load *l, const char *rel, VccShapeBinding *b, int nb) {
    load(l, rel, b, nb);
    CHECK(l->st == VCC_OK, "%s: status %d, diag: %s", rel, l->st, l->diag);
    CHECK(l->diag_len == 0, "%s: unexpected diagnostics: %s", rel, l->diag);
    return l->st == VCC_OK && l->g;
}

/* Load a bad model: expect status st, no graph, a diagnostic that starts with the path and contains
 * each of the NULL-terminated substrings. */
static void expect_error_b(const char *rel, VccStatus st, VccShapeBinding *b, int nb, ...) {
    Load l;
    load(&l, rel, b, nb);
    CHECK(l.st == st, "%s: status %d, expected %d; diag: %s", rel, l.st, st, l.diag);
    CHECK(l.g == NULL, "%s: a graph was returned on error", rel);
    CHECK(l.diag_len > 0 && strncmp(l.diag, l.path, strlen(l.path)) == 0, "%s: diagnostic does not name the file: %s",
          rel, l.diag);
    va_list ap;
    va_start(ap, nb);
    for (const char *s; (s = va_arg(ap, const char *));)
        CHECK(strstr(l.diag, s) != NULL, "%s: diagnostic lacks \"%s\": %s", rel, s, l.diag);
    va_end(ap);
    if (getenv("VCC_TEST_VERBOSE")) fprintf(stderr, "  %s -> %s", rel, l.diag);
    unload(&l);
}
#define expect_error(rel, st, ...) expect_error_b(rel, st, NULL, 0, __VA_ARGS__, (const char *)NULL)

/* ------------------------------------------------------------------ helpers on the loaded graph */

static int tensor(const VccGraph *g, const char *name) {
    int t = vcc_tensor_find(g, name);
    CHECK(t >= 0, "tensor '%s' missing", name);
    return t;
}

/* Compare a tensor's data with GENDIR/ref/<model>/<name>.bin, read here. */
static void check_data(const VccGraph *g, const char *model, const char *name) {
    int t = tensor(g, name);
    if (t < 0) return;
    char path[1024];
    snprintf(path, sizeof path, "%s/ref/%s/%s.bin", gendir, model, name);
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL, "cannot open reference %s", path);
    if (!f) return;
    unsigned char buf[1 << 14];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    const VccTensor *x = &g->tensors[t];
    CHECK(x->data != NULL, "%s/%s: no data", model, name);
    CHECK(x->data_bytes == n, "%s/%s: %zu bytes, reference has %zu", model, name, x->data_bytes, n);
    CHECK((int64_t)x->data_bytes == vcc_tensor_bytes(x), "%s/%s: data_bytes %zu vs shape %lld", model, name,
          x->data_bytes, (long long)vcc_tensor_bytes(x));
    if (x->data && x->data_bytes == n)
        CHECK(memcmp(x->data, buf, n) == 0, "%s/%s: values differ from the reference", model, name);
}

static void check_shape(const VccGraph *g, const char *name, VccDType dt, VccTensorKind kind, int rank, ...) {
    int t = tensor(g, name);
    if (t < 0) return;
    const VccTensor *x = &g->tensors[t];
    CHECK(x->dtype == dt, "'%s' dtype %d, expected %d", name, x->dtype, dt);
    CHECK(x->kind == kind, "'%s' kind %s, expected %s", name, vcc_tensor_kind_name(x->kind), vcc_tensor_kind_name(kind));
    CHECK(x->shape.rank == rank, "'%s' rank %d, expected %d", name, x->shape.rank, rank);
    va_list ap;
    va_start(ap, rank);
    for (int i = 0; i < rank && i < x->shape.rank; i++) {
        long long d = va_arg(ap, long long);
        CHECK(x->shape.dims[i] == d, "'%s' dim %d is %lld, expected %lld", name, i, (long long)x->shape.dims[i], d);
    }
    va_end(ap);
}

/* Conv + BN + Relu + GAP + Flatten + Gemm, as written by gen_models.py conv_nodes(). */
static void check_conv_graph(const VccGraph *g, const char *model, bool raw_variant) {
    CHECK(g->opset == 17 || g->opset == 9, "%s: opset %lld", model, (long long)g->opset);
    CHECK(g->ninputs == 1, "%s: %d graph inputs, expected 1", model, g->ninputs);
    if (g->ninputs == 1) CHECK(strcmp(g->tensors[g->inputs[0]].name, "input") == 0, "%s: input name", model);
    check_shape(g, "input", VCC_F32, VCC_T_INPUT, 5, 2LL, 3LL, 4LL, 8LL, 8LL);
    CHECK(g->noutputs == 1 && strcmp(g->tensors[g->outputs[0]].name, "logits") == 0, "%s: outputs", model);

    static const VccOp ops_raw[] = {VCC_OP_CONV, VCC_OP_BATCHNORM, VCC_OP_RELU, VCC_OP_GLOBALAVGPOOL,
                                    VCC_OP_FLATTEN, VCC_OP_GEMM};
    static const VccOp ops_typed[] = {VCC_OP_CONV, VCC_OP_BATCHNORM, VCC_OP_RELU, VCC_OP_GLOBALAVGPOOL,
                                      VCC_OP_FLATTEN, VCC_OP_RESHAPE, VCC_OP_GEMM};
    const VccOp *ops = raw_variant ? ops_raw : ops_typed;
    int nops = raw_variant ? 6 : 7;
    CHECK(g->nnodes == nops, "%s: %d nodes, expected %d", model, g->nnodes, nops);
    for (int i = 0; i < g->nnodes && i < nops; i++) {
        const VccNode *n = &g->nodes[i];
        CHECK(n->op == ops[i], "%s: node %d is %s, expected %s", model, i, vcc_op_name(n->op), vcc_op_name(ops[i]));
        CHECK(n->onnx_op && strcmp(n->onnx_op, vcc_op_name(ops[i])) == 0, "%s: node %d onnx_op %s", model, i,
              n->onnx_op ? n->onnx_op : "(null)");
        CHECK(n->phase == VCC_PHASE_FORWARD, "%s: node %d phase", model, i);
        for (int k = 0; k < n->nout; k++) {
            if (n->out[k] < 0) continue;
            const VccTensor *t = &g->tensors[n->out[k]];
            CHECK(t->producer == i, "%s: node %d output producer", model, i);
            CHECK(t->kind == VCC_T_ACT && t->dtype == VCC_DT_UNDEF && t->shape.rank == 0 && t->shape.dims[0] == -1,
                  "%s: node output '%s' not marked 'not inferred yet'", model, t->name);
        }
    }
    if (g->nnodes < 2) return;
    const VccNode *conv = &g->nodes[0], *bn = &g->nodes[1], *gemm = &g->nodes[g->nnodes - 1];
    CHECK(strcmp(conv->name, "/conv/Conv") == 0, "%s: conv name %s", model, conv->name);
    int64_t ks[8];
    CHECK(vcc_attr_ints(conv, "kernel_shape", ks, 8) == 3 && ks[0] == 3 && ks[2] == 3, "%s: kernel_shape", model);
    CHECK(vcc_attr_ints(conv, "pads", ks, 8) == 6 && ks[5] == 1, "%s: pads", model);
    CHECK(conv->nin == 3, "%s: conv nin %d", model, conv->nin);
    if (raw_variant)
        CHECK(conv->in[2] == vcc_tensor_find(g, "conv.bias"), "%s: conv bias input", model);
    else
        CHECK(conv->in[2] == -1, "%s: absent conv bias must be -1, is %d", model, conv->in[2]);
    /* opset 14+: training_mode=1 and 3 outputs; before: the training form has 5 outputs */
    int bn_outs = g->opset >= 14 ? 3 : 5;
    CHECK(bn->nin == 5 && bn->nout == bn_outs, "%s: BN arity %d/%d", model, bn->nin, bn->nout);
    CHECK(vcc_attr_float(bn, "epsilon", 0) == 1e-5f, "%s: epsilon", model);
    CHECK(vcc_attr_float(bn, "momentum", 0) == 0.9f, "%s: momentum", model);
    CHECK(vcc_attr_int(bn, "training_mode", 0) == (g->opset >= 14), "%s: training_mode", model);
    CHECK(vcc_attr_int(gemm, "transB", 0) == 1, "%s: transB", model);
    CHECK(vcc_attr_get(gemm, "alpha") && vcc_attr_get(gemm, "alpha")->type == VCC_A_FLOAT, "%s: alpha", model);
    CHECK(strcmp(gemm->name, "/fc/Gemm") == 0, "%s: gemm name", model);

    check_shape(g, "conv.weight", VCC_F32, VCC_T_PARAM, 5, 4LL, 3LL, 3LL, 3LL, 3LL);
    check_shape(g, "fc.weight", VCC_F32, VCC_T_PARAM, 2, 5LL, 4LL);
    check_shape(g, "bn.running_var", VCC_F32, VCC_T_PARAM, 1, 4LL);
    static const char *const params[] = {"conv.weight", "bn.weight", "bn.bias", "bn.running_mean",
                                         "bn.running_var", "fc.weight", "fc.bias"};
    for (size_t i = 0; i < sizeof params / sizeof params[0]; i++) check_data(g, model, params[i]);
    if (raw_variant) check_data(g, model, "conv.bias");
}

/* ------------------------------------------------------------------ good models */

static void test_good(void) {
    Load l;
    if (load_ok(&l, "conv_raw.onnx", NULL, 0)) {
        check_conv_graph(l.g, "conv_raw", true);
        CHECK(l.g->opset == 17, "opset %lld", (long long)l.g->opset);
        check_shape(l.g, "i32raw", VCC_I32, VCC_T_CONST, 1, 3LL);
        check_data(l.g, "conv_raw", "i32raw");
        check_shape(l.g, "f64raw", VCC_F64, VCC_T_CONST, 1, 2LL);
        check_data(l.g, "conv_raw", "f64raw");
        CHECK(l.g->ntensors == 9 + 2 + 8, "conv_raw: %d tensors", l.g->ntensors);
    }
    unload(&l);

    if (load_ok(&l, "conv_typed.onnx", NULL, 0)) {
        check_conv_graph(l.g, "conv_typed", false);
        CHECK(vcc_tensor_find(l.g, "conv.bias") < 0, "conv_typed has no conv.bias");
        check_shape(l.g, "shape", VCC_I64, VCC_T_CONST, 1, 2LL);
        check_data(l.g, "conv_typed", "shape");
        check_shape(l.g, "i32", VCC_I32, VCC_T_CONST, 1, 3LL);
        check_data(l.g, "conv_typed", "i32");
        check_shape(l.g, "f64", VCC_F64, VCC_T_CONST, 1, 2LL);
        check_data(l.g, "conv_typed", "f64");
    }
    unload(&l);

    /* initializers also listed as graph inputs: one tensor each, not graph data inputs */
    if (load_ok(&l, "conv_initin.onnx", NULL, 0)) {
        check_conv_graph(l.g, "conv_raw", true); /* same weights as conv_raw */
        CHECK(l.g->opset == 9, "conv_initin opset %lld", (long long)l.g->opset);
        CHECK(l.g->ntensors == 1 + 8 + 10, "conv_initin: %d tensors", l.g->ntensors);
    }
    unload(&l);

    if (load_ok(&l, "constant.onnx", NULL, 0)) {
        const VccGraph *g = l.g;
        CHECK(g->nnodes == 2, "constant: %d nodes (Constant must add none)", g->nnodes);
        if (g->nnodes == 2) {
            CHECK(g->nodes[0].op == VCC_OP_ADD && g->nodes[1].op == VCC_OP_RESHAPE, "constant: ops");
            CHECK(g->nodes[1].in[1] == vcc_tensor_find(g, "shape_c"), "constant: Reshape reads shape_c");
        }
        check_shape(g, "c0", VCC_F32, VCC_T_CONST, 1, 4LL);
        check_shape(g, "shape_c", VCC_I64, VCC_T_CONST, 1, 2LL);
        check_shape(g, "cf", VCC_F32, VCC_T_CONST, 0);
        check_shape(g, "ci", VCC_I64, VCC_T_CONST, 0);
        check_shape(g, "cfs", VCC_F32, VCC_T_CONST, 1, 3LL);
        static const char *const cs[] = {"c0", "shape_c", "cf", "ci", "cfs"};
        for (int i = 0; i < 5; i++) {
            check_data(g, "constant", cs[i]);
            int t = vcc_tensor_find(g, cs[i]);
            if (t >= 0) CHECK(g->tensors[t].producer == -1, "constant '%s' has a producer", cs[i]);
        }
        CHECK(g->ninputs == 1 && g->noutputs == 1, "constant: inputs/outputs");
    }
    unload(&l);

    /* float_data / int64_data written unpacked (one tag per element) */
    if (load_ok(&l, "unpacked.onnx", NULL, 0)) {
        check_shape(l.g, "w", VCC_F32, VCC_T_PARAM, 1, 3LL);
        check_shape(l.g, "k", VCC_I64, VCC_T_CONST, 1, 3LL);
        check_data(l.g, "unpacked", "w");
        check_data(l.g, "unpacked", "k");
    }
    unload(&l);

    if (load_ok(&l, "ext/conv_ext.onnx", NULL, 0)) check_conv_graph(l.g, "conv_ext", true);
    unload(&l);
    if (load_ok(&l, "ext/conv_ext_link.onnx", NULL, 0)) check_conv_graph(l.g, "conv_ext", true);
    unload(&l);
}

/* ------------------------------------------------------------------ symbolic dims */

static void test_symbolic(void) {
    expect_error("symbolic.onnx", VCC_ERR_SHAPE, "input 'input' dim 0 ('batch') is symbolic",
                 "--shape input=2x3x4x8x8", "--shape batch=");
    expect_error("unknown_dim.onnx", VCC_ERR_SHAPE, "input 'input' dim 3 is unknown", "--shape input=");

    Load l;
    VccShapeBinding by_dim = {.name = "batch", .rank = 1, .dims = {6}};
    if (load_ok(&l, "symbolic.onnx", &by_dim, 1)) {
        check_shape(l.g, "input", VCC_F32, VCC_T_INPUT, 5, 6LL, 3LL, 4LL, 8LL, 8LL);
        int t = vcc_tensor_find(l.g, "input");
        CHECK(t >= 0 && l.g->tensors[t].dim_param[0] && strcmp(l.g->tensors[t].dim_param[0], "batch") == 0 &&
                  l.g->tensors[t].dim_param[1] == NULL,
              "dim_param kept");
    }
    unload(&l);
    VccShapeBinding by_input = {.name = "input", .rank = 5, .dims = {2, 3, 4, 8, 8}};
    if (load_ok(&l, "symbolic.onnx", &by_input, 1)) check_shape(l.g, "input", VCC_F32, VCC_T_INPUT, 5, 2LL, 3LL, 4LL, 8LL, 8LL);
    unload(&l);
    VccShapeBinding by_input_unknown = {.name = "input", .rank = 5, .dims = {2, 3, 4, 5, 8}};
    if (load_ok(&l, "unknown_dim.onnx", &by_input_unknown, 1))
        check_shape(l.g, "input", VCC_F32, VCC_T_INPUT, 5, 2LL, 3LL, 4LL, 5LL, 8LL);
    unload(&l);

    VccShapeBinding both[2] = {by_input, {.name = "batch", .rank = 1, .dims = {2}}};
    if (load_ok(&l, "symbolic.onnx", both, 2)) check_shape(l.g, "input", VCC_F32, VCC_T_INPUT, 5, 2LL, 3LL, 4LL, 8LL, 8LL);
    unload(&l);
    both[1].dims[0] = 3;
    expect_error_b("symbolic.onnx", VCC_ERR_SHAPE, both, 2, "--shape batch and --shape input disagree", (const char *)NULL);

    VccShapeBinding contradicts = {.name = "input", .rank = 5, .dims = {2, 3, 4, 8, 9}};
    expect_error_b("symbolic.onnx", VCC_ERR_SHAPE, &contradicts, 1, "dim 4 is 9", "fixes it to 8", (const char *)NULL);
    VccShapeBinding wrong_rank = {.name = "input", .rank = 4, .dims = {2, 3, 4, 8}};
    expect_error_b("symbolic.onnx", VCC_ERR_SHAPE, &wrong_rank, 1, "gives 4 dims", (const char *)NULL);
    VccShapeBinding nothing = {.name = "batchsize", .rank = 1, .dims = {2}};
    VccShapeBinding two[2] = {by_dim, nothing};
    expect_error_b("symbolic.onnx", VCC_ERR_INVALID, two, 2, "--shape batchsize", (const char *)NULL);
    VccShapeBinding zero = {.name = "batch", .rank = 1, .dims = {0}};
    expect_error_b("symbolic.onnx", VCC_ERR_INVALID, &zero, 1, "one positive value", (const char *)NULL);
}

/* ------------------------------------------------------------------ bad files and bad models */

static void test_bad(void) {
    expect_error("does_not_exist.onnx", VCC_ERR_IO, "cannot open", "No such file");
    expect_error("ext", VCC_ERR_IO, "not a regular file");
    {
        /* ctx->file NULL: the loader names the path itself */
        char path[1024], *diag = NULL;
        size_t len = 0;
        snprintf(path, sizeof path, "%s/empty.onnx", gendir);
        VccCtx ctx;
        vcc_ctx_init(&ctx, NULL);
        ctx.diag = open_memstream(&diag, &len);
        VccGraph *g = (VccGraph *)&ctx; /* must be overwritten with NULL */
        VccStatus st = vcc_onnx_load(&ctx, path, &g);
        fclose(ctx.diag);
        CHECK(st == VCC_ERR_PARSE && g == NULL && ctx.file == NULL, "ctx->file NULL: status %d", st);
        CHECK(diag && strncmp(diag, path, strlen(path)) == 0, "ctx->file NULL: diagnostic %s", diag);
        CHECK(ctx.nerrors == 1, "ctx->nerrors %d", ctx.nerrors);
        free(diag);
    }
    expect_error("empty.onnx", VCC_ERR_PARSE, "not a valid ONNX model (empty file)");
    expect_error("truncated.onnx", VCC_ERR_PARSE, "not a valid ONNX model (protobuf parse failed)");
    /* a text file either fails to parse or parses as unknown fields with no graph */
    expect_error("text.onnx", VCC_ERR_PARSE, "ONNX model");
    expect_error("nograph.onnx", VCC_ERR_PARSE, "not an ONNX model: it has no graph");

    expect_error("unsupported.onnx", VCC_ERR_UNSUPPORTED, "2 problems", "unsupported ops:",
                 "LpPool: '/lppool/LpPool'", "Hardmax: '/Hardmax_1'");
    expect_error("custom_domain.onnx", VCC_ERR_UNSUPPORTED, "Relu (domain 'com.example'): '/custom'");
    {
        Load l; /* one report: a single "error:" line heads it */
        load(&l, "unsupported.onnx", NULL, 0);
        int heads = 0;
        for (const char *p = l.diag; (p = strstr(p, "error:")); p++) heads++;
        CHECK(heads == 1, "unsupported.onnx: %d reports, expected 1: %s", heads, l.diag);
        unload(&l);
    }

    expect_error("raw_len.onnx", VCC_ERR_PARSE, "initializer 'w'", "raw_data has 20 bytes", "need 24");
    expect_error("typed_len.onnx", VCC_ERR_PARSE, "initializer 'w'", "float_data holds 5 values");
    expect_error("neg_dim.onnx", VCC_ERR_PARSE, "initializer 'w'", "dim 0 is negative");
    expect_error("overflow_dim.onnx", VCC_ERR_PARSE, "initializer 'w'", "overflow");
    expect_error("rank9.onnx", VCC_ERR_UNSUPPORTED, "initializer 'w'", "9 dims");
    expect_error("float16_init.onnx", VCC_ERR_UNSUPPORTED, "FLOAT16: initializer 'w'");
    expect_error("dup_init.onnx", VCC_ERR_PARSE, "initializer 'w' is defined twice");
    expect_error("dup_output.onnx", VCC_ERR_PARSE, "node '/relu2/Relu' (Relu): output 'r' is already defined");
    expect_error("undefined_input.onnx", VCC_ERR_PARSE, "node '/Add' (Add): input 'nowhere' is not defined");
    expect_error("undefined_output.onnx", VCC_ERR_PARSE, "graph output 'z' is not defined");
    expect_error("bad_attr.onnx", VCC_ERR_UNSUPPORTED, "Relu attribute 'tags':", "'/relu/Relu' (type STRINGS");
    /* subgraphs nested 32 deep load; deeper ones are refused before protobuf-c's recursive unpacking
     * (5000 deep overflowed its stack) */
    {
        Load l;
        load_ok(&l, "nested_if_32.onnx", NULL, 0);
        unload(&l);
    }
    expect_error("nested_if_33.onnx", VCC_ERR_UNSUPPORTED, "subgraphs nested more than 32 deep");
    expect_error("nested_if_5000.onnx", VCC_ERR_UNSUPPORTED, "subgraphs nested more than 32 deep");
    expect_error("float16_input.onnx", VCC_ERR_UNSUPPORTED, "FLOAT16: input 'x'");
    expect_error("constant_forms.onnx", VCC_ERR_UNSUPPORTED, "2 problems", "Constant attribute 'sparse_value':",
                 "'/sparse' (sparse tensors are not supported)", "Constant attribute 'value_string':",
                 "'/string' (string tensors are not supported)");
    expect_error("constant_opset11.onnx", VCC_ERR_UNSUPPORTED, "Constant attribute 'value_float':",
                 "'/c' (exists from opset 12; the model imports opset 11)");

    /* external data */
    expect_error("ext/ext_dotdot.onnx", VCC_ERR_PARSE, "initializer 'conv.weight'", "'../outside.bin'", "'..'");
    expect_error("ext/ext_dotdot2.onnx", VCC_ERR_PARSE, "initializer 'conv.weight'", "'..'");
    expect_error("ext/ext_abs.onnx", VCC_ERR_PARSE, "initializer 'conv.weight'", "absolute path");
    expect_error("ext/ext_dot.onnx", VCC_ERR_PARSE, "initializer 'conv.weight'", "'.' is the model's folder itself");
    expect_error("ext/ext_symlink.onnx", VCC_ERR_PARSE, "initializer 'conv.weight'", "'link.bin'",
                 "outside the model's folder");
    expect_error("ext/ext_short.onnx", VCC_ERR_PARSE, "initializer 'conv.weight'", "expected 1296");
    expect_error("ext/ext_badlen.onnx", VCC_ERR_PARSE, "initializer 'conv.weight'", "length 1292");
    expect_error("ext/ext_pastend.onnx", VCC_ERR_PARSE, "initializer 'conv.weight'", "past the end");
    expect_error("ext/ext_missing.onnx", VCC_ERR_IO, "initializer 'conv.weight'", "nope.bin", "No such file");
    expect_error("ext/ext_noloc.onnx", VCC_ERR_PARSE, "initializer 'conv.weight'", "no 'location'");
    expect_error("ext/ext_badoffset.onnx", VCC_ERR_PARSE, "initializer 'conv.weight'", "offset '-16'");
}

/* ConstantOfShape's value attribute: the node's second input, a CONST holding the value. */
/* Every ONNX op vcc compiles has its arity row (ir/ops/arity.def, which tools/gen_arity.py writes from
 * ir/ops.def's F rows): an op without one would have its nodes' input counts go unchecked. */
static void test_arity_rows(void) {
    for (int op = 0; op < VCC_OP_COUNT; op++) {
        if (!vcc_op_is_onnx((VccOp)op)) continue;
        int lo_in = -1, hi_in = -1, lo_out = -1, hi_out = -1;
        bool found = vcc_onnx_arity((VccOp)op, &lo_in, &hi_in, &lo_out, &hi_out);
        CHECK(found && 0 <= lo_in && lo_in <= hi_in && 1 <= lo_out && lo_out <= hi_out,
              "%s: arity row %s (%d..%d inputs, %d..%d outputs); run tools/gen_arity.py", vcc_op_name((VccOp)op),
              found ? "found" : "missing", lo_in, hi_in, lo_out, hi_out);
    }
}

static void test_constant_of_shape(void) {
    Load l;
    if (load_ok(&l, "constantofshape.onnx", NULL, 0)) {
        const VccNode *n = &l.g->nodes[0];
        CHECK(l.g->nnodes == 1 && n->op == VCC_OP_CONSTANT_OF_SHAPE && n->nin == 2 && n->nattrs == 0,
              "constantofshape: %d nodes, %d inputs, %d attributes", l.g->nnodes, n->nin, n->nattrs);
        CHECK(n->nin == 2 && n->in[1] == vcc_tensor_find(l.g, "cos.value"), "constantofshape: input 1 is not the value");
        check_shape(l.g, "cos.value", VCC_I32, VCC_T_CONST, 1, 1LL);
        check_data(l.g, "constantofshape", "cos.value");
    }
    unload(&l);
}

/* ------------------------------------------------------------------ mutated files never crash the loader */

/* Flip, overwrite, insert and cut bytes of good models (a fixed pseudo-random sequence) and load each
 * mutant: any status is fine, as long as the loader returns (run under valgrind or ASan to see reads
 * out of bounds) and an error comes with a diagnostic. */
static void test_mutants(int rounds) {
    static const char *const seeds[] = {"conv_raw.onnx", "conv_typed.onnx", "constant.onnx", "ext/conv_ext.onnx"};
    uint64_t state = 0x9e3779b97f4a7c15ull;
#define NEXT() (state = state * 6364136223846793005ull + 1442695040888963407ull, (unsigned)(state >> 33))
    int ok = 0, errors = 0;
    for (int r = 0; r < rounds; r++) {
        const char *seed = seeds[r % 4];
        char path[1024], mut[1024];
        snprintf(path, sizeof path, "%s/%s", gendir, seed);
        /* the mutant sits beside its seed so that external data locations still resolve */
        snprintf(mut, sizeof mut, "%s/%s", gendir, r % 4 == 3 ? "ext/mutant.onnx" : "mutant.onnx");
        FILE *f = fopen(path, "rb");
        if (!f) {
            CHECK(0, "cannot open %s", path);
            return;
        }
        static unsigned char buf[1 << 16];
        size_t n = fread(buf, 1, sizeof buf - 64, f);
        fclose(f);
        int edits = 1 + (int)(NEXT() % 4);
        for (int e = 0; e < edits && n > 0; e++) {
            size_t at = NEXT() % n;
            switch (NEXT() % 4) {
            case 0: buf[at] ^= (unsigned char)(1u << (NEXT() % 8)); break;
            case 1: buf[at] = (unsigned char)NEXT(); break;
            case 2: n = at; break;
            default:
                memmove(buf + at + 1, buf + at, n - at);
                buf[at] = (unsigned char)NEXT();
                n++;
                break;
            }
        }
        f = fopen(mut, "wb");
        if (!f) {
            CHECK(0, "cannot write %s", mut);
            return;
        }
        fwrite(buf, 1, n, f);
        fclose(f);
        Load l;
        load(&l, r % 4 == 3 ? "ext/mutant.onnx" : "mutant.onnx", NULL, 0);
        if (l.st == VCC_OK) {
            ok++;
            CHECK(l.g != NULL, "mutant %d: OK without a graph", r);
        } else {
            errors++;
            CHECK(l.g == NULL && l.diag_len > 0, "mutant %d: error %d without a diagnostic", r, l.st);
        }
        unload(&l);
        remove(mut);
    }
#undef NEXT
    printf("test_onnx: %d mutants: %d loaded, %d rejected\n", rounds, ok, errors);
}

/* ------------------------------------------------------------------ histogram mode (real models) */

static int histogram(const char *path, int nb, char **specs) {
    VccShapeBinding *b = calloc((size_t)(nb ? nb : 1), sizeof *b);
    for (int i = 0; i < nb; i++) {
        char *eq = strchr(specs[i], '=');
        if (!eq) return 2;
        *eq = 0;
        b[i].name = specs[i];
        for (char *p = eq + 1; *p && b[i].rank < 8; b[i].rank++) {
            b[i].dims[b[i].rank] = strtoll(p, &p, 10);
            if (*p == 'x') p++;
        }
    }
    VccCtx ctx;
    vcc_ctx_init(&ctx, path);
    ctx.shapes = b;
    ctx.nshapes = nb;
    VccGraph *g;
    VccStatus st = vcc_onnx_load(&ctx, path, &g);
    free(b);
    if (st != VCC_OK) return 1;
    int count[VCC_OP_COUNT] = {0};
    for (int i = 0; i < g->nnodes; i++) count[g->nodes[i].op]++;
    int kinds[16] = {0};
    int64_t param_bytes = 0;
    for (int i = 0; i < g->ntensors; i++) {
        kinds[g->tensors[i].kind]++;
        if (g->tensors[i].data) param_bytes += (int64_t)g->tensors[i].data_bytes;
    }
    printf("%s: opset %lld, %d nodes, %d tensors (%d input, %d param, %d const, %d act), %lld data bytes\n", path,
           (long long)g->opset, g->nnodes, g->ntensors, kinds[VCC_T_INPUT], kinds[VCC_T_PARAM], kinds[VCC_T_CONST],
           kinds[VCC_T_ACT], (long long)param_bytes);
    for (int op = 0; op < VCC_OP_COUNT; op++)
        if (count[op]) printf("  %-20s %d\n", vcc_op_name((VccOp)op), count[op]);
    vcc_graph_free(g);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 3 && strcmp(argv[1], "--histogram") == 0) return histogram(argv[2], argc - 3, argv + 3);
    if (argc != 2) {
        fprintf(stderr, "usage: test_onnx GENDIR | test_onnx --histogram MODEL [NAME=AxB...]\n");
        return 2;
    }
    gendir = argv[1];
    test_good();
    test_arity_rows();
    test_constant_of_shape();
    test_symbolic();
    test_bad();
    test_mutants(getenv("VCC_MUTANTS") ? atoi(getenv("VCC_MUTANTS")) : 400);
    printf("test_onnx: %d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
