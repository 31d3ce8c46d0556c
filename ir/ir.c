/*
 * ir.c — allocation helpers, graph builder, checked shape arithmetic and attribute access (the context
 * and diagnostics are in ir/diag.c).
 *
 * Requires: nothing. Produces: the VccGraph building blocks every layer uses (see ir.h).
 */
#include "ir.h"

#include <stdlib.h>
#include <string.h>

static void oom(void) {
    fputs("vcc: out of memory\n", stderr);
    abort();
}

void *vcc_malloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) oom();
    return p;
}

void *vcc_calloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) oom();
    return p;
}

void *vcc_realloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) oom();
    return q;
}

char *vcc_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = vcc_malloc(n);
    memcpy(d, s, n);
    return d;
}

bool vcc_has_suffix(const char *s, const char *suf) {
    size_t n = s ? strlen(s) : 0, m = strlen(suf);
    return s && n >= m && strcmp(s + n - m, suf) == 0;
}

/* ------------------------------------------------------------------ op table */

static const char *const op_names[] = {
#define X(e, name, kind, family) name,
#include "ops.def"
};
static const char op_kinds[] = {
#define X(e, name, kind, family) #kind[0],
#include "ops.def"
};

const char *vcc_op_name(VccOp op) {
    VCC_ASSERT(op >= 0 && op < VCC_OP_COUNT);
    return op_names[op];
}

bool vcc_op_is_onnx(VccOp op) {
    VCC_ASSERT(op >= 0 && op < VCC_OP_COUNT);
    return op_kinds[op] == 'F';
}

bool vcc_onnx_arity(VccOp op, int *min_in, int *max_in, int *min_out, int *max_out) {
    static const struct {
        const char *name;
        int min_in, max_in, min_out, max_out;
    } rows[] = {
#define A(name, a, b, c, d) {name, a, b, c, d},
#include "ops/arity.def"
#undef A
    };
    if (!vcc_op_is_onnx(op)) return false;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (!strcmp(rows[i].name, op_names[op])) {
            *min_in = rows[i].min_in, *max_in = rows[i].max_in;
            *min_out = rows[i].min_out, *max_out = rows[i].max_out;
            return true;
        }
    return false;
}

VccOp vcc_op_from_onnx(const char *op_type) {
    for (int i = 0; i < VCC_OP_COUNT; i++)
        if (op_kinds[i] == 'F' && strcmp(op_names[i], op_type) == 0) return (VccOp)i;
    return VCC_OP_COUNT;
}

/* ------------------------------------------------------------------ tensors */

bool vcc_mul_i64(int64_t a, int64_t b, int64_t *out) { return !__builtin_mul_overflow(a, b, out); }

bool vcc_add_i64(int64_t a, int64_t b, int64_t *out) { return !__builtin_add_overflow(a, b, out); }

int64_t vcc_shape_numel(const VccShape *s) {
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++) {
        if (s->dims[i] < 0 || !vcc_mul_i64(n, s->dims[i], &n)) return -1;
    }
    return n;
}

bool vcc_shape_checked_bytes(const VccShape *s, VccDType dt, int64_t *bytes) {
    int64_t n = (int64_t)vcc_dtype_size(dt);
    for (int i = 0; i < s->rank; i++) {
        if (s->dims[i] < 0) return false;
        if (s->dims[i] && n > VCC_MAX_TENSOR_BYTES / s->dims[i]) return false;
        n *= s->dims[i];
    }
    *bytes = n;
    return n <= VCC_MAX_TENSOR_BYTES;
}

size_t vcc_dtype_size(VccDType dt) {
    switch (dt) {
    case VCC_F32: return 4;
    case VCC_I64: return 8;
    case VCC_BOOL: return 1;
    case VCC_I32: return 4;
    case VCC_F64: return 8;
    case VCC_I8: case VCC_U8: return 1;
    case VCC_I16: case VCC_U16: return 2;
    case VCC_U32: return 4;
    case VCC_U64: return 8;
    default: return 0;
    }
}

const char *vcc_dtype_name(VccDType dt) {
    switch (dt) {
    case VCC_F32: return "f32";
    case VCC_I64: return "i64";
    case VCC_BOOL: return "bool";
    case VCC_I32: return "i32";
    case VCC_F64: return "f64";
    case VCC_I8: return "i8";
    case VCC_I16: return "i16";
    case VCC_U8: return "u8";
    case VCC_U16: return "u16";
    case VCC_U32: return "u32";
    case VCC_U64: return "u64";
    default: return "?";
    }
}

int vcc_dtype_onnx(VccDType dt) {
    switch (dt) {
    case VCC_F32: return 1;
    case VCC_I32: return 6;
    case VCC_I64: return 7;
    case VCC_BOOL: return 9;
    case VCC_F64: return 11;
    case VCC_U8: return 2;
    case VCC_I8: return 3;
    case VCC_U16: return 4;
    case VCC_I16: return 5;
    case VCC_U32: return 12;
    case VCC_U64: return 13;
    default: return 0;
    }
}

VccDType vcc_dtype_from_onnx(int onnx_elem_type) {
    for (VccDType dt = VCC_F32; dt <= VCC_DT_LAST; dt++)
        if (vcc_dtype_onnx(dt) == onnx_elem_type) return dt;
    return VCC_DT_UNDEF;
}

int64_t vcc_tensor_bytes(const VccTensor *t) {
    int64_t n = vcc_shape_numel(&t->shape);
    return n < 0 ? 0 : n * (int64_t)(t->bf16_bytes ? t->bf16_bytes : vcc_dtype_size(t->dtype));
}

const char *vcc_tensor_kind_name(VccTensorKind k) {
    static const char *names[] = {"input", "label", "param", "buffer", "const", "act",
                                  "loss", "grad", "grad_temp", "opt_state", "workspace", "grad_planned"};
    VCC_ASSERT(k >= 0 && k < (int)(sizeof names / sizeof names[0]));
    return names[k];
}

bool vcc_tensor_is_persistent(const VccTensor *t) {
    switch (t->kind) {
    case VCC_T_PARAM: case VCC_T_BUFFER: case VCC_T_CONST: case VCC_T_GRAD: case VCC_T_OPT_STATE:
        return true;
    default:
        return false;
    }
}

bool vcc_kind_is_param_grad(VccTensorKind k) { return k == VCC_T_GRAD || k == VCC_T_GRAD_PLANNED; }

int vcc_tensor_root(const VccGraph *g, int t) {
    for (int guard = 0; guard <= g->ntensors; guard++) {
        const VccTensor *x = &g->tensors[t];
        if (x->alias_of >= 0) t = x->alias_of;
        else if (x->inplace_of >= 0) t = x->inplace_of;
        else return t;
    }
    VCC_ASSERT(!"alias cycle");
    return t;
}

int *vcc_tensor_roots(const VccGraph *g) {
    int n = g->ntensors;
    int *root = vcc_malloc(sizeof(int) * (size_t)(n ? n : 1));
    int *path = vcc_malloc(sizeof(int) * (size_t)(n ? n : 1));
    for (int t = 0; t < n; t++) root[t] = -1;
    for (int t = 0; t < n; t++) {
        int len = 0, x = t;
        while (root[x] < 0) { /* walk to a tensor whose root is known, or that owns its bytes */
            const VccTensor *v = &g->tensors[x];
            int next = v->alias_of >= 0 ? v->alias_of : v->inplace_of;
            VCC_ASSERT(len < n);
            path[len++] = x;
            if (next < 0) {
                root[x] = x;
                break;
            }
            x = next;
        }
        for (int i = 0; i < len; i++) root[path[i]] = root[x];
    }
    free(path);
    return root;
}

void vcc_root_intervals(const VccGraph *g, const int *roots, int *gs, int *ge) {
    for (int t = 0; t < g->ntensors; t++) gs[t] = ge[t] = -1;
    for (int t = 0; t < g->ntensors; t++) {
        const VccTensor *x = &g->tensors[t];
        if (x->start < 0) continue;
        int r = roots[t];
        if (gs[r] < 0 || x->start < gs[r]) gs[r] = x->start;
        if (x->end > ge[r]) ge[r] = x->end;
    }
}

const char *vcc_graph_meta(const VccGraph *g, const char *key) {
    for (int i = 0; i < g->nmeta; i++)
        if (strcmp(g->meta_keys[i], key) == 0) return g->meta_values[i];
    return NULL;
}

VccGraph *vcc_graph_new(void) {
    VccGraph *g = vcc_calloc(1, sizeof *g);
    g->data_input = g->label = g->target = g->loss = -1;
    g->plan_seconds = -1;
    return g;
}

int vcc_subgraph_add(VccGraph *g, VccGraph *sub, int *outer, int nouter) {
    g->subs = vcc_realloc(g->subs, sizeof *g->subs * (size_t)(g->nsubs + 1));
    g->subs[g->nsubs] = (VccSubgraph){.g = sub, .outer = outer, .nouter = nouter};
    return g->nsubs++;
}

void vcc_tensor_release(VccTensor *t) {
    free(t->name);
    free(t->data);
    for (int d = 0; d < VCC_MAX_RANK; d++) free(t->dim_param[d]);
}

void vcc_node_release(VccNode *n) {
    free(n->name);
    free(n->onnx_op);
    free(n->domain);
    free(n->in);
    free(n->out);
    for (int a = 0; a < n->nattrs; a++) {
        free(n->attrs[a].name);
        free(n->attrs[a].ints);
        free(n->attrs[a].floats);
        free(n->attrs[a].s);
    }
    free(n->attrs);
}

void vcc_graph_free(VccGraph *g) {
    if (!g) return;
    for (int i = 0; i < g->ntensors; i++) vcc_tensor_release(&g->tensors[i]);
    for (int i = 0; i < g->nnodes; i++) vcc_node_release(&g->nodes[i]);
    for (int i = 0; i < g->nmeta; i++) {
        free(g->meta_keys[i]);
        free(g->meta_values[i]);
    }
    for (int i = 0; i < g->nsubs; i++) {
        vcc_graph_free(g->subs[i].g);
        free(g->subs[i].outer);
    }
    free(g->subs);
    free(g->meta_keys);
    free(g->meta_values);
    free(g->tensors);
    free(g->name_index);
    free(g->nodes);
    free(g->inputs);
    free(g->outputs);
    free(g->output_elem_type);
    free(g->output_decl);
    free(g->producer);
    free(g);
}

/* FNV-1a */
static uint32_t name_hash(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static void name_insert(VccGraph *g, int id) {
    uint32_t mask = (uint32_t)g->name_cap - 1;
    for (uint32_t i = name_hash(g->tensors[id].name) & mask;; i = (i + 1) & mask)
        if (!g->name_index[i]) {
            g->name_index[i] = id + 1;
            return;
        }
}

/* Keep the table at most half full: grow to a power of two and re-insert every name (returns true then). */
static bool name_reserve(VccGraph *g, int n) {
    if (2 * n <= g->name_cap) return false;
    int cap = g->name_cap ? g->name_cap : 128;
    while (2 * n > cap) cap *= 2;
    free(g->name_index);
    g->name_index = vcc_calloc((size_t)cap, sizeof(int));
    g->name_cap = cap;
    for (int i = 0; i < g->ntensors; i++) name_insert(g, i);
    return true;
}

void vcc_tensors_truncate(VccGraph *g, int n) {
    VCC_ASSERT(n >= 0 && n <= g->ntensors);
    for (int i = n; i < g->ntensors; i++) vcc_tensor_release(&g->tensors[i]);
    g->ntensors = n;
    if (g->name_cap) memset(g->name_index, 0, sizeof(int) * (size_t)g->name_cap);
    for (int i = 0; i < n; i++) name_insert(g, i);
}

int vcc_tensor_find(const VccGraph *g, const char *name) {
    if (!g->name_cap) return -1;
    uint32_t mask = (uint32_t)g->name_cap - 1;
    for (uint32_t i = name_hash(name) & mask; g->name_index[i]; i = (i + 1) & mask)
        if (strcmp(g->tensors[g->name_index[i] - 1].name, name) == 0) return g->name_index[i] - 1;
    return -1;
}

/* base if no tensor has that name, else base_<n> for the smallest n >= 1 that is free (malloc'd). */
static char *unique_name(const VccGraph *g, const char *base) {
    if (vcc_tensor_find(g, base) < 0) return vcc_strdup(base);
    for (int i = 1;; i++) {
        char *s = vcc_strfmt("%s_%d", base, i);
        if (vcc_tensor_find(g, s) < 0) return s;
        free(s);
    }
}

int vcc_tensor_add_unique(VccGraph *g, VccDType dt, const VccShape *shape, VccTensorKind kind, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *base = vcc_vstrfmt(fmt, ap);
    va_end(ap);
    char *name = unique_name(g, base);
    int t = vcc_tensor_add(g, name, dt, shape, kind);
    free(name);
    free(base);
    return t;
}

void vcc_graph_rehash(VccGraph *g) {
    free(g->name_index);
    g->name_index = NULL;
    g->name_cap = 0;
    name_reserve(g, g->ntensors);
}

int vcc_tensor_add(VccGraph *g, const char *name, VccDType dt, const VccShape *shape, VccTensorKind kind) {
    if (g->ntensors == g->cap_tensors) {
        g->cap_tensors = g->cap_tensors ? 2 * g->cap_tensors : 64;
        g->tensors = vcc_realloc(g->tensors, (size_t)g->cap_tensors * sizeof *g->tensors);
    }
    int id = g->ntensors++;
    VccTensor *t = &g->tensors[id];
    memset(t, 0, sizeof *t);
    if (name) {
        t->name = vcc_strdup(name);
    } else {
        char *base = vcc_strfmt("t%d", id);
        t->name = unique_name(g, base);
        free(base);
    }
    t->dtype = dt;
    if (shape) t->shape = *shape;
    t->kind = kind;
    t->producer = t->grad = t->param_of = t->grad_of = t->alias_of = t->inplace_of = -1;
    t->start = t->end = -1;
    t->offset = -1;
    VCC_ASSERT(vcc_tensor_find(g, t->name) < 0);
    if (!name_reserve(g, g->ntensors)) name_insert(g, id);
    return id;
}

/* ------------------------------------------------------------------ nodes and attributes */

void vcc_nodes_move(VccGraph *g, int from, int to) {
    VCC_ASSERT(to >= 0 && to <= from && from <= g->nnodes);
    int m = g->nnodes - from;
    VccNode *tmp = vcc_malloc(sizeof(VccNode) * (size_t)(m ? m : 1));
    memcpy(tmp, g->nodes + from, sizeof(VccNode) * (size_t)m);
    memmove(g->nodes + to + m, g->nodes + to, sizeof(VccNode) * (size_t)(from - to));
    memcpy(g->nodes + to, tmp, sizeof(VccNode) * (size_t)m);
    free(tmp);
    for (int k = to; k < g->nnodes; k++)
        for (int i = 0; i < g->nodes[k].nout; i++)
            if (g->nodes[k].out[i] >= 0) g->tensors[g->nodes[k].out[i]].producer = k;
}

int vcc_node_add(VccGraph *g, VccOp op, const char *name, const int *in, int nin, const int *out, int nout,
                 VccPhase phase) {
    if (g->nnodes == g->cap_nodes) {
        g->cap_nodes = g->cap_nodes ? 2 * g->cap_nodes : 64;
        g->nodes = vcc_realloc(g->nodes, (size_t)g->cap_nodes * sizeof *g->nodes);
    }
    int id = g->nnodes++;
    VccNode *n = &g->nodes[id];
    memset(n, 0, sizeof *n);
    n->op = op;
    n->phase = phase;
    n->name = name ? vcc_strdup(name) : vcc_strfmt("%s_%d", vcc_op_name(op), id);
    n->nin = nin;
    n->in = vcc_malloc(sizeof(int) * (size_t)(nin ? nin : 1));
    if (nin) memcpy(n->in, in, sizeof(int) * (size_t)nin);
    n->nout = nout;
    n->out = vcc_malloc(sizeof(int) * (size_t)(nout ? nout : 1));
    if (nout) memcpy(n->out, out, sizeof(int) * (size_t)nout);
    for (int i = 0; i < nout; i++)
        if (out[i] >= 0) g->tensors[out[i]].producer = id;
    return id;
}

static VccAttr *attr_slot(VccNode *n, const char *name, VccAttrType type) {
    VccAttr *a = NULL;
    for (int i = 0; i < n->nattrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0) a = &n->attrs[i];
    if (a) {
        free(a->ints);
        free(a->floats);
        free(a->s);
        free(a->name);
    } else {
        n->attrs = vcc_realloc(n->attrs, sizeof *n->attrs * (size_t)(n->nattrs + 1));
        a = &n->attrs[n->nattrs++];
    }
    memset(a, 0, sizeof *a);
    a->name = vcc_strdup(name);
    a->type = type;
    return a;
}

void vcc_attr_copy_all(VccNode *dst, const VccNode *src) {
    for (int a = 0; a < src->nattrs; a++) {
        const VccAttr *at = &src->attrs[a];
        switch (at->type) {
        case VCC_A_INT: vcc_attr_set_int(dst, at->name, at->i); break;
        case VCC_A_FLOAT: vcc_attr_set_float(dst, at->name, at->f); break;
        case VCC_A_INTS: vcc_attr_set_ints(dst, at->name, at->ints, at->n); break;
        case VCC_A_FLOATS: vcc_attr_set_floats(dst, at->name, at->floats, at->n); break;
        case VCC_A_STRING: vcc_attr_set_string(dst, at->name, at->s); break;
        }
    }
}

void vcc_attr_set_int(VccNode *n, const char *name, int64_t v) { attr_slot(n, name, VCC_A_INT)->i = v; }

void vcc_attr_set_float(VccNode *n, const char *name, float v) { attr_slot(n, name, VCC_A_FLOAT)->f = v; }

void vcc_attr_set_ints(VccNode *n, const char *name, const int64_t *v, int count) {
    VccAttr *a = attr_slot(n, name, VCC_A_INTS);
    a->n = count;
    a->ints = vcc_malloc(sizeof(int64_t) * (size_t)(count ? count : 1));
    if (count) memcpy(a->ints, v, sizeof(int64_t) * (size_t)count);
}

void vcc_attr_set_floats(VccNode *n, const char *name, const float *v, int count) {
    VccAttr *a = attr_slot(n, name, VCC_A_FLOATS);
    a->n = count;
    a->floats = vcc_malloc(sizeof(float) * (size_t)(count ? count : 1));
    if (count) memcpy(a->floats, v, sizeof(float) * (size_t)count);
}

void vcc_attr_set_string(VccNode *n, const char *name, const char *s) {
    attr_slot(n, name, VCC_A_STRING)->s = vcc_strdup(s);
}

const VccAttr *vcc_attr_get(const VccNode *n, const char *name) {
    for (int i = 0; i < n->nattrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0) return &n->attrs[i];
    return NULL;
}

int64_t vcc_attr_int(const VccNode *n, const char *name, int64_t dflt) {
    const VccAttr *a = vcc_attr_get(n, name);
    return a && a->type == VCC_A_INT ? a->i : dflt;
}

float vcc_attr_float(const VccNode *n, const char *name, float dflt) {
    const VccAttr *a = vcc_attr_get(n, name);
    return a && a->type == VCC_A_FLOAT ? a->f : dflt;
}

int vcc_attr_ints(const VccNode *n, const char *name, int64_t *out, int max) {
    const VccAttr *a = vcc_attr_get(n, name);
    if (!a || a->type != VCC_A_INTS) return -1;
    for (int i = 0; i < a->n && i < max; i++) out[i] = a->ints[i];
    return a->n;
}

const char *vcc_attr_string(const VccNode *n, const char *name, const char *dflt) {
    const VccAttr *a = vcc_attr_get(n, name);
    return a && a->type == VCC_A_STRING ? a->s : dflt;
}
