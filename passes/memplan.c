/*
 * memplan.c — one arena: offsets for every tensor.
 *
 * Requires: liveness and inplace.
 * Produces: tensor offsets (a tensor sharing bytes through a view or in-place reuse gets its root's
 *   offset), g->arena_bytes = persistent region + planned region, lower_bound_bytes, no_reuse_bytes.
 *   Persistent region: parameters, BN buffers, consts, gradients kept by --keep-grads (planned ones,
 *   GRAD_PLANNED, are in the planned region like any activation), optimizer state, in graph order, each
 *   VCC_ARENA_ALIGN-aligned. Planned region: one item per root buffer with the union interval of the
 *   tensors sharing it, placed by the pure planner in passes/dsa.c (best of several greedy orders), then
 *   checked with vcc_plan_check.
 */
#define _POSIX_C_SOURCE 200809L /* pthreads */
#include "passes.h"
#include "dsa.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int64_t align_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

static bool is_planned_root(const VccGraph *g, int t, const int *gs) {
    const VccTensor *x = &g->tensors[t];
    return x->alias_of < 0 && x->inplace_of < 0 && !vcc_tensor_is_persistent(x) && gs[t] >= 0 &&
           vcc_tensor_bytes(x) > 0;
}

/* The planned region's items of g: one per planned root buffer (its bytes, VCC_ARENA_ALIGN, the union
 * interval of the tensors sharing it), into items, their tensors into ids (when not NULL); returns how
 * many. roots from vcc_tensor_roots; items and ids hold g->ntensors entries. */
static size_t planned_items(const VccGraph *g, const int *roots, VccDsaItem *items, int *ids) {
    int nt = g->ntensors;
    int *gs = vcc_malloc(sizeof(int) * (size_t)(nt ? nt : 1));
    int *ge = vcc_malloc(sizeof(int) * (size_t)(nt ? nt : 1));
    vcc_root_intervals(g, roots, gs, ge);
    size_t n = 0;
    for (int t = 0; t < nt; t++) {
        if (!is_planned_root(g, t, gs)) continue;
        if (ids) ids[n] = t;
        items[n].size = (uint64_t)vcc_tensor_bytes(&g->tensors[t]);
        items[n].align = VCC_ARENA_ALIGN;
        items[n].start = gs[t];
        items[n].end = ge[t];
        n++;
    }
    free(gs);
    free(ge);
    return n;
}

/* The persistent region as vcc_memplan lays it out: each persistent tensor that views no other at the
 * next VCC_ARENA_ALIGN-aligned offset, in graph order (with set, g itself: that offset written, every
 * other tensor's -1). Returns the region's bytes; *end is the end of its last root tensor's bytes
 * (unaligned). */
static int64_t persistent_layout(const VccGraph *g, const int *roots, int64_t *end, VccGraph *set) {
    int64_t cursor = 0;
    *end = 0;
    for (int t = 0; t < g->ntensors; t++) {
        const VccTensor *x = &g->tensors[t];
        if (set) set->tensors[t].offset = -1;
        if (x->alias_of >= 0 || !vcc_tensor_is_persistent(x)) continue;
        if (set) set->tensors[t].offset = cursor;
        if (roots[t] == t && cursor + vcc_tensor_bytes(x) > *end) *end = cursor + vcc_tensor_bytes(x);
        cursor += align_up(vcc_tensor_bytes(x), VCC_ARENA_ALIGN);
    }
    return cursor;
}

VccStatus vcc_memplan(VccCtx *ctx, VccGraph *g) {
    int nt = g->ntensors;
    int *roots = vcc_tensor_roots(g);
    int64_t persistent_end;
    g->persistent_bytes = persistent_layout(g, roots, &persistent_end, g);
    int *ids = vcc_malloc(sizeof(int) * (size_t)(nt ? nt : 1));
    VccDsaItem *items = vcc_malloc(sizeof(VccDsaItem) * (size_t)(nt ? nt : 1));
    size_t n = planned_items(g, roots, items, ids);
    uint64_t *offsets = vcc_malloc(sizeof(uint64_t) * (n ? n : 1));
    uint64_t planned = 0;
    VccStatus st = VCC_OK;
    clock_t t0 = clock();
    int planner = n ? vcc_dsa_plan(items, n, VCC_DSA_BEST, offsets, &planned) : 0;
    g->plan_seconds = (double)(clock() - t0) / CLOCKS_PER_SEC;
    if (planner != 0) {
        vcc_error(ctx, "internal: the memory planner rejected its input");
        st = VCC_ERR_INTERNAL;
    }
    if (!st) {
        for (size_t i = 0; i < n; i++) g->tensors[ids[i]].offset = g->persistent_bytes + (int64_t)offsets[i];
        for (int t = 0; t < nt; t++) g->tensors[t].offset = g->tensors[roots[t]].offset;
        vcc_plan_totals(g); /* arena = the end of the last buffer; lower bound and no-reuse sum */
        st = vcc_plan_check(ctx, g);
    }
    free(roots);
    free(ids);
    free(items);
    free(offsets);
    return st;
}

/* One state of a VccPlanBatch: its items and persistent region, and the arena once planned. */
typedef struct {
    VccDsaItem *items;
    size_t n;
    int64_t persistent, persistent_end, arena;
} BatchState;

struct VccPlanBatch {
    BatchState *s;
    int n, cap, next; /* states; room; the next one a thread takes (under lock) */
    pthread_mutex_t lock;
};

VccPlanBatch *vcc_plan_batch_new(void) {
    VccPlanBatch *b = vcc_calloc(1, sizeof *b);
    pthread_mutex_init(&b->lock, NULL);
    return b;
}

int vcc_plan_batch_add(VccPlanBatch *b, const VccGraph *g) {
    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 64;
        b->s = vcc_realloc(b->s, sizeof(BatchState) * (size_t)b->cap);
    }
    BatchState *s = &b->s[b->n];
    int *roots = vcc_tensor_roots(g);
    s->items = vcc_malloc(sizeof(VccDsaItem) * (size_t)(g->ntensors ? g->ntensors : 1));
    s->n = planned_items(g, roots, s->items, NULL);
    s->persistent = persistent_layout(g, roots, &s->persistent_end, NULL);
    s->arena = -1;
    free(roots);
    return b->n++;
}

/* The arena of state s as vcc_memplan and vcc_plan_totals make it: the end of the last buffer (the
 * planned ones after the persistent region), aligned; -1 when the planner rejects the items. */
static int64_t batch_plan(const BatchState *s) {
    uint64_t *offsets = vcc_malloc(sizeof(uint64_t) * (s->n ? s->n : 1)), planned = 0;
    int64_t end = s->persistent_end;
    int rc = s->n ? vcc_dsa_plan(s->items, s->n, VCC_DSA_BEST, offsets, &planned) : 0;
    for (size_t i = 0; !rc && i < s->n; i++)
        if (s->persistent + (int64_t)offsets[i] + (int64_t)s->items[i].size > end)
            end = s->persistent + (int64_t)offsets[i] + (int64_t)s->items[i].size;
    free(offsets);
    return rc ? -1 : align_up(end, VCC_ARENA_ALIGN);
}

static void *batch_worker(void *arg) {
    VccPlanBatch *b = arg;
    for (;;) {
        pthread_mutex_lock(&b->lock);
        int i = b->next < b->n ? b->next++ : -1;
        pthread_mutex_unlock(&b->lock);
        if (i < 0) return NULL;
        b->s[i].arena = batch_plan(&b->s[i]);
    }
}

void vcc_plan_batch_run(VccPlanBatch *b, int threads) {
    enum { MAX_THREADS = 16 };
    pthread_t tid[MAX_THREADS];
    int started = 0;
    if (threads > MAX_THREADS) threads = MAX_THREADS;
    if (threads > b->n) threads = b->n;
    /* threads - 1 helpers and this thread; one that cannot start leaves its share to the others */
    for (int i = 1; i < threads; i++)
        if (pthread_create(&tid[started], NULL, batch_worker, b) == 0) started++;
    batch_worker(b);
    for (int i = 0; i < started; i++) pthread_join(tid[i], NULL);
}

int64_t vcc_plan_batch_arena(const VccPlanBatch *b, int i) { return i >= 0 && i < b->n ? b->s[i].arena : -1; }

void vcc_plan_batch_free(VccPlanBatch *b) {
    if (!b) return;
    for (int i = 0; i < b->n; i++) free(b->s[i].items);
    free(b->s);
    pthread_mutex_destroy(&b->lock);
    free(b);
}

void vcc_plan_totals(VccGraph *g) {
    int nt = g->ntensors;
    int *roots = vcc_tensor_roots(g);
    int64_t persistent = 0, no_reuse = 0, saved = 0, end = 0;
    for (int t = 0; t < nt; t++) {
        const VccTensor *x = &g->tensors[t];
        if (x->alias_of >= 0) continue;
        int64_t bytes = align_up(vcc_tensor_bytes(x), VCC_ARENA_ALIGN);
        no_reuse += bytes;
        if (vcc_tensor_is_persistent(x)) persistent += bytes;
        else if (!strcmp(vcc_tensor_category(x), "saved_activation")) saved += bytes;
        if (roots[t] == t && x->offset >= 0 && x->offset + vcc_tensor_bytes(x) > end)
            end = x->offset + vcc_tensor_bytes(x);
    }
    g->no_reuse_bytes = no_reuse;
    g->persistent_bytes = persistent;
    g->saved_floor_bytes = persistent + saved;
    g->arena_bytes = align_up(end, VCC_ARENA_ALIGN);
    g->planned_bytes = g->arena_bytes > persistent ? g->arena_bytes - persistent : 0;
    g->lower_bound_bytes = vcc_plan_lower_bound(g);
    free(roots);
}

int64_t vcc_plan_lower_bound(const VccGraph *g) {
    int *roots = vcc_tensor_roots(g);
    VccDsaItem *items = vcc_malloc(sizeof(VccDsaItem) * (size_t)(g->ntensors ? g->ntensors : 1));
    size_t n = planned_items(g, roots, items, NULL);
    int64_t end, persistent = persistent_layout(g, roots, &end, NULL);
    int64_t lb = persistent + (int64_t)(n ? vcc_dsa_lower_bound(items, n) : 0);
    free(roots);
    free(items);
    return lb;
}

typedef struct {
    int64_t offset;
    int t;
} OffsetRef;

static int by_offset(const void *a, const void *b) {
    const OffsetRef *x = a, *y = b;
    if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
    return x->t - y->t;
}

/* Report a plan that fails the check: vcc's own plan failing it is an internal error; a plan read from
 * a .vir dump (ctx->from_dump) is the user's. printf-style. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void plan_error(VccCtx *ctx, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *msg = vcc_vstrfmt(fmt, ap);
    va_end(ap);
    vcc_error(ctx, "%splan check: %s", ctx->from_dump ? "" : "internal: ", msg);
    free(msg);
}

/* True if node n reads tensor t or a view of it (views of t reach t through alias_of). */
static bool node_reads(const VccGraph *g, const VccNode *n, int t) {
    for (int i = 0; i < n->nin; i++)
        for (int x = n->in[i]; x >= 0; x = g->tensors[x].alias_of)
            if (x == t) return true;
    return false;
}

/* Every live interval covers its tensor's uses: written at its producer's step, read at each reader's
 * step (a read of a view reads everything it views), read by the host at step g->nnodes when it is the
 * loss, a graph output or what one of those views. */
static VccStatus check_intervals(VccCtx *ctx, const VccGraph *g, const int *roots) {
    for (int t = 0; t < g->ntensors; t++) {
        const VccTensor *v = &g->tensors[t];
        if (vcc_tensor_is_persistent(&g->tensors[roots[t]]) || (v->start < 0 && v->end < 0)) continue;
        if (v->start < 0 || v->start > v->end || v->end > g->nnodes) {
            plan_error(ctx, "'%s' has live=[%d,%d], not an interval of steps 0..%d (%d: the "
                      "host's read after the last node)", v->name, v->start, v->end, g->nnodes, g->nnodes);
            return VCC_ERR_INTERNAL;
        }
    }
    for (int k = 0; k <= g->nnodes; k++) {
        const VccNode *n = k < g->nnodes ? &g->nodes[k] : NULL;
        int nuse = n ? n->nin + n->nout : g->noutputs + 1;
        for (int u = 0; u < nuse; u++) {
            int t = !n ? (u == 0 ? g->loss : g->outputs[u - 1]) : u < n->nin ? n->in[u] : n->out[u - n->nin];
            bool write = n && u >= n->nin;
            for (int x = t; x >= 0; x = write ? -1 : g->tensors[x].alias_of) {
                const VccTensor *v = &g->tensors[x];
                if (vcc_tensor_is_persistent(&g->tensors[roots[x]])) break; /* live at every step */
                if (v->start <= k && k <= v->end) continue;
                if (n)
                    plan_error(ctx, "'%s' has live=[%d,%d] but step %d ('%s') %s it", v->name,
                              v->start, v->end, k, n->name, write ? "writes" : "reads");
                else
                    plan_error(ctx, "'%s' has live=[%d,%d] but the host reads it after the last "
                              "step (step %d)", v->name, v->start, v->end, k);
                return VCC_ERR_INTERNAL;
            }
        }
    }
    return VCC_OK;
}

/* True for a value the host reads after the step: the loss, a graph output, or what one of them views. */
static bool host_reads(const VccGraph *g, int t) {
    for (int i = -1; i < g->noutputs; i++)
        for (int x = i < 0 ? g->loss : g->outputs[i]; x >= 0; x = g->tensors[x].alias_of)
            if (x == t) return true;
    return false;
}

typedef struct {
    int root, start, end, t;
} Member;

static int by_root_start(const void *a, const void *b) {
    const Member *x = a, *y = b;
    if (x->root != y->root) return x->root < y->root ? -1 : 1;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return x->t - y->t;
}

/* Tensors that share one buffer in place hold it one after another: a member's interval starts no
 * earlier than every earlier member's ends, and where they touch, the node of that step reads the old
 * value and writes the new one (an elementwise op updating its input). Views are the same value as
 * their base and take no part. */
static VccStatus check_inplace(VccCtx *ctx, const VccGraph *g, const int *roots) {
    Member *m = vcc_malloc(sizeof *m * (size_t)(g->ntensors ? g->ntensors : 1));
    int n = 0;
    for (int t = 0; t < g->ntensors; t++) {
        const VccTensor *x = &g->tensors[t];
        if (x->alias_of >= 0 || x->start < 0 || vcc_tensor_is_persistent(&g->tensors[roots[t]])) continue;
        m[n++] = (Member){roots[t], x->start, x->end, t};
    }
    qsort(m, (size_t)n, sizeof *m, by_root_start);
    VccStatus st = VCC_OK;
    int prev = 0; /* the member of m[i]'s group with the latest end so far: it holds the bytes before m[i] */
    for (int i = 1; i < n && !st; i++) {
        if (m[i].root != m[i - 1].root) {
            prev = i;
            continue;
        }
        const VccTensor *a = &g->tensors[m[prev].t], *b = &g->tensors[m[i].t];
        bool handoff = m[prev].end == m[i].start && m[i].start < g->nnodes &&
                       g->tensors[m[i].t].producer == m[i].start && node_reads(g, &g->nodes[m[i].start], m[prev].t);
        if (m[prev].end > m[i].start || (m[prev].end == m[i].start && !handoff)) {
            plan_error(ctx, "'%s' (live=[%d,%d]) is written over '%s' (live=[%d,%d]), which is "
                      "still %s%s", b->name, b->start, b->end, a->name, a->start, a->end,
                      host_reads(g, m[prev].t) ? "read by the host after the step" : "live",
                      ctx->from_dump ? " (tensors sharing bytes in place (inplace_of=) hold them one after another: "
                                       "edit intervals in a dump after liveness, before in-place sharing)"
                                     : "");
            st = VCC_ERR_INTERNAL;
        }
        if (m[i].end > m[prev].end) prev = i;
    }
    free(m);
    return st;
}

VccStatus vcc_plan_check(VccCtx *ctx, const VccGraph *g) {
    int nt = g->ntensors;
    int *gs = vcc_malloc(sizeof(int) * (size_t)(nt ? nt : 1));
    int *ge = vcc_malloc(sizeof(int) * (size_t)(nt ? nt : 1));
    OffsetRef *bufs = vcc_malloc(sizeof(OffsetRef) * (size_t)(nt ? nt : 1));
    int *roots = vcc_tensor_roots(g);
    vcc_root_intervals(g, roots, gs, ge);
    VccStatus st = check_intervals(ctx, g, roots);
    if (!st) st = check_inplace(ctx, g, roots);
    /* the buffers: root tensors that hold bytes and are live (persistent, or used) */
    int nb = 0;
    for (int a = 0; a < nt && !st; a++) {
        const VccTensor *x = &g->tensors[a];
        if (roots[a] != a || vcc_tensor_bytes(x) == 0) continue;
        if (!vcc_tensor_is_persistent(x) && gs[a] < 0) continue; /* never live (unused) */
        if (x->offset < 0 || x->offset % VCC_ARENA_ALIGN || x->offset > g->arena_bytes - vcc_tensor_bytes(x)) {
            plan_error(ctx, "'%s' at offset %" PRId64 " is outside the arena or misaligned",
                      x->name, x->offset);
            st = VCC_ERR_INTERNAL;
            break;
        }
        bufs[nb].offset = x->offset;
        bufs[nb++].t = a;
    }
    /* in offset order, a buffer can only share bytes with the buffers that start before it ends */
    qsort(bufs, (size_t)nb, sizeof(OffsetRef), by_offset);
    for (int i = 0; i < nb && !st; i++) {
        int a = bufs[i].t;
        const VccTensor *x = &g->tensors[a];
        for (int j = i + 1; j < nb && !st; j++) {
            int b = bufs[j].t;
            const VccTensor *y = &g->tensors[b];
            if (y->offset >= x->offset + vcc_tensor_bytes(x)) break;
            bool time = vcc_tensor_is_persistent(x) || vcc_tensor_is_persistent(y) || !(ge[a] < gs[b] || ge[b] < gs[a]);
            if (time) {
                plan_error(ctx, "'%s' and '%s' are live together and share arena bytes",
                          x->name, y->name);
                st = VCC_ERR_INTERNAL;
            }
        }
    }
    free(gs);
    free(ge);
    free(roots);
    free(bufs);
    return st;
}

void vcc_json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

void vcc_plan_write_json(FILE *f, const VccGraph *g, VccPrecision precision) {
    fprintf(f, "{\n  \"precision\": \"%s\",\n  \"arena_bytes\": %" PRId64 ",\n  \"lower_bound_bytes\": %" PRId64
               ",\n  \"no_reuse_bytes\": %" PRId64 ",\n  \"persistent_bytes\": %" PRId64
               ",\n  \"saved_floor_bytes\": %" PRId64 ",\n  \"steps\": %d",
            vcc_precision_name(precision), g->arena_bytes, g->lower_bound_bytes, g->no_reuse_bytes,
            g->persistent_bytes, g->saved_floor_bytes, g->nnodes);
    /* passes/schedule's peaks; unknown (null) for a graph read back after the schedule */
    if (g->schedule_peak_bytes > 0)
        fprintf(f, ",\n  \"schedule_peak_bytes\": %" PRId64 ",\n  \"given_order_peak_bytes\": %" PRId64,
                g->schedule_peak_bytes, g->given_order_peak_bytes);
    else
        fputs(",\n  \"schedule_peak_bytes\": null,\n  \"given_order_peak_bytes\": null", f);
    if (g->plan_seconds >= 0) fprintf(f, ",\n  \"plan_seconds\": %.6f", g->plan_seconds);
    else fputs(",\n  \"plan_seconds\": null", f);
    /* the conv workspaces passes/schedule shrank where they set the peak; unknown (null) for a graph read
     * back after the schedule, whose workspaces are as the dump gives them */
    if (g->schedule_peak_bytes > 0)
        fprintf(f, ",\n  \"workspaces_shrunk\": %d,\n  \"workspace_shrunk_bytes\": %" PRId64, g->ws_shrunk,
                g->ws_shrunk_bytes);
    else
        fputs(",\n  \"workspaces_shrunk\": null,\n  \"workspace_shrunk_bytes\": null", f);
    /* passes/remat: the arena before recomputation, the values recomputed and their share of the step's
     * FLOPs (vcc_step_flops), the conv workspaces it halved; null for a graph read back after the plan */
    if (g->step_flops > 0)
        fprintf(f, ",\n  \"arena_unlimited_bytes\": %" PRId64 ",\n  \"recomputed_values\": %d,\n  \"recompute_flops\": %.0f"
                   ",\n  \"step_flops\": %.0f,\n  \"recompute_flops_percent\": %.4f"
                   ",\n  \"recompute_workspace_halvings\": %d,\n  \"recompute_workspace_bytes\": %" PRId64,
                g->arena_unlimited_bytes, g->remat_values, g->remat_flops, g->step_flops,
                100.0 * g->remat_flops / g->step_flops, g->remat_ws_shrunk, g->remat_ws_shrunk_bytes);
    else
        fputs(",\n  \"arena_unlimited_bytes\": null, \"recomputed_values\": null, \"recompute_flops\": null"
              ",\n  \"step_flops\": null, \"recompute_flops_percent\": null"
              ",\n  \"recompute_workspace_halvings\": null, \"recompute_workspace_bytes\": null", f);
    fputs(",\n  \"tensors\": [", f);
    bool first = true;
    for (int t = 0; t < g->ntensors; t++) {
        const VccTensor *x = &g->tensors[t];
        if (vcc_tensor_bytes(x) == 0 || x->offset < 0) continue;
        fputs(first ? "\n    {\"name\": " : ",\n    {\"name\": ", f);
        first = false;
        vcc_json_str(f, x->name);
        fprintf(f, ", \"bytes\": %" PRId64 ", \"elements\": %" PRId64 ", \"bf16\": %s, \"offset\": %" PRId64 ", ",
                vcc_tensor_bytes(x), vcc_shape_numel(&x->shape), x->bf16_bytes ? "true" : "false", x->offset);
        if (x->start >= 0) fprintf(f, "\"start\": %d, \"end\": %d, ", x->start, x->end);
        else fputs("\"start\": null, \"end\": null, ", f);
        fputs("\"category\": ", f);
        vcc_json_str(f, vcc_tensor_category(x));
        const char *keys[2] = {", \"inplace_of\": ", ", \"view_of\": "};
        int src[2] = {x->inplace_of, x->alias_of};
        for (int i = 0; i < 2; i++) {
            fputs(keys[i], f);
            if (src[i] >= 0) vcc_json_str(f, g->tensors[src[i]].name);
            else fputs("null", f);
        }
        fputc('}', f);
    }
    fputs("\n  ]\n}\n", f);
}
