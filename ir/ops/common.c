/*
 * common.c — helpers the op families share: shape-rule checks, the gradient builder of passes/autodiff,
 * and the operand strings of the emitters.
 */
#include "ops.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ shape rules */

bool vcc_same_shape(const VccShape *a, const VccShape *b) {
    if (a->rank != b->rank) return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return false;
    return true;
}

void vcc_shape_str(char *buf, size_t len, const VccShape *s) {
    size_t o = (size_t)snprintf(buf, len, "(");
    for (int i = 0; i < s->rank && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, i ? ", %lld" : "%lld", (long long)s->dims[i]);
    if (o < len) snprintf(buf + o, len - o, ")");
}

const char *vcc_node_op(const VccNode *n) { return n->onnx_op ? n->onnx_op : vcc_op_name(n->op); }

bool vcc_put_output(VccCtx *ctx, VccGraph *g, const VccNode *n, bool check, int t, VccDType dt, const VccShape *s) {
    if (t < 0) return true;
    VccTensor *x = &g->tensors[t];
    if (!check) {
        x->dtype = dt;
        x->shape = *s;
        return true;
    }
    if (x->dtype == dt && vcc_same_shape(&x->shape, s)) return true;
    char have[160], want[160];
    VccTensor w = *x;
    w.dtype = dt;
    w.shape = *s;
    vcc_format_type(have, sizeof have, x);
    vcc_format_type(want, sizeof want, &w);
    vcc_error(ctx, "node '%s' (%s): output '%s' is %s, but its inputs and attributes give %s", n->name,
              vcc_op_name(n->op), x->name, have, want);
    return false;
}

const VccTensor *vcc_need_input(VccCtx *ctx, const VccGraph *g, const VccNode *n, int i, VccDType dt) {
    if (i >= n->nin || n->in[i] < 0) {
        vcc_error(ctx, "node '%s' (%s): missing input %d", n->name, vcc_node_op(n), i);
        return NULL;
    }
    const VccTensor *t = &g->tensors[n->in[i]];
    if (t->dtype != dt) {
        vcc_error(ctx, "node '%s' (%s): input %d '%s' has dtype %s, expected %s", n->name, vcc_op_name(n->op), i,
                  t->name, vcc_dtype_name(t->dtype), vcc_dtype_name(dt));
        return NULL;
    }
    return t;
}

VccStatus vcc_operands_missing(VccCtx *ctx, const VccNode *n) {
    vcc_error(ctx, "node '%s' (%s): inputs or outputs missing or of the wrong rank", n->name, vcc_op_name(n->op));
    return VCC_ERR_SHAPE;
}

VccStatus vcc_shape_mismatch(VccCtx *ctx, const VccNode *n) {
    vcc_error(ctx, "node '%s' (%s): its inputs and outputs do not have the shapes the op needs", n->name,
              vcc_op_name(n->op));
    return VCC_ERR_SHAPE;
}

bool vcc_node_axis(VccCtx *ctx, const VccNode *n, int64_t axis, int rank, int *out) {
    if (axis < -(int64_t)rank || axis >= rank) {
        vcc_error(ctx, "node '%s' (%s): axis %lld is outside [-%d, %d) for an input of rank %d", n->name,
                  vcc_node_op(n), (long long)axis, rank, rank, rank);
        return false;
    }
    *out = (int)(axis < 0 ? axis + rank : axis);
    return true;
}

void vcc_op_attr_problem(VccCtx *ctx, const VccNode *n, const char *group_fmt, const char *a, const char *why) {
    char b[64], tmp[48];
    snprintf(b, sizeof b, "'%s'", vcc_short_name(n->name, tmp, sizeof tmp));
    char *group = vcc_strfmt(group_fmt, vcc_op_name(n->op), a);
    if (why)
        vcc_unsupported(ctx, VCC_PROB_ATTR, group, "%s (%s)", b, why);
    else
        vcc_unsupported(ctx, VCC_PROB_ATTR, group, "%s", b);
    free(group);
}

bool vcc_is_initializer(const VccGraph *g, int t) {
    if (t < 0 || g->tensors[t].producer >= 0) return false;
    VccTensorKind k = g->tensors[t].kind;
    return g->tensors[t].data != NULL || k == VCC_T_PARAM || k == VCC_T_BUFFER || k == VCC_T_CONST;
}

void vcc_attr_drop(VccNode *n, const char *name) {
    for (int a = 0; a < n->nattrs; a++) {
        if (strcmp(n->attrs[a].name, name) != 0) continue;
        free(n->attrs[a].name);
        free(n->attrs[a].ints);
        free(n->attrs[a].floats);
        free(n->attrs[a].s);
        n->attrs[a] = n->attrs[--n->nattrs];
        return;
    }
}

void vcc_drop_inputs(VccGraph *g, int k, int from) {
    VccNode *n = &g->nodes[k];
    int nin = n->nin;
    if (nin <= from) return;
    n->nin = from;
    for (int i = from; i < nin; i++) {
        int t = n->in[i];
        if (t >= 0 && g->tensors[t].kind == VCC_T_PARAM && !vcc_tensor_is_used(g, t)) g->tensors[t].kind = VCC_T_CONST;
    }
}

bool vcc_tensor_is_used(const VccGraph *g, int t) {
    for (int i = 0; i < g->noutputs; i++)
        if (g->outputs[i] == t) return true;
    for (int k = 0; k < g->nnodes; k++)
        for (int i = 0; i < g->nodes[k].nin; i++)
            if (g->nodes[k].in[i] == t) return true;
    return false;
}

/* ------------------------------------------------------------------ gradient rules */

void vcc_diff_grow(VccDiff *d) {
    if (d->g->ntensors <= d->cap) return;
    int ncap = d->g->ntensors * 2;
    d->grad = vcc_realloc(d->grad, sizeof(int) * (size_t)ncap);
    d->req = vcc_realloc(d->req, sizeof(bool) * (size_t)ncap);
    d->owner = vcc_realloc(d->owner, sizeof(int) * (size_t)ncap);
    for (int i = d->cap; i < ncap; i++) {
        d->grad[i] = d->owner[i] = -1;
        d->req[i] = false;
    }
    d->cap = ncap;
}

int vcc_diff_new_grad(VccDiff *d, int t) {
    VccShape s = d->g->tensors[t].shape;
    int id = vcc_tensor_add_unique(d->g, VCC_F32, &s, VCC_T_GRAD_TEMP, "%s.grad", d->g->tensors[t].name);
    vcc_diff_grow(d);
    d->owner[id] = t;
    d->g->tensors[id].grad_of = t;
    return id;
}

void vcc_diff_accum(VccDiff *d, int t, int gt) {
    if (d->g->tensors[gt].grad_of < 0) d->g->tensors[gt].grad_of = t; /* a gradient rule's own output tensor */
    if (d->grad[t] < 0) {
        d->grad[t] = gt;
        return;
    }
    int sum = vcc_diff_new_grad(d, t);
    int in[2] = {d->grad[t], gt};
    char *name = vcc_strfmt("%s.accum", d->g->tensors[sum].name);
    vcc_node_add(d->g, VCC_OP_GRAD_ACCUM, name, in, 2, &sum, 1, VCC_PHASE_BACKWARD);
    free(name);
    d->grad[t] = sum;
}

int vcc_diff_add_node(VccDiff *d, VccOp op, int fwd, const char *suffix, const int *in, int nin, const int *out,
                      int nout) {
    char *name = vcc_strfmt("%s.%s", d->g->nodes[fwd].name, suffix);
    int k = vcc_node_add(d->g, op, name, in, nin, out, nout, VCC_PHASE_BACKWARD);
    free(name);
    vcc_attr_copy_all(&d->g->nodes[k], &d->g->nodes[fwd]);
    free(d->g->nodes[k].onnx_op);
    d->g->nodes[k].onnx_op = NULL;
    return k;
}

int vcc_diff_dy(const VccDiff *d, int k, int i) {
    const VccNode *n = &d->g->nodes[k];
    return i < n->nout && n->out[i] >= 0 ? d->grad[n->out[i]] : -1;
}

/* ------------------------------------------------------------------ emission */

const char *vcc_emit_f32(VccEmit *e, int t) {
    if (t < 0) return "NULL";
    char *buf = e->ptr[e->next++ % 16];
    /* a CUDA bf16 trainer's bfloat16 values take 2 bytes: a (__nv_bfloat16 *), which picks the runtime's
     * bfloat16 overload of the kernel (runtime/cuda/base.cuh) */
    snprintf(buf, sizeof e->ptr[0], e->g->tensors[t].bf16_bytes == 2 ? "VCC_B(%" PRId64 ")" : "VCC_F(%" PRId64 ")",
             e->g->tensors[t].offset);
    return buf;
}

const char *vcc_emit_ptr(VccEmit *e, int t) {
    if (t < 0) return "NULL";
    char *buf = e->ptr[e->next++ % 16];
    snprintf(buf, sizeof e->ptr[0], "(A + %" PRId64 ")", e->g->tensors[t].offset);
    return buf;
}

const char *vcc_emit_et(VccDType dt) {
    static const char *const et[] = {[VCC_F32] = "VCC_ET_F32", [VCC_I64] = "VCC_ET_I64", [VCC_BOOL] = "VCC_ET_BOOL",
                                     [VCC_I32] = "VCC_ET_I32", [VCC_F64] = "VCC_ET_F64", [VCC_I8] = "VCC_ET_I8",
                                     [VCC_I16] = "VCC_ET_I16", [VCC_U8] = "VCC_ET_U8", [VCC_U16] = "VCC_ET_U16",
                                     [VCC_U32] = "VCC_ET_U32", [VCC_U64] = "VCC_ET_U64"};
    VCC_ASSERT(dt > VCC_DT_UNDEF && dt <= VCC_DT_LAST);
    return et[dt];
}

bool vcc_node_typed(const VccGraph *g, const VccNode *n) {
    if (!(vcc_op_def(n->op)->flags & VCC_OPF_TYPED)) return false;
    for (int i = 0; i < 2 && i < n->nin; i++)
        if (n->in[i] >= 0 && g->tensors[n->in[i]].dtype != VCC_F32) return true;
    return false;
}

bool vcc_value_as_float(const VccTensor *t, float *v) {
    const void *p = t->data;
    double d;
    int64_t i;
    switch (t->dtype) {
    case VCC_F32: *v = *(const float *)p; return true;
    case VCC_F64: d = *(const double *)p; *v = (float)d; return isnan(d) || (double)*v == d;
    case VCC_I8: i = *(const int8_t *)p; break;
    case VCC_I16: i = *(const int16_t *)p; break;
    case VCC_I32: i = *(const int32_t *)p; break;
    case VCC_I64: i = *(const int64_t *)p; break;
    case VCC_U8: i = *(const uint8_t *)p; break;
    case VCC_U16: i = *(const uint16_t *)p; break;
    case VCC_U32: i = *(const uint32_t *)p; break;
    case VCC_U64: {
        uint64_t u = *(const uint64_t *)p;
        *v = (float)u;
        return u < ((uint64_t)1 << 63) && (uint64_t)(double)*v == u;
    }
    default: return false;
    }
    *v = (float)i;
    return fabsf(*v) < 9.2e18f && (int64_t)*v == i;
}

const VccTensor *vcc_need_numeric(VccCtx *ctx, const VccGraph *g, const VccNode *n, int i) {
    if (i >= n->nin || n->in[i] < 0) {
        vcc_error(ctx, "node '%s' (%s): missing input %d", n->name, vcc_node_op(n), i);
        return NULL;
    }
    const VccTensor *t = &g->tensors[n->in[i]];
    if (t->dtype == VCC_DT_UNDEF || t->dtype == VCC_BOOL) {
        vcc_error(ctx, "node '%s' (%s): input %d '%s' has dtype %s, expected a number type", n->name,
                  vcc_op_name(n->op), i, t->name, vcc_dtype_name(t->dtype));
        return NULL;
    }
    return t;
}

void vcc_emit_i64s(VccEmit *e, int nlists, const int64_t *const *lists, const int *lens) {
    for (int l = 0; l < nlists; l++) {
        fputs(l ? ", {" : "{", e->f);
        for (int i = 0; i < lens[l]; i++) fprintf(e->f, i ? ", %" PRId64 : "%" PRId64, lists[l][i]);
        fputc('}', e->f);
    }
}

const char *vcc_emit_float(VccEmit *e, float v) {
    char *buf = e->ptr[e->next++ % 16];
    if (isinf(v)) return v < 0 ? "-INFINITY" : "INFINITY";
    if (isnan(v)) return "NAN";
    int len = snprintf(buf, sizeof e->ptr[0], "%.9g", (double)v);
    snprintf(buf + len, sizeof e->ptr[0] - (size_t)len, strpbrk(buf, ".e") ? "f" : ".0f");
    return buf;
}

int64_t vcc_emit_numel(const VccEmit *e, int t) { return vcc_shape_numel(&e->g->tensors[t].shape); }

void vcc_emit_ncs(const VccEmit *e, int t, int64_t *N, int64_t *C, int64_t *S) {
    const VccShape *s = &e->g->tensors[t].shape;
    *N = s->dims[0];
    *C = s->rank > 1 ? s->dims[1] : 1;
    *S = 1;
    for (int i = 2; i < s->rank; i++) *S *= s->dims[i];
}

void vcc_indices_i64(VccGraph *g, int k, int i) {
    const VccTensor *ix = &g->tensors[g->nodes[k].in[i]];
    if (ix->kind != VCC_T_CONST || !ix->data || ix->dtype != VCC_I32) return;
    VccShape s = ix->shape;
    size_t cnt = ix->data_bytes / 4;
    int64_t *v = vcc_malloc((cnt ? cnt : 1) * sizeof *v);
    for (size_t j = 0; j < cnt; j++) {
        int32_t w;
        memcpy(&w, (const unsigned char *)ix->data + 4 * j, 4);
        v[j] = w;
    }
    int t = vcc_tensor_add_unique(g, VCC_I64, &s, VCC_T_CONST, "%s.indices", g->nodes[k].name);
    g->tensors[t].data = v;
    g->tensors[t].data_bytes = cnt * sizeof *v;
    g->nodes[k].in[i] = t;
}

void vcc_emit_bcast_desc(VccEmit *e, const VccBroadcast *bc) {
    int64_t dims[VCC_MAX_RANK], sa[VCC_MAX_RANK], sb[VCC_MAX_RANK], total;
    int r = vcc_bcast_collapse(bc, 1, 1, dims, sa, sb, &total);
    if (r == 0) { /* one element */
        dims[0] = sa[0] = sb[0] = 1;
        r = 1;
    }
    const int64_t *lists[3] = {dims, sa, sb};
    int lens[3] = {r, r, r};
    fprintf(e->f, "    {\n        static const VccBcast d = {%d, %" PRId64 ", ", r, total);
    vcc_emit_i64s(e, 3, lists, lens);
    fputs("};\n", e->f);
}
