/*
 * vir.c — the .vir reader: the graph builder behind the grammar (frontend/vir.y) and its entry points.
 *
 * Requires: text in the form vcc_print_graph writes (ir/print.c). Produces: the graph it describes, so
 * that vcc_print_graph(parse(x)) == x byte for byte (see frontend/frontend.h for what is carried,
 * what is reconstructed and what a .vir file cannot carry: weights, dim_param names).
 *
 * The grammar actions add tensors and nodes as their lines are read (a node may only read tensors
 * declared or produced above it, as the verifier requires), collect plan lines, and after the last
 * line finish() checks the plan as a whole, reconstructs what the text implies and puts the tensors
 * in plan order. Problems are reported with their position ("file.vir:12:7: error: ...") and the
 * reader goes on to the end of the file after a semantic error (a syntax error ends it); any error
 * means no graph.
 */
#define _POSIX_C_SOURCE 200809L
#include "frontend.h"
#include "ops/ops.h"
#include "vir.tab.h"
#define YYSTYPE VIR_STYPE
#define YYLTYPE VirLoc
#include "vir.lex.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#define VIR_MAX_ERRORS 20

struct VirValue {
    VccAttrType type; /* VCC_A_INTS for an empty list */
    int64_t i;
    float f;
    char *s;
    int64_t *ints;
    float *floats;
    int n, cap;
};

/* What a plan line said about one tensor (indexed by the tensor's index while reading). */
typedef struct {
    int line;              /* 0: no plan line yet */
    VirLoc loc;            /* of the tensor's name on the plan line */
    const char *category;  /* static string, one of kCategories */
    VirLoc offset_loc;
} VirPlanInfo;

struct VirParser {
    VccCtx *ctx;
    const char *fname;
    VccGraph *g;
    VccStatus status; /* of the first problem */
    int nerrors;
    bool lexerr;      /* the scanner reported the token that ends the parse */
    /* tensor name -> index (open addressing, -1 = empty) and where each tensor was defined */
    int *htab;
    size_t hcap;
    int *def_line;
    int cap_def;
    /* the node being read */
    int *in, nin, cap_in;
    int *out, nout, cap_out;
    VccAttr *attrs;
    int nattrs, cap_attrs;
    char *node_name;
    VccOp node_op;
    VccPhase node_phase;
    bool node_ok;
    int nodes_read;
    /* plan */
    VirPlanInfo *plan;
    int cap_plan;
    int *plan_order, nplan, cap_plan_order; /* tensor indices in plan-line order */
    int view_of, inplace_of; /* of the plan line being read; -1 none, -2 given but bad */
    bool has_arena;
    VirLoc arena_loc;
};

static const char *const kCategories[] = {"parameter", "gradient",   "optimizer_state",
                                          "workspace", "activation", "saved_activation"};

/* ------------------------------------------------------------------ diagnostics */

static void vreport(VirParser *p, const VirLoc *loc, VccStatus st, const char *fmt, va_list ap) {
    if (!p->status) p->status = st;
    p->nerrors++;
    if (p->nerrors > VIR_MAX_ERRORS) return;
    char msg[1024], where[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (p->nerrors == VIR_MAX_ERRORS) snprintf(msg + strlen(msg), sizeof msg - strlen(msg), " (too many errors)");
    snprintf(where, sizeof where, "%s:%d:%d", p->fname, loc->first_line, loc->first_column);
    const char *saved = p->ctx->file;
    p->ctx->file = where;
    vcc_error(p->ctx, "%s", msg);
    p->ctx->file = saved;
}

void vir_report(VirParser *p, const VirLoc *loc, VccStatus st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vreport(p, loc, st, fmt, ap);
    va_end(ap);
}

void vir_lex_error(VirParser *p, const VirLoc *loc, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vreport(p, loc, VCC_ERR_PARSE, fmt, ap);
    va_end(ap);
    p->lexerr = true;
}

void vir_syntax_error(VirParser *p, const VirLoc *loc, const char *msg) {
    if (!p->lexerr) vir_report(p, loc, VCC_ERR_PARSE, "%s", msg);
    else if (!p->status) p->status = VCC_ERR_PARSE;
}

/* ------------------------------------------------------------------ tensor names */

/* Whether g has a CastBF16 node (a dump of a --precision bf16 program; nodes come before plan lines). */
static bool has_bf16_casts(const VccGraph *g) {
    for (int k = 0; k < g->nnodes; k++)
        if (g->nodes[k].op == VCC_OP_CAST_BF16) return true;
    return false;
}

static size_t hash_name(const char *s) {
    size_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static void htab_insert(VirParser *p, int t) {
    size_t mask = p->hcap - 1, h = hash_name(p->g->tensors[t].name) & mask;
    while (p->htab[h] >= 0) h = (h + 1) & mask;
    p->htab[h] = t;
}

static int find_tensor(const VirParser *p, const char *name) {
    if (!p->hcap) return -1;
    size_t mask = p->hcap - 1;
    for (size_t h = hash_name(name) & mask; p->htab[h] >= 0; h = (h + 1) & mask)
        if (strcmp(p->g->tensors[p->htab[h]].name, name) == 0) return p->htab[h];
    return -1;
}

/* Add a tensor named name (owned by the caller) unless the name is taken; returns its index or -1. */
static int define_tensor(VirParser *p, const char *name, const VirLoc *loc, const VirType *ty, VccTensorKind kind) {
    int prev = find_tensor(p, name);
    if (prev >= 0) {
        vir_report(p, loc, VCC_ERR_PARSE, "tensor '%s' is already defined on line %d", name, p->def_line[prev]);
        return -1;
    }
    int t = vcc_tensor_add(p->g, name, ty->dt, &ty->shape, kind);
    if ((size_t)p->g->ntensors * 2 > p->hcap) {
        free(p->htab);
        p->hcap = p->hcap ? p->hcap * 2 : 256;
        p->htab = vcc_malloc(sizeof(int) * p->hcap);
        for (size_t i = 0; i < p->hcap; i++) p->htab[i] = -1;
        for (int i = 0; i < p->g->ntensors; i++) htab_insert(p, i);
    } else {
        htab_insert(p, t);
    }
    if (t >= p->cap_def) {
        p->cap_def = p->cap_def ? 2 * p->cap_def : 256;
        p->def_line = vcc_realloc(p->def_line, sizeof(int) * (size_t)p->cap_def);
    }
    p->def_line[t] = loc->first_line;
    return t;
}

/* The tensor named name, or -1 after reporting that there is none. */
static int use_tensor(VirParser *p, const char *name, const VirLoc *loc) {
    int t = find_tensor(p, name);
    if (t < 0) vir_report(p, loc, VCC_ERR_PARSE, "undefined tensor '%s'", name);
    return t;
}

/* ------------------------------------------------------------------ header, declarations, types */

void vir_opset(VirParser *p, int64_t v) { p->g->opset = v; }

VirType vir_dims_add(VirParser *p, VirType t, int64_t d, const VirLoc *loc) {
    if (t.bad) return t;
    if (t.shape.rank == VCC_MAX_RANK) {
        vir_report(p, loc, VCC_ERR_UNSUPPORTED, "more than %d dims", VCC_MAX_RANK);
        t.bad = true;
    } else if (d < -1) {
        vir_report(p, loc, VCC_ERR_SHAPE, "dim %" PRId64 " is negative (-1 is the only unknown dim)", d);
        t.bad = true;
    } else {
        t.shape.dims[t.shape.rank++] = d;
    }
    return t;
}

VirType vir_type(VirParser *p, char *dtype, const VirLoc *dloc, VirType dims) {
    VirType t = dims;
    t.dt = VCC_DT_UNDEF;
    if (dtype) {
        for (VccDType dt = VCC_F32; dt <= VCC_DT_LAST && t.dt == VCC_DT_UNDEF; dt++)
            if (strcmp(dtype, vcc_dtype_name(dt)) == 0) t.dt = dt;
        if (t.dt == VCC_DT_UNDEF) {
            vir_report(p, dloc, VCC_ERR_UNSUPPORTED,
                       "unknown dtype '%s' (f32, f64, i8, i16, i32, i64, u8, u16, u32, u64, bool or ? for not inferred yet)", dtype);
            t.bad = true;
        }
        free(dtype);
    }
    if (t.dt == VCC_DT_UNDEF && t.shape.rank == 0)
        for (int i = 0; i < VCC_MAX_RANK; i++) t.shape.dims[i] = -1; /* the frontend's "not inferred yet" */
    /* the byte size must fit in int64 (vcc_tensor_bytes multiplies it out) */
    int64_t n = 8;
    for (int i = 0; i < t.shape.rank && !t.bad; i++) {
        int64_t d = t.shape.dims[i];
        if (d > 0 && n > INT64_MAX / d) {
            vir_report(p, dloc, VCC_ERR_SHAPE, "tensor type has more bytes than int64 counts");
            t.bad = true;
        } else if (d >= 0) {
            n *= d ? d : 1;
        }
    }
    if (t.bad) { /* reported; the tensor still gets defined (no cascade of "undefined"), typed harmlessly */
        t.dt = VCC_DT_UNDEF;
        t.shape.rank = 0;
        for (int i = 0; i < VCC_MAX_RANK; i++) t.shape.dims[i] = -1;
    }
    return t;
}

static bool kind_from_name(const char *s, VccTensorKind *k) {
    for (int i = VCC_T_INPUT; i <= VCC_T_GRAD_PLANNED; i++)
        if (strcmp(s, vcc_tensor_kind_name((VccTensorKind)i)) == 0) {
            *k = (VccTensorKind)i;
            return true;
        }
    return false;
}

void vir_declare(VirParser *p, char *kind, const VirLoc *kloc, char *name, const VirLoc *nloc, VirType ty) {
    VccTensorKind k = VCC_T_ACT;
    if (!kind_from_name(kind, &k))
        vir_report(p, kloc, VCC_ERR_PARSE,
                   "unknown tensor kind '%s' (input, label, param, buffer, const, act, loss, grad, grad_temp, "
                   "opt_state, workspace, grad_planned)",
                   kind);
    define_tensor(p, name, nloc, &ty, k);
    free(kind);
    free(name);
}

/* A hex digit's value, or -1. */
static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

void vir_declare_data(VirParser *p, char *kind, const VirLoc *kloc, char *name, const VirLoc *nloc, VirType ty,
                      char *key, const VirLoc *keyloc, char *hex, const VirLoc *hloc) {
    VccTensorKind k = VCC_T_ACT;
    int64_t bytes = 0;
    size_t len = strlen(hex);
    if (strcmp(key, "data") != 0)
        vir_report(p, keyloc, VCC_ERR_PARSE, "expected 'data=' (a constant's value), found '%s='", key);
    else if (!kind_from_name(kind, &k) || k != VCC_T_CONST)
        vir_report(p, kloc, VCC_ERR_PARSE, "data= gives the value of a const; '%s' is declared '%s'", name, kind);
    else if (ty.bad || ty.dt == VCC_DT_UNDEF || !vcc_shape_checked_bytes(&ty.shape, ty.dt, &bytes))
        vir_report(p, nloc, VCC_ERR_PARSE, "const '%s' with data= needs a known type and shape", name);
    else if (len != 2 * (size_t)bytes)
        vir_report(p, hloc, VCC_ERR_PARSE, "data= of const '%s' has %zu hex digits; its type takes %" PRId64
                   " bytes (%" PRId64 " digits)", name, len, bytes, 2 * bytes);
    else {
        unsigned char *d = vcc_malloc(bytes ? (size_t)bytes : 1);
        for (int64_t i = 0; i < bytes && d; i++) {
            int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
            if (hi < 0 || lo < 0) {
                vir_report(p, hloc, VCC_ERR_PARSE, "data= of const '%s' is not hex digits (at digit %" PRId64 ")",
                           name, 2 * i + (hi < 0 ? 0 : 1));
                free(d);
                d = NULL;
            } else
                d[i] = (unsigned char)(hi << 4 | lo);
        }
        int t = d ? define_tensor(p, name, nloc, &ty, k) : -1;
        if (t >= 0) {
            p->g->tensors[t].data = d;
            p->g->tensors[t].data_bytes = (size_t)bytes;
        } else
            free(d);
    }
    free(kind);
    free(name);
    free(key);
    free(hex);
}

/* ------------------------------------------------------------------ nodes */

static void push_int(int **a, int *n, int *cap, int v) {
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 8;
        *a = vcc_realloc(*a, sizeof(int) * (size_t)*cap);
    }
    (*a)[(*n)++] = v;
}

void vir_node_input(VirParser *p, char *name, const VirLoc *loc) {
    push_int(&p->in, &p->nin, &p->cap_in, name ? use_tensor(p, name, loc) : -1);
    free(name);
}

void vir_node_output(VirParser *p, char *name, const VirLoc *loc, VirType ty) {
    push_int(&p->out, &p->nout, &p->cap_out, name ? define_tensor(p, name, loc, &ty, VCC_T_ACT) : -1);
    free(name);
}

static void free_attr(VccAttr *a) {
    free(a->name);
    free(a->ints);
    free(a->floats);
    free(a->s);
}

void vir_node_attr(VirParser *p, char *name, const VirLoc *loc, VirValue *v) {
    for (int i = 0; i < p->nattrs; i++)
        if (strcmp(p->attrs[i].name, name) == 0) {
            vir_report(p, loc, VCC_ERR_PARSE, "attribute '%s' is given twice", name);
            free(name);
            vir_value_free(v);
            return;
        }
    if (p->nattrs == p->cap_attrs) {
        p->cap_attrs = p->cap_attrs ? 2 * p->cap_attrs : 8;
        p->attrs = vcc_realloc(p->attrs, sizeof *p->attrs * (size_t)p->cap_attrs);
    }
    VccAttr *a = &p->attrs[p->nattrs++];
    memset(a, 0, sizeof *a);
    a->name = name;
    a->type = v->type;
    a->i = v->i;
    a->f = v->f;
    a->s = v->s;
    a->n = v->n;
    a->ints = v->ints;
    a->floats = v->floats;
    if ((a->type == VCC_A_INTS || a->type == VCC_A_FLOATS) && !a->ints && !a->floats) {
        /* an empty list: vcc_attr_set_ints's representation (a non-NULL array, n = 0) */
        a->ints = vcc_malloc(sizeof(int64_t));
    }
    free(v);
}

static bool phase_from_name(const char *s, VccPhase *ph) {
    static const char *const names[] = {"forward", "loss", "backward", "update"};
    for (int i = 0; i < 4; i++)
        if (strcmp(s, names[i]) == 0) {
            *ph = (VccPhase)i;
            return true;
        }
    return false;
}

static VccOp op_from_name(const char *s) {
    for (int i = 0; i < VCC_OP_COUNT; i++)
        if (i != VCC_OP_UNSUPPORTED && strcmp(s, vcc_op_name((VccOp)i)) == 0) return (VccOp)i;
    return VCC_OP_COUNT;
}

static void reset_node(VirParser *p) {
    for (int i = 0; i < p->nattrs; i++) free_attr(&p->attrs[i]);
    free(p->node_name);
    p->node_name = NULL;
    p->nin = p->nout = p->nattrs = 0;
}

void vir_node_begin(VirParser *p, int64_t index, const VirLoc *iloc, char *phase, const VirLoc *ploc, char *op,
                    const VirLoc *oloc, char *name) {
    reset_node(p);
    p->node_ok = true;
    if (index != p->nodes_read) {
        vir_report(p, iloc, VCC_ERR_PARSE, "node %" PRId64 " where node %d is expected (nodes are numbered in order)",
                   index, p->nodes_read);
        p->node_ok = false;
    }
    p->nodes_read++;
    if (!phase_from_name(phase, &p->node_phase)) {
        vir_report(p, ploc, VCC_ERR_PARSE, "unknown phase '%s' (forward, loss, backward, update)", phase);
        p->node_ok = false;
    }
    p->node_op = op_from_name(op);
    if (p->node_op == VCC_OP_COUNT) {
        vir_report(p, oloc, VCC_ERR_UNSUPPORTED, "unknown op '%s'", op);
        p->node_ok = false;
    }
    p->node_name = name;
    free(phase);
    free(op);
}

void vir_node_end(VirParser *p) {
    if (p->node_ok && !p->status) { /* after any error no graph comes out: stop building it */
        VccGraph *g = p->g;
        int k = vcc_node_add(g, p->node_op, p->node_name, p->in, p->nin, p->out, p->nout, p->node_phase);
        VccNode *n = &g->nodes[k];
        const char *op = vcc_op_name(p->node_op);
        if (vcc_op_from_onnx(op) == p->node_op) n->onnx_op = vcc_strdup(op);
        n->attrs = p->attrs;
        n->nattrs = p->nattrs;
        p->attrs = NULL;
        p->nattrs = p->cap_attrs = 0;
    }
    reset_node(p);
}

void vir_graph_output(VirParser *p, char *name, const VirLoc *loc) {
    int t = use_tensor(p, name, loc);
    free(name);
    if (t < 0) return;
    VccGraph *g = p->g;
    g->outputs = vcc_realloc(g->outputs, sizeof(int) * (size_t)(g->noutputs + 1));
    g->outputs[g->noutputs++] = t;
}

/* ------------------------------------------------------------------ attribute values */

VirValue *vir_value_int(int64_t v) {
    VirValue *x = vcc_calloc(1, sizeof *x);
    x->type = VCC_A_INT;
    x->i = v;
    return x;
}

VirValue *vir_value_float(float v) {
    VirValue *x = vcc_calloc(1, sizeof *x);
    x->type = VCC_A_FLOAT;
    x->f = v;
    return x;
}

VirValue *vir_value_string(char *s) {
    VirValue *x = vcc_calloc(1, sizeof *x);
    x->type = VCC_A_STRING;
    x->s = s;
    return x;
}

VirValue *vir_value_list(void) {
    VirValue *x = vcc_calloc(1, sizeof *x);
    x->type = VCC_A_INTS;
    return x;
}

static void value_grow(VirValue *l) {
    if (l->n < l->cap) return;
    l->cap = l->cap ? 2 * l->cap : 8;
    if (l->type == VCC_A_INTS) l->ints = vcc_realloc(l->ints, sizeof(int64_t) * (size_t)l->cap);
    else l->floats = vcc_realloc(l->floats, sizeof(float) * (size_t)l->cap);
}

VirValue *vir_value_push_int(VirValue *l, int64_t v) {
    if (l->type == VCC_A_FLOATS) return vir_value_push_float(l, (float)v);
    value_grow(l);
    l->ints[l->n++] = v;
    return l;
}

VirValue *vir_value_push_float(VirValue *l, float v) {
    if (l->type == VCC_A_INTS) { /* a float in the list: the whole list is floats */
        l->type = VCC_A_FLOATS;
        l->floats = vcc_malloc(sizeof(float) * (size_t)(l->cap ? l->cap : 1));
        for (int i = 0; i < l->n; i++) l->floats[i] = (float)l->ints[i];
        free(l->ints);
        l->ints = NULL;
    }
    value_grow(l);
    l->floats[l->n++] = v;
    return l;
}

void vir_value_free(VirValue *v) {
    if (!v) return;
    free(v->s);
    free(v->ints);
    free(v->floats);
    free(v);
}

/* ------------------------------------------------------------------ plan */

static bool key_is(VirParser *p, const char *key, const VirLoc *loc, const char *want) {
    if (strcmp(key, want) == 0) return true;
    vir_report(p, loc, VCC_ERR_PARSE, "expected '%s=', found '%s='", want, key);
    return false;
}

void vir_plan_ref(VirParser *p, char *key, const VirLoc *kloc, char *name, const VirLoc *nloc) {
    int *slot = NULL;
    if (strcmp(key, "view_of") == 0) {
        slot = &p->view_of;
    } else if (strcmp(key, "inplace_of") == 0) {
        slot = &p->inplace_of;
    } else {
        vir_report(p, kloc, VCC_ERR_PARSE, "expected 'view_of=' or 'inplace_of=', found '%s='", key);
    }
    if (slot && *slot != -1) {
        vir_report(p, kloc, VCC_ERR_PARSE, "'%s=' is given twice", key);
    } else if (slot) {
        int t = use_tensor(p, name, nloc);
        *slot = t >= 0 ? t : -2;
    }
    free(key);
    free(name);
}

void vir_plan(VirParser *p, const VirLoc *loc, char *name, const VirLoc *nloc, char *category,
              const VirLoc *cloc, VirKeyInt bytes, VirLive live, VirKeyInt offset) {
    int view_of = p->view_of, inplace_of = p->inplace_of;
    p->view_of = p->inplace_of = -1;
    VccGraph *g = p->g;
    int t = use_tensor(p, name, nloc);
    const char *cat = NULL;
    for (size_t i = 0; i < sizeof kCategories / sizeof kCategories[0]; i++)
        if (strcmp(category, kCategories[i]) == 0) cat = kCategories[i];
    if (!cat)
        vir_report(p, cloc, VCC_ERR_PARSE,
                   "unknown plan category '%s' (parameter, gradient, optimizer_state, workspace, activation, "
                   "saved_activation)",
                   category);
    bool keys = key_is(p, bytes.key, &bytes.kloc, "bytes") && key_is(p, live.key, &live.kloc, "live") &&
                key_is(p, offset.key, &offset.kloc, "offset");
    bool persistent = false;
    if (live.word) {
        persistent = strcmp(live.word, "persistent") == 0;
        if (!persistent) vir_report(p, &live.vloc, VCC_ERR_PARSE, "expected 'live=[START,END]' or 'live=persistent'");
    } else if (live.start < 0 || live.end < live.start || live.end > INT32_MAX) {
        vir_report(p, &live.vloc, VCC_ERR_PARSE,
                   "live=[%" PRId64 ",%" PRId64 "] is not an interval of schedule steps (0 <= START <= END)",
                   live.start, live.end);
    }
    if (offset.v < -1)
        vir_report(p, &offset.vloc, VCC_ERR_PARSE, "offset=%" PRId64 " is negative (-1: not placed)", offset.v);
    else if (offset.v > VCC_MAX_ARENA_BYTES)
        vir_report(p, &offset.vloc, VCC_ERR_PARSE, "offset=%" PRId64 " is past vcc's largest arena (2^52 bytes)",
                   offset.v);

    if (t >= 0 && keys) {
        if (t >= p->cap_plan) {
            int ncap = p->cap_plan ? p->cap_plan : 256;
            while (ncap <= t) ncap *= 2;
            p->plan = vcc_realloc(p->plan, sizeof *p->plan * (size_t)ncap);
            memset(p->plan + p->cap_plan, 0, sizeof *p->plan * (size_t)(ncap - p->cap_plan));
            p->cap_plan = ncap;
        }
        VirPlanInfo *pi = &p->plan[t];
        VccTensor *x = &g->tensors[t];
        if (pi->line) {
            vir_report(p, nloc, VCC_ERR_PARSE, "tensor '%s' already has a plan line (line %d)", x->name, pi->line);
        } else {
            pi->line = loc->first_line;
            pi->loc = *nloc;
            pi->category = cat;
            pi->offset_loc = offset.vloc;
            push_int(&p->plan_order, &p->nplan, &p->cap_plan_order, t);
            /* a --precision bf16 plan gives its bfloat16 values 2 bytes per element, which the dump's types do
             * not say: vcc_precision_check_dump refuses such a dump in one message once it is read */
            int64_t whole = vcc_tensor_bytes(x);
            if (bytes.v != whole && !(whole % 2 == 0 && bytes.v == whole / 2 && has_bf16_casts(g))) {
                char ty[160];
                vcc_format_type(ty, sizeof ty, x);
                vir_report(p, &bytes.vloc, VCC_ERR_SHAPE,
                           "type mismatch: tensor '%s' is %s (%" PRId64 " bytes) but its plan says bytes=%" PRId64,
                           x->name, ty, whole, bytes.v);
            }
            x->start = persistent ? -1 : (int)live.start;
            x->end = persistent ? -1 : (int)live.end;
            x->offset = offset.v;
            x->alias_of = view_of >= 0 ? view_of : -1;
            x->inplace_of = inplace_of >= 0 ? inplace_of : -1;
            x->saved = cat && strcmp(cat, "saved_activation") == 0;
        }
    }
    free(name);
    free(category);
    free(bytes.key);
    free(live.key);
    free(live.word);
    free(offset.key);
}

void vir_arena(VirParser *p, const VirLoc *loc, const VirKeyInt kv[5]) {
    static const char *const keys[5] = {"bytes", "persistent", "planned", "lower_bound", "no_reuse"};
    VccGraph *g = p->g;
    int64_t *dst[5] = {&g->arena_bytes, &g->persistent_bytes, &g->planned_bytes, &g->lower_bound_bytes,
                       &g->no_reuse_bytes};
    bool ok = true;
    for (int i = 0; i < 5; i++) {
        if (ok && !key_is(p, kv[i].key, &kv[i].kloc, keys[i])) ok = false;
        *dst[i] = kv[i].v;
        free(kv[i].key);
    }
    p->has_arena = true;
    p->arena_loc = *loc;
}

/* ------------------------------------------------------------------ after the last line */

/* Number of the regular outputs of ops with workspaces; outputs after them are workspaces (-1: none). */
static int regular_outputs(VccOp op) {
    const VccOpDef *def = vcc_op_def(op);
    return def->flags & VCC_OPF_WORKSPACE ? def->nout_regular : -1;
}

/* Kind of tensor t, produced by node n as output i, from the plan category (or NULL) and the structure. */
static VccTensorKind produced_kind(const VirParser *p, const VccNode *n, int i, const char *cat) {
    const VccGraph *g = p->g;
    if (cat && strcmp(cat, "gradient") == 0) /* live=persistent: kept (--keep-grads) */
        return g->tensors[n->out[i]].start < 0 ? VCC_T_GRAD : VCC_T_GRAD_PLANNED;
    if (cat && strcmp(cat, "optimizer_state") == 0) return VCC_T_OPT_STATE;
    if (cat && strcmp(cat, "workspace") == 0) return VCC_T_WORKSPACE;
    if (cat && strcmp(cat, "parameter") == 0) return VCC_T_BUFFER;
    int regular = regular_outputs(n->op);
    if (!cat && regular >= 0 && i >= regular) return VCC_T_WORKSPACE;
    if (n->phase == VCC_PHASE_LOSS && i == 0) return VCC_T_LOSS;
    if (n->phase != VCC_PHASE_BACKWARD) return VCC_T_ACT;
    if (!cat) { /* "<param>.grad" is a parameter's gradient (passes/autodiff) */
        const char *name = g->tensors[n->out[i]].name;
        size_t len = strlen(name);
        if (len > 5 && strcmp(name + len - 5, ".grad") == 0) {
            char *base = vcc_strdup(name);
            base[len - 5] = '\0';
            int b = find_tensor(p, base);
            free(base);
            if (b >= 0 && g->tensors[b].kind == VCC_T_PARAM) return VCC_T_GRAD;
        }
    }
    return VCC_T_GRAD_TEMP;
}

/* Whole-plan checks: every tensor planned, no alias cycle, views and in-place tensors inside the bytes
 * they share and at their offset. */
static void check_plan(VirParser *p) {
    VccGraph *g = p->g;
    for (int t = 0; t < g->ntensors; t++) {
        if (t < p->cap_plan && p->plan[t].line) continue;
        vir_report(p, &p->arena_loc, VCC_ERR_PARSE, "tensor '%s' has no plan line", g->tensors[t].name);
    }
    if (p->status) return;
    for (int t = 0; t < g->ntensors; t++) {
        const VccTensor *x = &g->tensors[t];
        if (x->alias_of < 0 && x->inplace_of < 0) continue;
        int r = t, steps = 0;
        while (steps <= g->ntensors && (g->tensors[r].alias_of >= 0 || g->tensors[r].inplace_of >= 0)) {
            r = g->tensors[r].alias_of >= 0 ? g->tensors[r].alias_of : g->tensors[r].inplace_of;
            steps++;
        }
        if (steps > g->ntensors) {
            vir_report(p, &p->plan[t].loc, VCC_ERR_PARSE, "tensor '%s' shares bytes with itself (a view_of/inplace_of cycle)",
                       x->name);
            return;
        }
        const VccTensor *root = &g->tensors[r];
        if (vcc_tensor_bytes(x) > vcc_tensor_bytes(root))
            vir_report(p, &p->plan[t].loc, VCC_ERR_SHAPE,
                       "type mismatch: tensor '%s' (%" PRId64 " bytes) uses the bytes of '%s' (%" PRId64 " bytes)",
                       x->name, vcc_tensor_bytes(x), root->name, vcc_tensor_bytes(root));
        else if (x->offset != root->offset)
            vir_report(p, &p->plan[t].offset_loc, VCC_ERR_PARSE,
                       "offset=%" PRId64 " but '%s', whose bytes tensor '%s' uses, is at offset=%" PRId64, x->offset,
                       root->name, x->name, root->offset);
    }
}

/* Put the tensors in plan-line order (the tensor order the printer's plan section shows). */
static void reorder_tensors(VirParser *p) {
    VccGraph *g = p->g;
    int nt = g->ntensors;
    VCC_ASSERT(p->nplan == nt);
    int *newid = vcc_malloc(sizeof(int) * (size_t)(nt ? nt : 1));
    for (int i = 0; i < nt; i++) newid[p->plan_order[i]] = i;
    VccTensor *old = g->tensors;
    g->tensors = vcc_malloc(sizeof *g->tensors * (size_t)(g->cap_tensors ? g->cap_tensors : 1));
    for (int i = 0; i < nt; i++) {
        VccTensor *x = &g->tensors[i];
        *x = old[p->plan_order[i]];
        if (x->alias_of >= 0) x->alias_of = newid[x->alias_of];
        if (x->inplace_of >= 0) x->inplace_of = newid[x->inplace_of];
        if (x->grad >= 0) x->grad = newid[x->grad];
        if (x->param_of >= 0) x->param_of = newid[x->param_of];
    }
    free(old);
    for (int k = 0; k < g->nnodes; k++) {
        VccNode *n = &g->nodes[k];
        for (int i = 0; i < n->nin; i++)
            if (n->in[i] >= 0) n->in[i] = newid[n->in[i]];
        for (int i = 0; i < n->nout; i++)
            if (n->out[i] >= 0) n->out[i] = newid[n->out[i]];
    }
    for (int i = 0; i < g->noutputs; i++) g->outputs[i] = newid[g->outputs[i]];
    free(newid);
    vcc_graph_rehash(g);
}

/* Without plan lines the text does not say which values are views; they follow from the ops, as
 * passes/canonical.c makes them: the output of Flatten, Reshape and Identity (forward, or the Reshape of
 * a view's gradient) is a view of its data input, and a training-form BatchNormalization's running
 * outputs are views of the running statistics it updates in place (declared buffers). */
static void views_from_structure(VccGraph *g) {
    for (int k = 0; k < g->nnodes; k++) {
        const VccNode *n = &g->nodes[k];
        bool view = vcc_op_def(n->op)->flags & VCC_OPF_VIEW;
        if (view && n->nin >= 1 && n->in[0] >= 0 && n->nout == 1 && n->out[0] >= 0)
            g->tensors[n->out[0]].alias_of = n->in[0];
        if (n->op == VCC_OP_BATCHNORM && n->nin >= 5 && n->nout == 5)
            for (int i = 0; i < 2; i++) {
                int o = n->out[3 + i], b = n->in[3 + i];
                if (o >= 0 && b >= 0 && g->tensors[b].kind == VCC_T_BUFFER) {
                    g->tensors[o].alias_of = b;
                    g->tensors[o].kind = VCC_T_BUFFER;
                }
            }
    }
}

static void finish(VirParser *p, bool has_plan) {
    VccGraph *g = p->g;
    if (has_plan) check_plan(p);
    if (p->status) return;
    /* the seed of the loss's gradient (d loss / d loss) is 1 by definition: the one constant whose value
     * the text may leave out (dumps before constants carried data=) */
    for (int k = 0; k < g->nnodes; k++) {
        const VccNode *n = &g->nodes[k];
        if (n->op != VCC_OP_SOFTMAXXENT_GRAD || n->nin < 3 || n->in[2] < 0) continue;
        VccTensor *seed = &g->tensors[n->in[2]];
        if (seed->kind != VCC_T_CONST || seed->data || seed->dtype != VCC_F32 || vcc_shape_numel(&seed->shape) != 1)
            continue;
        seed->data = vcc_malloc(4);
        seed->data_bytes = 4;
        *(float *)seed->data = 1.0f;
    }
    /* every other declared constant needs its value: the program is compiled with it (the weights file
     * holds parameters and buffers only) */
    for (int t = 0; t < g->ntensors; t++)
        if (g->tensors[t].kind == VCC_T_CONST && g->tensors[t].producer < 0 && !g->tensors[t].data) {
            VirLoc at = {p->def_line[t], 1, p->def_line[t], 1};
            vir_report(p, &at, VCC_ERR_PARSE, "const '%s' has no value (data=\"...\", as vcc's dumps write it)",
                       g->tensors[t].name);
        }
    if (p->status) return;
    /* kinds of node outputs, and their category where the plan gives one */
    for (int k = 0; k < g->nnodes; k++) {
        const VccNode *n = &g->nodes[k];
        for (int i = 0; i < n->nout; i++) {
            int t = n->out[i];
            if (t < 0) continue;
            const char *cat = has_plan ? p->plan[t].category : NULL;
            g->tensors[t].kind = produced_kind(p, n, i, cat);
        }
    }
    /* a GradCopy (passes/autodiff) gives a parameter its own gradient: its output is that gradient, and
     * its input (a view or another parameter's gradient, whatever its name says) is not this one */
    for (int k = 0; k < g->nnodes && !has_plan; k++) {
        const VccNode *n = &g->nodes[k];
        if (n->op != VCC_OP_GRAD_COPY || n->nin < 1 || n->nout < 1 || n->in[0] < 0 || n->out[0] < 0) continue;
        VccTensor *src = &g->tensors[n->in[0]], *dst = &g->tensors[n->out[0]];
        if (vcc_kind_is_param_grad(src->kind) && src->producer >= 0) src->kind = VCC_T_GRAD_TEMP;
        dst->kind = VCC_T_GRAD;
        /* "<param>.grad" or "<param>.grad_<n>" names the parameter */
        char *base = vcc_strdup(dst->name);
        char *cut = strstr(base, ".grad");
        for (char *c = cut; c; c = strstr(c + 1, ".grad")) cut = c;
        if (cut) *cut = '\0';
        int prm = find_tensor(p, base);
        free(base);
        if (prm >= 0 && g->tensors[prm].kind == VCC_T_PARAM && g->tensors[prm].grad < 0) {
            g->tensors[prm].grad = n->out[0];
            dst->param_of = prm;
        }
    }
    if (has_plan)
        for (int t = 0; t < g->ntensors; t++) {
            const VccTensor *x = &g->tensors[t];
            const char *want = p->plan[t].category, *is = vcc_tensor_category(x);
            if (strcmp(want, is) != 0)
                vir_report(p, &p->plan[t].loc, VCC_ERR_PARSE, "plan category '%s' contradicts %s tensor '%s' (%s)",
                           want, vcc_tensor_kind_name(x->kind), x->name, is);
        }
    if (p->status) return;
    /* gradient and optimizer-state links: SGDMomentum(param, grad, state, clip) and AdamW(param, grad,
     * exp_avg, exp_avg_sq, clip), else "<param>.grad" */
    for (int k = 0; k < g->nnodes; k++) {
        const VccNode *n = &g->nodes[k];
        int nstate = n->op == VCC_OP_SGD ? 1 : n->op == VCC_OP_ADAMW ? 2 : 0;
        if (!nstate || n->nin < 2 + nstate || n->in[0] < 0) continue;
        int prm = n->in[0];
        if (n->in[1] >= 0) {
            g->tensors[prm].grad = n->in[1];
            g->tensors[n->in[1]].param_of = prm;
        }
        for (int i = 2; i < 2 + nstate; i++)
            if (n->in[i] >= 0) g->tensors[n->in[i]].param_of = prm;
    }
    for (int t = 0; t < g->ntensors; t++) {
        VccTensor *x = &g->tensors[t];
        size_t len = strlen(x->name);
        if (!vcc_kind_is_param_grad(x->kind) || x->param_of >= 0 || len <= 5 || strcmp(x->name + len - 5, ".grad") != 0)
            continue;
        char *base = vcc_strdup(x->name);
        base[len - 5] = '\0';
        int b = find_tensor(p, base);
        free(base);
        if (b >= 0 && g->tensors[b].kind == VCC_T_PARAM && g->tensors[b].grad < 0) {
            x->param_of = b;
            g->tensors[b].grad = t;
        }
    }
    /* without a plan, a parameter's gradient is kept (--keep-grads) when a GradNormClip reads it, else planned */
    if (!has_plan) {
        for (int t = 0; t < g->ntensors; t++)
            if (g->tensors[t].kind == VCC_T_GRAD) g->tensors[t].kind = VCC_T_GRAD_PLANNED;
        for (int k = 0; k < g->nnodes; k++)
            for (int i = 0; g->nodes[k].op == VCC_OP_GRAD_NORM && i < g->nodes[k].nin; i++)
                if (g->nodes[k].in[i] >= 0 && g->tensors[g->nodes[k].in[i]].kind == VCC_T_GRAD_PLANNED)
                    g->tensors[g->nodes[k].in[i]].kind = VCC_T_GRAD;
    }
    if (!has_plan) views_from_structure(g);
    if (has_plan) reorder_tensors(p);
    /* graph inputs, label, data input */
    int ndata = 0, data = -1;
    for (int t = 0; t < g->ntensors; t++) {
        const VccTensor *x = &g->tensors[t];
        if (x->producer >= 0 || (x->kind != VCC_T_INPUT && x->kind != VCC_T_LABEL)) continue;
        g->inputs = vcc_realloc(g->inputs, sizeof(int) * (size_t)(g->ninputs + 1));
        g->inputs[g->ninputs++] = t;
        if (x->kind == VCC_T_LABEL && x->dtype == VCC_I64) g->label = t;
        if (x->kind == VCC_T_LABEL && x->dtype == VCC_F32) g->target = t;
        if (x->kind == VCC_T_INPUT && x->dtype == VCC_F32) {
            data = t;
            ndata++;
        }
    }
    for (int k = 0; k < g->nnodes; k++)
        if (g->nodes[k].phase == VCC_PHASE_LOSS && g->nodes[k].nout > 0) g->loss = g->nodes[k].out[0];
    if (g->loss >= 0 && ndata == 1) g->data_input = data;
}

/* ------------------------------------------------------------------ entry points */

VccStatus vcc_vir_parse(VccCtx *ctx, const char *name, const char *text, size_t len, VccGraph **out,
                        bool *has_plan) {
    *out = NULL;
    if (has_plan) *has_plan = false;
    VirParser p;
    memset(&p, 0, sizeof p);
    p.ctx = ctx;
    p.fname = name;
    p.g = vcc_graph_new();
    p.view_of = p.inplace_of = -1;
    VirScan scan = {&p, 1, 1};
    yyscan_t scanner;
    if (vir_lex_init_extra(&scan, &scanner) != 0) {
        VirLoc none = {1, 1, 1, 1};
        vir_report(&p, &none, VCC_ERR_IO, "cannot start the scanner");
    } else {
        if (len > (size_t)INT32_MAX) {
            VirLoc none = {1, 1, 1, 1};
            vir_report(&p, &none, VCC_ERR_UNSUPPORTED, "file larger than 2 GiB");
        } else {
            YY_BUFFER_STATE buf = vir__scan_bytes(text ? text : "", (int)len, scanner);
            int rc = vir_parse(scanner, &p);
            if (rc != 0 && !p.status) p.status = VCC_ERR_PARSE; /* memory exhausted (reported by bison) */
            vir__delete_buffer(buf, scanner);
        }
        vir_lex_destroy(scanner);
    }
    bool plan = p.has_arena;
    if (!p.status) finish(&p, plan);
    reset_node(&p);
    free(p.attrs);
    free(p.in);
    free(p.out);
    free(p.htab);
    free(p.def_line);
    free(p.plan);
    free(p.plan_order);
    if (p.status) {
        vcc_graph_free(p.g);
        return p.status;
    }
    *out = p.g;
    if (has_plan) *has_plan = plan;
    return VCC_OK;
}

VccStatus vcc_vir_read(VccCtx *ctx, const char *path, VccGraph **out, bool *has_plan) {
    *out = NULL;
    if (has_plan) *has_plan = false;
    /* opened without blocking and checked to be a regular file first: a FIFO would block forever */
    int fd = open(path, O_RDONLY | O_NONBLOCK);
    struct stat sb;
    FILE *f = NULL;
    const char *why = NULL;
    if (fd < 0) why = strerror(errno);
    else if (fstat(fd, &sb) != 0) why = strerror(errno);
    else if (!S_ISREG(sb.st_mode)) why = "not a regular file";
    else if (!(f = fdopen(fd, "rb"))) why = strerror(errno);
    if (!f) {
        if (fd >= 0) close(fd);
        const char *saved = ctx->file;
        ctx->file = path;
        vcc_error(ctx, "cannot open the file: %s", why);
        ctx->file = saved;
        return VCC_ERR_IO;
    }
    size_t len = 0, cap = 1 << 16;
    char *text = vcc_malloc(cap);
    for (;;) {
        len += fread(text + len, 1, cap - len, f);
        if (len < cap) break;
        cap *= 2;
        text = vcc_realloc(text, cap);
    }
    bool bad = ferror(f) != 0;
    fclose(f);
    if (bad) {
        free(text);
        const char *saved = ctx->file;
        ctx->file = path;
        vcc_error(ctx, "cannot read the file");
        ctx->file = saved;
        return VCC_ERR_IO;
    }
    VccStatus st = vcc_vir_parse(ctx, path, text, len, out, has_plan);
    free(text);
    return st;
}

VccStatus vcc_vir_load(VccCtx *ctx, const char *path, VccGraph **out) {
    return vcc_vir_read(ctx, path, out, NULL);
}
