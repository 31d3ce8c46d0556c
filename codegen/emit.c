#define _POSIX_C_SOURCE 200809L /* open_memstream */
/*
 * emit.c — write the trainer program for a planned graph.
 *
 * Requires: passes/memplan (every tensor has an arena offset).
 * Produces: one self-contained .c or .cu file:
 *   // build (from this file's folder): <command>
 *   header comment (model, arena breakdown)
 *   CUDA: #define VCC_PRECISION_TF32 0|1 (vcc --precision, read by runtime/cuda/base.cuh)
 *   inlined runtime: vcc_elem.h, vcc_io.h, vcc_cpu.h | vcc_cuda.cuh, vcc_state.h,
 *   vcc_main.h | vcc_forward_main.h
 *   conv descriptors, the persistent-state table, vcc_step() with one kernel call per scheduled node,
 *   main() -> vcc_trainer_main().
 * Every tensor is an arena address A + offset; views emit no code (they share their base's bytes).
 */
#include "codegen.h"
#include "poison.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Append s to buf (cap bytes, used *n) as it is. Returns 1 when it does not fit (buf then holds what did). */
static int put_text(char *buf, size_t cap, size_t *n, const char *s) {
    size_t w = strlen(s);
    if (*n + w >= cap) return 1;
    memcpy(buf + *n, s, w + 1);
    *n += w;
    return 0;
}

/* Append s to buf (cap bytes, used *n) as one shell word: unchanged when it has only characters no shell
 * treats specially, else in single quotes with each ' written as '\''; a file name (path true) starting
 * with '-' gets "./" so no compiler reads it as an option. Returns 1 when buf is full. */
static int put_shell_word(char *buf, size_t cap, size_t *n, const char *s, bool path) {
    bool plain = *s != 0;
    for (const char *c = s; *c; c++)
        plain &= (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || strchr("_./+-:=@%,", *c);
    char word[16384];
    size_t w = 0;
    if (path && s[0] == '-') w += (size_t)snprintf(word, sizeof word, "./");
    if (!plain) word[w++] = '\'';
    for (const char *c = s; *c && w + 8 < sizeof word; c++) {
        if (*c == '\'' && !plain) w += (size_t)snprintf(word + w, sizeof word - w, "'\\''");
        else word[w++] = *c;
    }
    if (!plain) word[w++] = '\'';
    word[w] = 0;
    if (w + 8 >= sizeof word || *n + w + 1 >= cap) return 1;
    memcpy(buf + *n, word, w + 1);
    *n += w;
    return 0;
}

const char *vcc_program_name(VccTarget target, const char *out_path, char *buf, size_t len) {
    const char *base = strrchr(out_path, '/');
    base = base ? base + 1 : out_path;
    const char *dot = strrchr(base, '.');
    int stem = dot ? (int)(dot - base) : (int)strlen(base);
    snprintf(buf, len, "%.*s%s", stem, base, target == VCC_TARGET_CUDA ? "_cuda" : "");
    return buf;
}

int vcc_program_path(VccTarget target, const char *out_path, char *buf, size_t len) {
    char prog[512];
    const char *base = strrchr(out_path, '/');
    vcc_program_name(target, out_path, prog, sizeof prog);
    int n = base ? snprintf(buf, len, "%.*s/%s", (int)(base - out_path), out_path, prog) : snprintf(buf, len, "%s", prog);
    return n < 0 || (size_t)n >= len;
}

bool vcc_uses_dnnl(const VccCtx *ctx, const VccGraph *g, VccTarget target) {
    if (target != VCC_TARGET_C || !ctx->cpu_conv_dnnl) return false;
    for (int k = 0; k < g->nnodes; k++)
        if (!strcmp(vcc_op_family(g->nodes[k].op), "conv")) return true;
    return false;
}

int vcc_build_command(VccTarget target, const char *out_path, VccBuildFrom from, bool dnnl, char *buf, size_t len) {
    char src[8192], exe[8192];
    const char *base = strrchr(out_path, '/');
    if (from == VCC_BUILD_IN_FILE_DIR || !base) {
        snprintf(src, sizeof src, "%s", base ? base + 1 : out_path);
        vcc_program_name(target, out_path, exe, sizeof exe);
    } else {
        if (strlen(out_path) >= sizeof src || vcc_program_path(target, out_path, exe, sizeof exe)) return 1;
        snprintf(src, sizeof src, "%s", out_path);
    }
    size_t n = 0;
    if (put_text(buf, len, &n, target == VCC_TARGET_CUDA ? "nvcc -O2 --default-stream per-thread "
                                                        : "cc -O2 -march=native -std=c11 -fopenmp ") ||
        put_shell_word(buf, len, &n, src, true) || put_text(buf, len, &n, " -o ") ||
        put_shell_word(buf, len, &n, exe, true))
        return 1;
    if (target == VCC_TARGET_CUDA) return put_text(buf, len, &n, " -lcudnn -lcublas");
    if (dnnl && put_text(buf, len, &n, " -ldnnl")) return 1;
#ifdef VCC_OPENBLAS_DIR
    /* OpenBLAS's OpenMP build (CMakeLists.txt: VCC_OPENBLAS_OPENMP_DIR): found at link time by -L, at run
     * time by the rpath, as its soname is the same as the system default's */
    if (put_text(buf, len, &n, " ") || put_shell_word(buf, len, &n, "-L" VCC_OPENBLAS_DIR, false) ||
        put_text(buf, len, &n, " ") || put_shell_word(buf, len, &n, "-Wl,-rpath," VCC_OPENBLAS_DIR, false))
        return 1;
#endif
    return put_text(buf, len, &n, " -lopenblas -lm");
}

#define VCC_STEP_CHUNK 128 /* scheduled nodes per generated step function */

/* A C string literal holding s. Names come from the model file (untrusted): quotes and backslashes are
 * escaped, '?' too (a "??/" trigraph would otherwise become a backslash under -std=c11), and every byte
 * outside printable ASCII is written as an octal escape. */
static void emit_c_string(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\' || c == '?') fprintf(f, "\\%c", c);
        else if (c < 0x20 || c >= 0x7f) fprintf(f, "\\%03o", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

/* Text for a C comment: untrusted names lose what could end or nest the comment or the line: the
 * first character of "*" "/" and "/" "*", control and non-ASCII bytes, '?' (trigraphs) and backslashes
 * become '_'. */
static void emit_comment_text(FILE *f, const char *s) {
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c < 0x20 || c >= 0x7f || c == '?' || c == '\\' || (c == '*' && s[1] == '/') || (c == '/' && s[1] == '*'))
            c = '_';
        fputc(c, f);
    }
}

/* Whether node n can run in a CUDA bf16 trainer with its tensors as stored: a node that reads or writes a
 * value kept in 2 bytes (VCC_B) needs its kernel's bfloat16 form, which every family but these has
 * (runtime/cuda/<family>.cuh: templates over float and __nv_bfloat16). */
static bool cuda_bf16_ok(const VccGraph *g, const VccNode *n) {
    bool half = false;
    for (int i = 0; i < n->nin; i++) half |= n->in[i] >= 0 && g->tensors[n->in[i]].bf16_bytes == 2;
    for (int i = 0; i < n->nout; i++) half |= n->out[i] >= 0 && g->tensors[n->out[i]].bf16_bytes == 2;
    if (!half) return true;
    const char *fam = vcc_op_family(n->op);
    if (!strcmp(fam, "compare") || !strcmp(fam, "scatter") || !strcmp(fam, "attention") || !strcmp(fam, "optim"))
        return false;
    return !vcc_node_typed(g, n) && n->op != VCC_OP_POW_GRAD && n->op != VCC_OP_MSE && n->op != VCC_OP_MSE_GRAD &&
           n->op != VCC_OP_CAST;
}

/* The model's node that node n was made for (autodiff's "<name>.grad", the optimizer's, a copy's): the
 * forward node whose name is n's up to its last '.', or NULL (n is one of the model's own, or none has
 * that name). */
static const VccNode *derived_from(const VccGraph *g, const VccNode *n) {
    if (n->phase == VCC_PHASE_FORWARD || !n->name) return NULL;
    const char *dot = strrchr(n->name, '.');
    if (!dot || dot == n->name) return NULL;
    size_t len = (size_t)(dot - n->name);
    for (int k = 0; k < g->nnodes; k++) {
        const VccNode *f = &g->nodes[k];
        if (f->phase == VCC_PHASE_FORWARD && f->name && strlen(f->name) == len && !strncmp(f->name, n->name, len))
            return f;
    }
    return NULL;
}

/* The code of scheduled node k: a comment naming it, then its family's emission (VccOpDef.emit). */
static VccStatus emit_node(VccEmit *e, int k) {
    const VccNode *n = &e->g->nodes[k];
    if (e->target == VCC_TARGET_CUDA && e->ctx->precision == VCC_PRECISION_BF16 && !cuda_bf16_ok(e->g, n)) {
        const VccNode *src = derived_from(e->g, n);
        char from[512] = "";
        if (src)
            snprintf(from, sizeof from, ", made for node '%s' (%s)", src->name, vcc_node_op(src));
        vcc_error(e->ctx, "node '%s' (%s%s): the CUDA trainer has no bfloat16 kernel for this op yet; compile with "
                  "--precision fp32 or tf32, or -o FILE.c (a C trainer computes the bf16 numbers)", n->name,
                  vcc_node_op(n), from);
        return VCC_ERR_UNSUPPORTED;
    }
    fprintf(e->f, "    /* %d: %s '", k, vcc_op_name(n->op));
    emit_comment_text(e->f, n->name);
    fputs("' */\n", e->f);
    const VccOpDef *def = vcc_op_def(n->op);
    if (!def->emit) {
        vcc_error(e->ctx, "node '%s' (%s): no code generator for this op", n->name, vcc_op_name(n->op));
        return VCC_ERR_UNSUPPORTED;
    }
    /* Empty tensors (a dim of 0: forward-only programs take them, as ONNX does). A node with outputs, none
     * of which has an element, has nothing to compute (a node without outputs, an optimizer update, writes
     * in place). One that makes elements out of an empty run-time input does so only where its op
     * defines it (VCC_OPF_EMPTY_IN); any other such node is refused rather than handed to a kernel that
     * assumes elements. An empty constant (Reshape's shape () of a scalar) is no empty data. */
    int nouts = 0, nonempty = 0;
    for (int i = 0; i < n->nout; i++)
        if (n->out[i] >= 0) {
            nouts++;
            nonempty += vcc_shape_numel(&e->g->tensors[n->out[i]].shape) != 0;
        }
    if (nouts > 0 && nonempty == 0) {
        fputs("    /* no elements */\n", e->f);
        return VCC_OK;
    }
    for (int i = 0; i < n->nin && !(def->flags & VCC_OPF_EMPTY_IN); i++)
        if (n->in[i] >= 0 && e->g->tensors[n->in[i]].kind != VCC_T_CONST &&
            vcc_shape_numel(&e->g->tensors[n->in[i]].shape) == 0) {
            vcc_error(e->ctx, "node '%s' (%s): input '%s' has no elements; vcc computes this op from non-empty "
                      "inputs only", n->name, vcc_node_op(n), e->g->tensors[n->in[i]].name);
            return VCC_ERR_UNSUPPORTED;
        }
    return def->emit(e, k);
}

/* --precision bf16 in a C trainer (float32 storage of bfloat16 values, passes/precision.c): after node k,
 * each of its outputs that holds bfloat16 values is rounded to them (a CastBF16 rounds itself). */
static void emit_bf16_rounding(VccEmit *e, int k) {
    const VccGraph *g = e->g;
    const VccNode *n = &g->nodes[k];
    if (e->ctx->precision != VCC_PRECISION_BF16 || e->target != VCC_TARGET_C || n->op == VCC_OP_CAST_BF16) return;
    for (int i = 0; i < n->nout; i++) {
        int t = n->out[i];
        if (t < 0 || !g->tensors[t].bf16_bytes || g->tensors[t].alias_of >= 0 || g->tensors[t].offset < 0 ||
            vcc_shape_numel(&g->tensors[t].shape) <= 0)
            continue;
        fprintf(e->f, "    bf16_round_forward(rt, %" PRId64 ", %s, %s);\n", vcc_emit_numel(e, t), vcc_emit_f32(e, t),
                vcc_emit_f32(e, t));
    }
}

static void emit_ints3(FILE *f, const int64_t *v, int n, int64_t fill) {
    fputc('{', f);
    for (int i = 0; i < 3; i++) fprintf(f, i ? ", %" PRId64 : "%" PRId64, i < n ? v[i] : fill);
    fputc('}', f);
}


/* The index of runtime file path ("cpu/base.h") in vcc_runtime_files, or -1. */
static int runtime_index(const char *path) {
    for (int i = 0; i < vcc_nruntime_files; i++)
        if (strcmp(vcc_runtime_files[i].path, path) == 0) return i;
    return -1;
}

/* The runtime files already inlined into one program (indices in vcc_runtime_files). */
typedef struct {
    int done[256];
    int ndone;
} Inlined;

/* Inline runtime file path into f: its text, with each `#include "rel"` line replaced by the runtime
 * file it names (rel resolved against path's folder): a signature list (proto/) every time it is
 * included (each family reads its list twice), any other file once per program. */
static void put_runtime(FILE *f, Inlined *in, const char *path) {
    int idx = runtime_index(path);
    VCC_ASSERT(idx >= 0);
    if (strncmp(path, "proto/", 6) != 0) {
        for (int i = 0; i < in->ndone; i++)
            if (in->done[i] == idx) return;
        VCC_ASSERT(in->ndone < (int)(sizeof in->done / sizeof in->done[0]));
        in->done[in->ndone++] = idx;
    }
    const char *text = vcc_runtime_files[idx].text;
    for (const char *line = text; *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) + 1 : strlen(line);
        if (strncmp(line, "#include \"", 10) != 0) {
            fwrite(line, 1, len, f);
            line += len;
            continue;
        }
        /* folder of path + rel, with "../" taken off the folder */
        char dir[128], full[256];
        const char *slash = strrchr(path, '/'), *rel = line + 10, *end = strchr(rel, '"');
        VCC_ASSERT(end && end < line + len);
        snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 0, path);
        while (strncmp(rel, "../", 3) == 0) {
            char *up = strrchr(dir, '/');
            if (up) *up = '\0';
            else dir[0] = '\0';
            rel += 3;
        }
        snprintf(full, sizeof full, "%s%s%.*s", dir, dir[0] ? "/" : "", (int)(end - rel), rel);
        put_runtime(f, in, full);
        line += len;
    }
}

static int state_role(const VccTensor *t) {
    switch (t->kind) {
    case VCC_T_PARAM: return 0;
    case VCC_T_BUFFER: return 1;
    case VCC_T_CONST: return 2;
    case VCC_T_GRAD: return 3;
    case VCC_T_OPT_STATE: return 4;
    default: return -1;
    }
}

static void emit_dims(FILE *f, const VccTensor *x) {
    fputc('{', f);
    for (int i = 0; i < x->shape.rank; i++) fprintf(f, i ? ", %" PRId64 : "%" PRId64, x->shape.dims[i]);
    fputs(x->shape.rank ? "}" : "0}", f);
}

/* A constant with a value known at compile time is part of the program, not of its state: it is
 * emitted as data and uploaded by vcc_init(), so weights and checkpoint files hold what PyTorch's
 * state_dict holds (parameters and buffers) and nothing else. */
static bool compiled_in(const VccTensor *x) { return x->kind == VCC_T_CONST && x->data != NULL; }

/* The compiled-in constants, one word per element of the constant's own size (uint8/32/64, in host
 * order, so the values survive any byte order), and vcc_init(), which uploads them into the arena once,
 * before the state is loaded. */
static void emit_consts(FILE *f, const VccGraph *g) {
    for (int t = 0; t < g->ntensors; t++) {
        const VccTensor *x = &g->tensors[t];
        size_t es = vcc_dtype_size(x->dtype);
        if (!compiled_in(x) || x->alias_of >= 0 || x->offset < 0 || x->data_bytes == 0 || !es) continue;
        size_t n = x->data_bytes / es;
        fprintf(f, "static const uint%zu_t vcc_const_%d[%zu] = { /* ", 8 * es, t, n);
        emit_comment_text(f, x->name);
        fputs(" */", f);
        for (size_t i = 0; i < n; i++) {
            const unsigned char *p = (const unsigned char *)x->data + es * i;
            uint64_t v = p[0];
            uint32_t w32;
            uint16_t w16;
            if (es == 8) memcpy(&v, p, 8);
            if (es == 4) memcpy(&w32, p, 4), v = w32;
            if (es == 2) memcpy(&w16, p, 2), v = w16;
            if (i % 8 == 0) fputs("\n   ", f);
            fprintf(f, " 0x%0*" PRIx64 "u,", (int)(2 * es), v);
        }
        fputs("\n};\n", f);
    }
    fputs("static void vcc_init(VccRt *rt, unsigned char *A) {\n    (void)rt; (void)A;\n", f);
    for (int t = 0; t < g->ntensors; t++) {
        const VccTensor *x = &g->tensors[t];
        if (!compiled_in(x) || x->alias_of >= 0 || x->offset < 0 || x->data_bytes == 0 || !vcc_dtype_size(x->dtype))
            continue;
        fprintf(f, "    vcc_upload(rt, A + %" PRId64 ", vcc_const_%d, %zu);\n", x->offset, t, x->data_bytes);
    }
    fputs("}\n\n", f);
}

/* The persistent tensors the program loads (parameters, BN statistics, constants whose value is not
 * compiled in) or saves (gradients, optimizer state). Returns the count. */
static int emit_state_table(FILE *f, const VccGraph *g) {
    fputs("/* name, offset, bytes, rank, dims, is_i64, role (0 param, 1 buffer, 2 const, 3 gradient, 4 optimizer state) */\n", f);
    fputs("static const VccStateInfo vcc_state[] = {\n", f);
    int nstate = 0;
    for (int t = 0; t < g->ntensors; t++) {
        const VccTensor *x = &g->tensors[t];
        int role = state_role(x);
        if (role < 0 || compiled_in(x) || x->alias_of >= 0 || vcc_tensor_bytes(x) == 0) continue;
        /* gradients are saved under their parameter's name */
        fputs("    {", f);
        emit_c_string(f, role == 3 && x->param_of >= 0 ? g->tensors[x->param_of].name : x->name);
        fprintf(f, ", %" PRId64 ", %" PRId64 ", %d, ", x->offset, vcc_tensor_bytes(x), x->shape.rank);
        emit_dims(f, x);
        fprintf(f, ", %d, %d},\n", x->dtype == VCC_I64, role);
        nstate++;
    }
    if (!nstate) fputs("    {NULL, 0, 0, 0, {0}, 0, 0},\n", f); /* C has no empty initializer lists */
    fputs("};\n\n", f);
    return nstate;
}

/* The .npy dtype code of a graph input or output of dtype dt. */
static const char *npy_code(VccDType dt) {
    switch (dt) {
    case VCC_I64: return "i8";
    case VCC_I32: return "i4";
    case VCC_F64: return "f8";
    case VCC_BOOL: return "b1";
    case VCC_I8: return "i1";
    case VCC_I16: return "i2";
    case VCC_U8: return "u1";
    case VCC_U16: return "u2";
    case VCC_U32: return "u4";
    case VCC_U64: return "u8";
    default: return "f4";
    }
}

/* Forward-only programs: the graph inputs and outputs (read from and written to .npy files). */
static void emit_io_tables(FILE *f, const VccGraph *g) {
    const int *lists[2] = {g->inputs, g->outputs};
    int counts[2] = {g->ninputs, g->noutputs};
    const char *names[2] = {"vcc_inputs", "vcc_outputs"};
    for (int l = 0; l < 2; l++) {
        fprintf(f, "/* name, offset, bytes, rank, dims, .npy dtype */\nstatic const VccIoInfo %s[] = {\n", names[l]);
        for (int i = 0; i < counts[l]; i++) {
            const VccTensor *x = &g->tensors[lists[l][i]];
            fputs("    {", f);
            emit_c_string(f, x->name);
            /* an empty output (a Slice of nothing) has no bytes and no offset: 0 there, as size_t wants */
            fprintf(f, ", %" PRId64 ", %" PRId64 ", %d, ", x->offset < 0 ? 0 : x->offset, vcc_tensor_bytes(x),
                    x->shape.rank);
            emit_dims(f, x);
            fprintf(f, ", \"%s\"},\n", npy_code(x->dtype));
        }
        if (!counts[l]) fputs("    {NULL, 0, 0, 0, {0}, NULL},\n", f);
        fputs("};\n", f);
    }
    fputs("\n", f);
}

/* The evaluation program reads clips (N, C, ...) and writes logits (N, K): one float input, one float
 * output of that form. */
static VccStatus check_eval_io(VccCtx *ctx, const VccGraph *g) {
    const VccTensor *x = g->ninputs == 1 ? &g->tensors[g->inputs[0]] : NULL;
    const VccTensor *y = g->noutputs == 1 ? &g->tensors[g->outputs[0]] : NULL;
    if (x && y && x->dtype == VCC_F32 && x->shape.rank >= 2 && y->dtype == VCC_F32 && y->shape.rank == 2 &&
        y->shape.dims[0] == x->shape.dims[0])
        return VCC_OK;
    vcc_error(ctx, "--eval needs one float input, the clip batch (N, C, ...), and one output, the logits (N, K); the "
              "model has %d input%s and %d output%s of other forms (--forward-only evaluates any graph)",
              g->ninputs, g->ninputs == 1 ? "" : "s", g->noutputs, g->noutputs == 1 ? "" : "s");
    return VCC_ERR_UNSUPPORTED;
}

/* Whether the graph's updates are AdamW's (else SGD's): read from the graph, which may come from a .vir dump
 * compiled without --optimizer. */
static bool graph_adamw(const VccGraph *g) {
    for (int k = 0; k < g->nnodes; k++)
        if (g->nodes[k].op == VCC_OP_ADAMW) return true;
    return false;
}

VccStatus vcc_emit_trainer(VccCtx *ctx, const VccGraph *g, VccTarget target, const char *build_cmd,
                           const char *weights_name, FILE *f) {
    if (ctx->eval && check_eval_io(ctx, g) != VCC_OK) return VCC_ERR_UNSUPPORTED;
    VccEmit e;
    memset(&e, 0, sizeof e);
    e.ctx = ctx;
    e.g = g;
    e.target = target;
    /* the step body goes to a memory buffer first: conv descriptors are collected while emitting it */
    char *body = NULL;
    size_t body_len = 0;
    e.f = open_memstream(&body, &body_len);
    if (!e.f) {
        vcc_error(ctx, "cannot open a memory stream");
        return VCC_ERR_IO;
    }
    /* the step is split into functions of VCC_STEP_CHUNK nodes: C compilers take time superlinear in a
     * function's length, and a long graph would otherwise be one function of thousands of calls */
    VccStatus st = VCC_OK;
    int nparts = 0;
    for (int k = 0; k < g->nnodes && !st; k++) {
        if (k % VCC_STEP_CHUNK == 0) {
            if (k) fputs("}\n\n", e.f);
            fprintf(e.f, "static void vcc_step_%d(VccRt *rt, unsigned char *A, const VccOptim *o) {\n"
                         "    (void)rt; (void)A; (void)o;\n", nparts++);
        }
        bool poison = target == VCC_TARGET_C; /* -DVCC_POISON checks the plan around each node */
        if (poison) fprintf(e.f, "    VCC_POISON_PRE(%d);\n", k);
        st = emit_node(&e, k);
        if (!st) emit_bf16_rounding(&e, k);
        if (poison) fprintf(e.f, "    VCC_POISON_POST(%d);\n", k);
    }
    if (nparts) fputs("}\n\n", e.f);
    fclose(e.f);
    if (st) {
        free(body);
        free(e.convs);
        return st;
    }

    fprintf(f, "// build (from this file's folder): %s\n", build_cmd);
    fputs("#define _POSIX_C_SOURCE 200809L\n", f);
    char title[160];
    snprintf(title, sizeof title, "Training program (forward%s, backward, %s)",
             ctx->loss == VCC_LOSS_MSE     ? ", mean squared error"
             : ctx->loss == VCC_LOSS_GRAPH ? " with the model's own loss"
                                           : ", softmax cross-entropy",
             graph_adamw(g) ? "AdamW" : "SGD with momentum");
    fprintf(f, "/*\n * %s,\n * generated by vcc from ",
            ctx->forward_only ? "Forward program (one evaluation of the model)"
            : ctx->eval       ? "Evaluation program (the model in inference form over a data set)"
                              : title);
    emit_comment_text(f, ctx->file ? ctx->file : "an ONNX model");
    fprintf(f,
            ": %d scheduled steps, every tensor in one arena.\n *\n"
            " * VCC_ARENA_BYTES = %" PRId64 " (%.1f MiB)\n"
            " *   persistent region: %" PRId64 " bytes (parameters, BN running statistics, optimizer state, and\n"
            " *                      the gradients when compiled with --keep-grads)\n"
            " *   planned region:    %" PRId64 " bytes (activations, saved tensors, temporaries, workspaces)\n"
            " *   lower bound:       %" PRId64 " bytes (largest sum of live bytes at one step)\n"
            " *   no reuse:          %" PRId64 " bytes (every tensor in its own buffer)\n",
            g->nnodes, g->arena_bytes, (double)g->arena_bytes / 1048576.0, g->persistent_bytes, g->planned_bytes,
            g->lower_bound_bytes, g->no_reuse_bytes);
    if (g->schedule_peak_bytes > 0)
        fprintf(f, " *   schedule peak:     %" PRId64 " bytes before in-place reuse (%" PRId64 " in the order kept from the\n"
                   " *                      graph; the memory-aware order is used when it is lower)\n",
                g->schedule_peak_bytes, g->given_order_peak_bytes);
    fputs(" */\n", f);
    fputs("#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n\n", f);
    if (vcc_uses_dnnl(ctx, g, target))
        fputs("/* vcc --cpu-conv dnnl: convolutions through oneDNN where it fits the workspace (runtime/cpu/conv_dnnl.h) */\n"
              "#define VCC_CONV_DNNL 1\n\n", f);
    char prog[512];
    vcc_program_name(target, weights_name, prog, sizeof prog); /* weights_name: "<stem>.safetensors" */
    fputs("#define VCC_PROGRAM ", f);
    emit_c_string(f, prog);
    fputs(" /* the binary's name; error lines begin with argv[0]'s basename */\n\n", f);
    /* vcc --precision: the float32 arithmetic of the CUDA runtime's cuDNN and cuBLAS calls (cuda/base.cuh) */
    if (ctx->precision == VCC_PRECISION_BF16)
        fprintf(f, "#define VCC_PRECISION_BF16 1 /* vcc --precision bf16: activations and gradients hold bfloat16 values "
                "(%s) */\n\n", target == VCC_TARGET_C ? "float32 storage" : "__nv_bfloat16, 2 bytes each");
    if (target == VCC_TARGET_CUDA)
        fprintf(f, "#define VCC_PRECISION_TF32 %d /* vcc --precision %s: %s */\n\n", ctx->precision == VCC_PRECISION_TF32,
                vcc_precision_name(ctx->precision),
                ctx->precision == VCC_PRECISION_TF32   ? "TF32 tensor cores allowed in convolutions and matrix products"
                : ctx->precision == VCC_PRECISION_BF16 ? "bfloat16 operands on tensor cores, float32 ones plain FP32"
                                                       : "plain FP32 math, no TF32");
    /* nvcc reports runtime functions this model does not call (#177); the C compilers do not warn
     * about unused static inline functions. The suppression covers the runtime section only. */
    if (target == VCC_TARGET_CUDA)
        fputs("#pragma nv_diagnostic push\n#pragma nv_diag_suppress 177\n", f);
    Inlined inl = {{0}, 0};
    put_runtime(f, &inl, "elem/base.h");
    put_runtime(f, &inl, "vcc_io.h");
    put_runtime(f, &inl, target == VCC_TARGET_CUDA ? "cuda/base.cuh" : "cpu/base.h");
    /* the kernels of the op families the schedule uses, in ops.def order */
    for (int op = 0; op < VCC_OP_COUNT; op++) {
        bool used = false;
        for (int k = 0; k < g->nnodes && !used; k++) used = g->nodes[k].op == (VccOp)op;
        char fam[160];
        snprintf(fam, sizeof fam, target == VCC_TARGET_CUDA ? "cuda/%s.cuh" : "cpu/%s.h", vcc_op_family((VccOp)op));
        if (used && runtime_index(fam) >= 0) put_runtime(f, &inl, fam);
    }
    /* the typed kernels, when a node's data are not float32 */
    bool typed = false;
    for (int k = 0; k < g->nnodes && !typed; k++) typed = vcc_node_typed(g, &g->nodes[k]);
    if (typed) put_runtime(f, &inl, target == VCC_TARGET_CUDA ? "cuda/typed.cuh" : "cpu/typed.h");
    put_runtime(f, &inl, "vcc_state.h");
    if (target == VCC_TARGET_C) put_runtime(f, &inl, "vcc_poison.h");
    put_runtime(f, &inl, ctx->forward_only ? "vcc_forward_main.h" : ctx->eval ? "vcc_eval_main.h" : "vcc_main.h");
    if (target == VCC_TARGET_CUDA) fputs("#pragma nv_diagnostic pop\n", f);

    fprintf(f, "\n/* ---- generated: arena layout, conv descriptors, persistent state ---- */\n\n");
    fprintf(f, "#define VCC_ARENA_BYTES ((size_t)%" PRId64 ")\n", g->arena_bytes);
    fputs("#define VCC_F(off) ((float *)(A + (off)))\n", f);
    if (target == VCC_TARGET_CUDA && ctx->precision == VCC_PRECISION_BF16)
        fputs("#define VCC_B(off) ((__nv_bfloat16 *)(A + (off)))\n", f);
    fputc('\n', f);
    if (e.nconv) {
        fprintf(f, "/* nsp, N, C, K, G, in, out, kernel, stride, dilation, pad_begin, pad_end, backend */\n");
        fprintf(f, "static VccConvDesc vcc_conv[%d] = {\n", e.nconv);
        for (int i = 0; i < e.nconv; i++) {
            const VccConvParams *p = &e.convs[i];
            fprintf(f, "    {%d, %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", ", p->nsp, p->N, p->C, p->K, p->group);
            emit_ints3(f, p->in, p->nsp, 1);
            fputs(", ", f);
            emit_ints3(f, p->out, p->nsp, 1);
            fputs(", ", f);
            emit_ints3(f, p->kernel, p->nsp, 1);
            fputs(", ", f);
            emit_ints3(f, p->stride, p->nsp, 1);
            fputs(", ", f);
            emit_ints3(f, p->dilation, p->nsp, 1);
            fputs(", ", f);
            emit_ints3(f, p->pad_begin, p->nsp, 0);
            fputs(", ", f);
            emit_ints3(f, p->pad_end, p->nsp, 0);
            fputs(", NULL},\n", f);
        }
        fputs("};\n\n", f);
    }
    if (ctx->forward_only || ctx->eval) emit_io_tables(f, g);
    emit_consts(f, g);
    int nstate = emit_state_table(f, g);
    if (target == VCC_TARGET_C) vcc_emit_poison_plan(f, g);
    fwrite(body, 1, body_len, f);
    free(body);
    fputs("VCC_STEP_FN void vcc_step(VccRt *rt, unsigned char *A, const VccOptim *o) {\n", f);
    fputs("    (void)rt; (void)A; (void)o;\n", f);
    if (target == VCC_TARGET_C) fputs("    VCC_POISON_BEGIN();\n", f);
    for (int i = 0; i < nparts; i++) fprintf(f, "    vcc_step_%d(rt, A, o);\n", i);
    fputs("}\n\n", f);

    if (ctx->forward_only) {
        fputs("int main(int argc, char **argv) {\n    static const VccForwardModel m = {\n        VCC_ARENA_BYTES, ", f);
        emit_c_string(f, weights_name);
        fprintf(f, ", vcc_inputs, vcc_outputs, %d, %d, vcc_state, %d, vcc_init, vcc_step};\n", g->ninputs, g->noutputs,
                nstate);
        fputs("    return vcc_forward_main(argc, argv, &m);\n}\n", f);
        free(e.convs);
        return VCC_OK;
    }
    if (ctx->eval) {
        fputs("int main(int argc, char **argv) {\n    static const VccEvalModel m = {\n        VCC_ARENA_BYTES, ", f);
        emit_c_string(f, weights_name);
        fprintf(f, ", &vcc_inputs[0], &vcc_outputs[0], vcc_state, %d, vcc_init, vcc_step};\n", nstate);
        fputs("    return vcc_eval_main(argc, argv, &m);\n}\n", f);
        free(e.convs);
        return VCC_OK;
    }
    const VccTensor *in = &g->tensors[g->data_input];
    const VccNode *loss_node = &g->nodes[g->tensors[g->loss].producer];
    /* the class count checks the labels of softmax cross-entropy; other losses read labels unchecked */
    int64_t classes = loss_node->op == VCC_OP_SOFTMAXXENT ? g->tensors[loss_node->in[0]].shape.dims[1] : 0;
    const char *what = loss_node->op == VCC_OP_SOFTMAXXENT ? "softmax cross-entropy"
                       : loss_node->op == VCC_OP_MSE       ? "mean squared error"
                                                           : "the loss the model computes";
    fputs("int main(int argc, char **argv) {\n    static const VccModel m = {\n", f);
    fprintf(f, "        VCC_ARENA_BYTES, ");
    emit_c_string(f, weights_name);
    fprintf(f, ", %d, {", in->shape.rank);
    for (int i = 0; i < in->shape.rank; i++) fprintf(f, i ? ", %" PRId64 : "%" PRId64, in->shape.dims[i]);
    fprintf(f, "},\n        %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", (float)%.9g,\n", in->offset,
            g->label >= 0 ? g->tensors[g->label].offset : (int64_t)0, g->tensors[g->loss].offset, classes,
            (double)ctx->momentum);
    fprintf(f, "        vcc_state, %d, vcc_init, vcc_step,\n", nstate);
    const VccTensor *tg = g->target >= 0 ? &g->tensors[g->target] : NULL;
    fprintf(f, "        %d, %d, {", g->label >= 0, tg ? tg->shape.rank : 0);
    for (int i = 0; tg && i < tg->shape.rank; i++) fprintf(f, i ? ", %" PRId64 : "%" PRId64, tg->shape.dims[i]);
    bool kept = false; /* vcc --keep-grads: the gradients outlive the step, a GradNormClip reads them */
    for (int k = 0; k < g->nnodes && !kept; k++) kept = g->nodes[k].op == VCC_OP_GRAD_NORM;
    /* the step draws new random numbers each step (Dropout, Random*Like, attention's dropout): its kernels
     * take the step number, so one CUDA graph cannot replay it (the trainer's --cuda-graph) */
    bool draws = false;
    for (int k = 0; k < g->nnodes && !draws; k++) {
        const char *fam = vcc_op_family(g->nodes[k].op);
        draws = !strcmp(fam, "dropout") || (!strcmp(fam, "attention") && vcc_attr_float(&g->nodes[k], "ratio", 0.0f) > 0.0f);
    }
    fprintf(f, "%s}, %" PRId64 ", \"%s\", %d, %d, %d};\n", tg && tg->shape.rank ? "" : "0", tg ? tg->offset : (int64_t)0,
            what, graph_adamw(g) ? 1 : 0, kept ? 1 : 0, draws ? 1 : 0);
    fputs("    return vcc_trainer_main(argc, argv, &m);\n}\n", f);
    free(e.convs);
    return VCC_OK;
}
