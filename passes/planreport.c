/*
 * planreport.c — the memory plan for people: the `vcc plan` report, a trace-event JSON and an SVG.
 *
 * Requires: memplan (offsets, live intervals, arena line).
 * Produces: text on a FILE *; the graph is not changed.
 *
 * The three views share one model of the plan (PlanView): blocks (a tensor holding bytes of its own over
 * steps [x0, x1)), the planned bytes live at each step (each buffer rounded up to VCC_ARENA_ALIGN, as the
 * lower bound counts it) and the peak step, where that load is largest. See planreport.h.
 */
#include "planreport.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"

#define MIB (1024.0 * 1024.0)

/* Categories in report order (vcc_tensor_category's names) and their colours in the SVG. */
static const char *const CATS[] = {"parameter", "gradient", "optimizer_state", "saved_activation", "activation",
                                   "workspace"};
static const char *const COLOURS[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948"};
#define NCATS ((int)(sizeof CATS / sizeof CATS[0]))

static int cat_index(const VccTensor *t) {
    const char *c = vcc_tensor_category(t);
    for (int i = 0; i < NCATS; i++)
        if (!strcmp(c, CATS[i])) return i;
    VCC_ASSERT(!"unknown plan category");
    return 0;
}

static int64_t align_up(int64_t x) { return (x + VCC_ARENA_ALIGN - 1) / VCC_ARENA_ALIGN * VCC_ARENA_ALIGN; }

typedef struct {
    int t, root;
    int x0, x1;        /* steps [x0, x1) over which t holds the bytes */
    bool persistent;
    int64_t offset, bytes;
} Block;

typedef struct {
    Block *b;
    int n;
    int steps;         /* g->nnodes; blocks end at most at steps + 1 */
    int64_t *load;     /* [steps + 1]: planned bytes live at each step (buffers rounded up) */
    int peak;          /* the first step of the largest load */
    int nbuffers;      /* planned buffers (roots holding bytes) */
} PlanView;

static int by_root_x0(const void *a, const void *b) {
    const Block *x = a, *y = b;
    if (x->root != y->root) return x->root < y->root ? -1 : 1;
    if (x->x0 != y->x0) return x->x0 < y->x0 ? -1 : 1;
    return x->t - y->t;
}

static void view_init(PlanView *v, const VccGraph *g) {
    int nt = g->ntensors;
    int *roots = vcc_tensor_roots(g);
    v->steps = g->nnodes;
    v->b = vcc_malloc(sizeof(Block) * (size_t)(nt ? nt : 1));
    v->n = 0;
    for (int t = 0; t < nt; t++) {
        const VccTensor *x = &g->tensors[t];
        if (x->alias_of >= 0 || vcc_tensor_bytes(x) == 0 || x->offset < 0) continue;
        bool pers = vcc_tensor_is_persistent(&g->tensors[roots[t]]);
        if (!pers && x->start < 0) continue;
        v->b[v->n++] = (Block){t, roots[t], pers ? 0 : x->start, pers ? v->steps + 1 : x->end + 1, pers, x->offset,
                               vcc_tensor_bytes(x)};
    }
    /* one buffer's holders follow one another: each block ends where the next holder takes the bytes */
    qsort(v->b, (size_t)v->n, sizeof(Block), by_root_x0);
    for (int i = 0; i + 1 < v->n; i++)
        if (v->b[i].root == v->b[i + 1].root && v->b[i + 1].x0 < v->b[i].x1)
            v->b[i].x1 = v->b[i + 1].x0 > v->b[i].x0 ? v->b[i + 1].x0 : v->b[i].x0;
    v->load = vcc_calloc((size_t)v->steps + 2, sizeof(int64_t));
    v->nbuffers = 0;
    for (int i = 0; i < v->n; i++) {
        const Block *b = &v->b[i];
        if (b->persistent) continue;
        if (i == 0 || v->b[i - 1].root != b->root) v->nbuffers++;
        int64_t sz = align_up(vcc_tensor_bytes(&g->tensors[b->root]));
        for (int k = b->x0; k < b->x1 && k <= v->steps; k++) v->load[k] += sz;
    }
    v->peak = 0;
    for (int k = 1; k <= v->steps; k++)
        if (v->load[k] > v->load[v->peak]) v->peak = k;
    free(roots);
}

static void view_free(PlanView *v) {
    free(v->b);
    free(v->load);
}

/* The op that produced t ("input", "label"... for a tensor no node writes) and its node's name ("-"). */
static const char *tensor_op(const VccGraph *g, const VccTensor *x) {
    return x->producer >= 0 ? vcc_op_name(g->nodes[x->producer].op) : vcc_tensor_kind_name(x->kind);
}
static const char *tensor_layer(const VccGraph *g, const VccTensor *x) {
    return x->producer >= 0 ? g->nodes[x->producer].name : "-";
}

static int by_bytes_desc(const void *a, const void *b) {
    const Block *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static double pct(int64_t part, int64_t whole) { return whole > 0 ? 100.0 * (double)part / (double)whole : 0.0; }

#define REPORT_TOP 30 /* tensors listed at the peak step; the rest are summed on one line */

void vcc_plan_report(FILE *f, const VccGraph *g, const char *model, const VccGraph *unfused) {
    PlanView v;
    view_init(&v, g);
    int64_t arena = g->arena_bytes, lb = g->lower_bound_bytes;
    fprintf(f, "%s: %d steps, %d tensors holding bytes (%d planned buffers)\n", model, g->nnodes, v.n, v.nbuffers);
    fprintf(f, "  arena        %14" PRId64 " bytes  %10.1f MiB\n", arena, arena / MIB);
    fprintf(f, "  lower bound  %14" PRId64 " bytes  %10.1f MiB   arena/LB %.4f\n", lb, lb / MIB,
            lb > 0 ? (double)arena / (double)lb : 0.0);
    fprintf(f, "  no reuse     %14" PRId64 " bytes  %10.1f MiB   arena/no-reuse %.4f\n", g->no_reuse_bytes,
            g->no_reuse_bytes / MIB, g->no_reuse_bytes > 0 ? (double)arena / (double)g->no_reuse_bytes : 0.0);
    fprintf(f, "  persistent   %14" PRId64 " bytes  %10.1f MiB   planned region %" PRId64 " bytes\n",
            g->persistent_bytes, g->persistent_bytes / MIB, g->planned_bytes);
    fprintf(f, "  saved floor  %14" PRId64 " bytes  %10.1f MiB   arena/floor %.4f (persistent + saved "
               "activations: no order needs less without recomputation)\n",
            g->saved_floor_bytes, g->saved_floor_bytes / MIB,
            g->saved_floor_bytes > 0 ? (double)arena / (double)g->saved_floor_bytes : 0.0);

    /* by category: what the arena holds at the peak step, and what one buffer per tensor would take */
    int64_t at_peak[NCATS] = {0}, no_reuse[NCATS] = {0};
    for (int i = 0; i < v.n; i++) {
        const Block *b = &v.b[i];
        if (b->persistent || (b->x0 <= v.peak && v.peak < b->x1))
            at_peak[cat_index(&g->tensors[b->t])] += align_up(vcc_tensor_bytes(&g->tensors[b->root]));
    }
    for (int t = 0; t < g->ntensors; t++)
        if (g->tensors[t].alias_of < 0) no_reuse[cat_index(&g->tensors[t])] += align_up(vcc_tensor_bytes(&g->tensors[t]));
    const VccNode *pn = v.peak < g->nnodes ? &g->nodes[v.peak] : NULL;
    fprintf(f, "\npeak step %d (%s%s%s%s): the lower bound is the bytes live there\n", v.peak,
            pn ? vcc_op_name(pn->op) : "the host's read after the last node", pn ? " \"" : "", pn ? pn->name : "",
            pn ? "\"" : "");
    fprintf(f, "  %-18s %14s %10s %8s   %14s %10s\n", "category", "at peak bytes", "MiB", "% arena", "no-reuse bytes",
            "MiB");
    int64_t sum = 0, nr = 0;
    for (int c = 0; c < NCATS; c++) {
        if (!at_peak[c] && !no_reuse[c]) continue;
        fprintf(f, "  %-18s %14" PRId64 " %10.1f %7.1f%%   %14" PRId64 " %10.1f\n", CATS[c], at_peak[c],
                at_peak[c] / MIB, pct(at_peak[c], arena), no_reuse[c], no_reuse[c] / MIB);
        sum += at_peak[c];
        nr += no_reuse[c];
    }
    fprintf(f, "  %-18s %14" PRId64 " %10.1f %7.1f%%\n", "(free at peak)", arena - sum, (arena - sum) / MIB,
            pct(arena - sum, arena));
    fprintf(f, "  %-18s %14" PRId64 " %10.1f %7.1f%%   %14" PRId64 " %10.1f\n", "total", arena, arena / MIB,
            pct(arena, arena), nr, nr / MIB);

    /* the tensors live at the peak step, largest first */
    Block *live = vcc_malloc(sizeof(Block) * (size_t)(v.n ? v.n : 1));
    int nlive = 0;
    for (int i = 0; i < v.n; i++)
        if (!v.b[i].persistent && v.b[i].x0 <= v.peak && v.peak < v.b[i].x1) live[nlive++] = v.b[i];
    qsort(live, (size_t)nlive, sizeof(Block), by_bytes_desc);
    fprintf(f, "\ntensors live at step %d: %d, %" PRId64 " bytes (%.1f MiB) in the planned region, largest first\n",
            v.peak, nlive, v.load[v.peak], v.load[v.peak] / MIB);
    fprintf(f, "  %12s %9s %12s %-16s %-24s %-9s %s\n", "bytes", "MiB", "offset", "category", "op", "live",
            "layer / tensor");
    int64_t rest = 0;
    for (int i = 0; i < nlive; i++) {
        const VccTensor *x = &g->tensors[live[i].t];
        if (i >= REPORT_TOP) {
            rest += live[i].bytes;
            continue;
        }
        char iv[32];
        snprintf(iv, sizeof iv, "[%d,%d]", x->start, x->end);
        fprintf(f, "  %12" PRId64 " %9.2f %12" PRId64 " %-16s %-24s %-9s \"%s\" / \"%s\"\n", live[i].bytes,
                live[i].bytes / MIB, live[i].offset, vcc_tensor_category(x), tensor_op(g, x), iv, tensor_layer(g, x),
                x->name);
    }
    if (nlive > REPORT_TOP)
        fprintf(f, "  ... %d more, %" PRId64 " bytes (%.1f MiB)\n", nlive - REPORT_TOP, rest, rest / MIB);
    free(live);

    /* what sharing and fusion removed */
    int ninplace = 0, nviews = 0, nattn = 0;
    int64_t inplace_bytes = 0, view_bytes = 0;
    for (int t = 0; t < g->ntensors; t++) {
        const VccTensor *x = &g->tensors[t];
        if (x->alias_of >= 0 && vcc_tensor_bytes(x) > 0) nviews++, view_bytes += vcc_tensor_bytes(x);
        else if (x->inplace_of >= 0 && vcc_tensor_bytes(x) > 0) ninplace++, inplace_bytes += vcc_tensor_bytes(x);
    }
    for (int k = 0; k < g->nnodes; k++) nattn += g->nodes[k].op == VCC_OP_ATTENTION;
    fprintf(f, "\nremoved by sharing and fusion\n");
    fprintf(f, "  in place: %d outputs take the bytes of an input that dies at their node: %" PRId64
               " bytes (%.1f MiB) of no buffer of their own\n", ninplace, inplace_bytes, inplace_bytes / MIB);
    fprintf(f, "  views: %d tensors (Reshape, Flatten, Identity, ...) are their base's bytes: %" PRId64
               " bytes (%.1f MiB)\n", nviews, view_bytes, view_bytes / MIB);
    fprintf(f, "  fused attention: %d FusedAttention sites (each saves its output and a log-sum-exp per row, not "
               "the L x L scores and probabilities)\n", nattn);
    fprintf(f, "  workspaces: %d conv workspaces that set the peak run in chunks of fewer im2col columns than "
               "--workspace-limit allows: %" PRId64 " bytes (%.1f MiB) less at their steps\n", g->ws_shrunk,
            g->ws_shrunk_bytes, g->ws_shrunk_bytes / MIB);
    int nbf16 = 0, ncopies = 0, unit = 2;
    int64_t bf16_bytes = 0;
    for (int t = 0; t < g->ntensors; t++) {
        const VccTensor *x = &g->tensors[t];
        if (!x->bf16_bytes || x->alias_of >= 0 || x->inplace_of >= 0) continue;
        nbf16++;
        bf16_bytes += vcc_tensor_bytes(x);
        unit = x->bf16_bytes;
    }
    for (int k = 0; k < g->nnodes; k++) ncopies += g->nodes[k].op == VCC_OP_CAST_BF16 && g->nodes[k].phase == VCC_PHASE_FORWARD;
    if (nbf16)
        fprintf(f, "  bfloat16 (--precision bf16): %d values and gradients hold bfloat16 values, %d bytes each: %" PRId64
                   " bytes (%.1f MiB) of buffers that float32 would make %" PRId64 " (%d of them bfloat16 copies of "
                   "float32 inputs that convolutions and matrix products read)\n",
                nbf16, unit, bf16_bytes, bf16_bytes / MIB, bf16_bytes / unit * 4, ncopies);
    if (unfused)
        fprintf(f, "  without fusion (--no-fuse-attention): arena %" PRId64 " bytes (%.1f MiB), lower bound %" PRId64
                   " bytes (%.1f MiB): fusion saves %" PRId64 " bytes of arena (%.1f MiB)\n", unfused->arena_bytes,
                unfused->arena_bytes / MIB, unfused->lower_bound_bytes, unfused->lower_bound_bytes / MIB,
                unfused->arena_bytes - arena, (unfused->arena_bytes - arena) / MIB);

    /* what recomputation removed (passes/remat.c: its clones are the nodes named "<node>.recompute") */
    if (g->remat_values > 0 || g->remat_ws_shrunk > 0) {
        fprintf(f, "\nremoved by recomputation (--memory-limit)\n");
        fprintf(f, "  %d saved value%s recomputed in backward instead of kept from the forward, +%.2f%% FLOPs of "
                   "the step (%.3g of %.3g)\n", g->remat_values, g->remat_values == 1 ? "" : "s",
                g->step_flops > 0 ? 100.0 * g->remat_flops / g->step_flops : 0.0, g->remat_flops, g->step_flops);
        fprintf(f, "  arena without recomputation %" PRId64 " bytes (%.1f MiB), with it %" PRId64 " bytes (%.1f MiB): "
                   "%" PRId64 " bytes (%.1f MiB) less\n", g->arena_unlimited_bytes, g->arena_unlimited_bytes / MIB,
                arena, arena / MIB, g->arena_unlimited_bytes - arena, (g->arena_unlimited_bytes - arena) / MIB);
        if (g->remat_ws_shrunk)
            fprintf(f, "  and %d halving%s of conv workspaces at the peak once nothing there was left to recompute: "
                       "%" PRId64 " bytes (%.1f MiB) less at their steps (" VCC_REMAT_WS_HOW ", so their numbers "
                       "round differently from the unlimited plan's)\n",
                    g->remat_ws_shrunk, g->remat_ws_shrunk == 1 ? "" : "s", g->remat_ws_shrunk_bytes,
                    g->remat_ws_shrunk_bytes / MIB);
        fprintf(f, "  recomputed nodes, in schedule order (step, op, node):\n");
        int listed = 0, total = 0;
        for (int k = 0; k < g->nnodes; k++) {
            const char *name = g->nodes[k].name;
            if (!vcc_has_suffix(name, ".recompute")) continue;
            if (total++ < REPORT_TOP) {
                fprintf(f, "    %5d  %-24s \"%s\"\n", k, vcc_op_name(g->nodes[k].op), name);
                listed++;
            }
        }
        if (total > listed) fprintf(f, "    ... %d more\n", total - listed);
    }
    view_free(&v);
}

/* ------------------------------------------------------------------------------------------------ trace */

static int by_offset_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* The track of an offset: 1 + its index among the sorted distinct offsets. */
static int track_of(const int64_t *offs, int n, int64_t o) {
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (offs[mid] < o) lo = mid + 1;
        else hi = mid;
    }
    return lo + 1;
}

void vcc_plan_write_trace(FILE *f, const VccGraph *g, const char *model) {
    PlanView v;
    view_init(&v, g);
    int64_t *offs = vcc_malloc(sizeof(int64_t) * (size_t)(v.n ? v.n : 1));
    bool *named = vcc_calloc((size_t)(v.n ? v.n : 1), sizeof(bool));
    int no = 0;
    for (int i = 0; i < v.n; i++) offs[no++] = v.b[i].offset;
    qsort(offs, (size_t)no, sizeof(int64_t), by_offset_i64);
    int nd = 0;
    for (int i = 0; i < no; i++)
        if (!nd || offs[nd - 1] != offs[i]) offs[nd++] = offs[i];
    fputs("{\"otherData\": {\"model\": ", f);
    vcc_json_str(f, model);
    fprintf(f, ", \"time_unit\": \"1 us = 1 schedule step\", \"steps\": %d, \"arena_bytes\": %" PRId64
               ", \"lower_bound_bytes\": %" PRId64 ", \"persistent_bytes\": %" PRId64 ", \"peak_step\": %d},\n"
               " \"traceEvents\": [\n",
            g->nnodes, g->arena_bytes, g->lower_bound_bytes, g->persistent_bytes, v.peak);
    fputs("  {\"ph\": \"M\", \"pid\": 1, \"tid\": 0, \"ts\": 0, \"name\": \"process_name\", \"args\": {\"name\": "
          "\"planned region\"}},\n"
          "  {\"ph\": \"M\", \"pid\": 2, \"tid\": 0, \"ts\": 0, \"name\": \"process_name\", \"args\": {\"name\": "
          "\"persistent region\"}},\n",
          f);
    for (int i = 0; i < v.n; i++) {
        const Block *b = &v.b[i];
        const VccTensor *x = &g->tensors[b->t];
        int tid = track_of(offs, nd, b->offset), pid = b->persistent ? 2 : 1;
        if (!named[tid - 1]) {
            named[tid - 1] = true;
            fprintf(f, "  {\"ph\": \"M\", \"pid\": %d, \"tid\": %d, \"ts\": 0, \"name\": \"thread_name\", \"args\": "
                       "{\"name\": \"@ %" PRId64 " (%.2f MiB)\"}},\n", pid, tid, b->offset, b->offset / MIB);
            fprintf(f, "  {\"ph\": \"M\", \"pid\": %d, \"tid\": %d, \"ts\": 0, \"name\": \"thread_sort_index\", "
                       "\"args\": {\"sort_index\": %d}},\n", pid, tid, tid);
        }
        fprintf(f, "  {\"ph\": \"X\", \"pid\": %d, \"tid\": %d, \"ts\": %d, \"dur\": %d, \"name\": ", pid, tid, b->x0,
                b->x1 - b->x0);
        vcc_json_str(f, x->name);
        fputs(", \"cat\": ", f);
        vcc_json_str(f, vcc_tensor_category(x));
        fputs(", \"args\": {\"name\": ", f);
        vcc_json_str(f, x->name);
        fprintf(f, ", \"bytes\": %" PRId64 ", \"offset\": %" PRId64 ", \"category\": ", b->bytes, b->offset);
        vcc_json_str(f, vcc_tensor_category(x));
        fputs(", \"op\": ", f);
        vcc_json_str(f, tensor_op(g, x));
        fputs(", \"layer\": ", f);
        vcc_json_str(f, tensor_layer(g, x));
        if (b->persistent) fputs(", \"live\": \"persistent\"}},\n", f);
        else fprintf(f, ", \"live\": [%d, %d]}},\n", x->start, x->end);
    }
    for (int k = 0; k <= v.steps; k++)
        fprintf(f, "  {\"ph\": \"C\", \"pid\": 1, \"tid\": 0, \"ts\": %d, \"name\": \"planned bytes live\", \"args\": "
                   "{\"bytes\": %" PRId64 "}}%s\n", k, v.load[k], k < v.steps ? "," : "");
    fputs(" ]\n}\n", f);
    free(offs);
    free(named);
    view_free(&v);
}

/* ------------------------------------------------------------------------------------------------ svg */

static void xml_text(FILE *f, const char *s) {
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '<') fputs("&lt;", f);
        else if (c == '>') fputs("&gt;", f);
        else if (c == '&') fputs("&amp;", f);
        else if (c == '"') fputs("&quot;", f);
        else if (c < 0x20) fprintf(f, "&#%d;", c == '\t' || c == '\n' || c == '\r' ? c : 0xfffd);
        else fputc(c, f);
    }
}

/* A round tick spacing (1, 2 or 5 times a power of ten) giving about n ticks over range. */
static double tick_step(double range, int n) {
    double raw = range > 0 ? range / n : 1, mag = pow(10, floor(log10(raw))), r = raw / mag;
    return (r <= 1 ? 1 : r <= 2 ? 2 : r <= 5 ? 5 : 10) * mag;
}

/* Arena offset (bytes) -> page y. When the persistent region holds more than a quarter of the arena it
 * is drawn to a smaller scale, in the bottom fifth of the plot, so the planned region, where the plan's
 * choices are, gets the rest; each part is linear, so rectangles keep their order and never overlap. */
typedef struct {
    double bottom, h;   /* the plot's bottom edge and height, px */
    double split, band; /* the persistent region's bytes and the height it gets (0: one scale) */
    double arena;
} YMap;

static double ypx(const YMap *m, double bytes) {
    if (m->band <= 0) return m->bottom - bytes * m->h / m->arena;
    if (bytes <= m->split) return m->bottom - bytes * m->band / m->split;
    return m->bottom - m->band - (bytes - m->split) * (m->h - m->band) / (m->arena - m->split);
}

enum { SVG_W = 1280, SVG_H = 760, SVG_L = 100, SVG_R = 250, SVG_T = 60, SVG_B = 60 };

void vcc_plan_write_svg(FILE *f, const VccGraph *g, const char *model) {
    PlanView v;
    view_init(&v, g);
    const double pw = SVG_W - SVG_L - SVG_R, ph = SVG_H - SVG_T - SVG_B;
    const double arena = g->arena_bytes > 0 ? (double)g->arena_bytes : 1.0;
    const double sx = pw / (v.steps + 1);
    const double pers = (double)g->persistent_bytes;
    const YMap ym = {SVG_T + ph, ph, pers, pers > arena / 4 && pers < arena ? ph / 5 : 0, arena};
#define YPX(bytes) ypx(&ym, (double)(bytes))
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
               "font-family=\"sans-serif\" font-size=\"12\">\n"
               "<rect class=\"bg\" x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"white\"/>\n",
            SVG_W, SVG_H, SVG_W, SVG_H, SVG_W, SVG_H);
    fputs("<text x=\"20\" y=\"28\" font-size=\"16\">", f);
    xml_text(f, model);
    fprintf(f, ": arena %.1f MiB, lower bound %.1f MiB (arena/LB %.4f), %d steps</text>\n", g->arena_bytes / MIB,
            g->lower_bound_bytes / MIB, g->lower_bound_bytes > 0 ? (double)g->arena_bytes / (double)g->lower_bound_bytes
                                                                  : 0.0, g->nnodes);
    fprintf(f, "<rect class=\"plot\" x=\"%d\" y=\"%d\" width=\"%.0f\" height=\"%.0f\" fill=\"#f4f4f4\"/>\n", SVG_L,
            SVG_T, pw, ph);
    fputs("<g class=\"blocks\" stroke=\"none\" shape-rendering=\"crispEdges\">\n", f);
    for (int i = 0; i < v.n; i++) {
        const Block *b = &v.b[i];
        const VccTensor *x = &g->tensors[b->t];
        fprintf(f, "<rect class=\"b\" x=\"%.4f\" y=\"%.4f\" width=\"%.4f\" height=\"%.4f\" fill=\"%s\" "
                   "data-offset=\"%" PRId64 "\" data-bytes=\"%" PRId64 "\" data-x0=\"%d\" data-x1=\"%d\"><title>",
                SVG_L + b->x0 * sx, YPX(b->offset + b->bytes), (b->x1 - b->x0) * sx,
                YPX(b->offset) - YPX(b->offset + b->bytes),
                COLOURS[cat_index(x)], b->offset, b->bytes, b->x0, b->x1);
        xml_text(f, x->name);
        fprintf(f, " (%s, %s): %" PRId64 " bytes at offset %" PRId64 ", ", vcc_tensor_category(x), tensor_op(g, x),
                b->bytes, b->offset);
        if (b->persistent) fputs("persistent", f);
        else fprintf(f, "live [%d, %d]", x->start, x->end);
        fputs("</title></rect>\n", f);
    }
    fputs("</g>\n", f);
    /* axes: steps across, MiB up */
    fprintf(f, "<g class=\"axes\" stroke=\"black\" fill=\"none\"><path d=\"M%d %d V%.0f H%.0f\"/></g>\n", SVG_L,
            SVG_T, SVG_T + ph, SVG_L + pw);
    fputs("<g class=\"ticks\" font-size=\"11\">\n", f);
    double xs = tick_step(v.steps + 1, 10);
    if (xs < 1) xs = 1;
    for (double s = 0; s <= v.steps + 1; s += xs)
        fprintf(f, "<text x=\"%.2f\" y=\"%.0f\" text-anchor=\"middle\">%.0f</text>\n", SVG_L + s * sx, SVG_T + ph + 16,
                s);
    /* MiB ticks over the planned region (over the whole arena on one scale); 0 and the persistent top */
    double lo = ym.band > 0 ? pers / MIB : 0, ys = tick_step(arena / MIB - lo, ym.band > 0 ? 6 : 8);
    if (ym.band > 0)
        fprintf(f, "<text x=\"%d\" y=\"%.2f\" text-anchor=\"end\">0</text>\n"
                   "<text x=\"%d\" y=\"%.2f\" text-anchor=\"end\">%.1f</text>\n",
                SVG_L - 6, YPX(0) + 4, SVG_L - 6, YPX(pers) + 4, lo);
    for (double m = ceil(lo / ys + (ym.band > 0 ? 0.25 : 0)) * ys; m <= arena / MIB + 1e-9; m += ys)
        fprintf(f, "<text x=\"%d\" y=\"%.2f\" text-anchor=\"end\">%g</text>\n", SVG_L - 6, YPX(m * MIB) + 4, m);
    fputs("</g>\n", f);
    /* the phases of the schedule: a line where each begins, its name under the step numbers */
    static const char *const PHASES[] = {"forward", "loss", "backward", "update"};
    fputs("<g class=\"phases\" font-size=\"11\" fill=\"#444\">\n", f);
    for (int k = 0; k < g->nnodes;) {
        int e = k;
        while (e < g->nnodes && g->nodes[e].phase == g->nodes[k].phase) e++;
        if (k > 0)
            fprintf(f, "<line x1=\"%.2f\" x2=\"%.2f\" y1=\"%d\" y2=\"%.0f\" stroke=\"#999\" stroke-width=\"0.6\"/>\n",
                    SVG_L + k * sx, SVG_L + k * sx, SVG_T, SVG_T + ph);
        if ((e - k) * sx >= 40)
            fprintf(f, "<text x=\"%.2f\" y=\"%.0f\" text-anchor=\"middle\">%s</text>\n", SVG_L + (k + e) / 2.0 * sx,
                    SVG_T + ph + 32, PHASES[g->nodes[k].phase]);
        k = e;
    }
    fputs("</g>\n", f);
    fprintf(f, "<text x=\"%.0f\" y=\"%d\" text-anchor=\"middle\">schedule step</text>\n", SVG_L + pw / 2,
            SVG_H - 10);
    fprintf(f, "<text transform=\"translate(30 %.0f) rotate(-90)\" text-anchor=\"middle\">arena offset (MiB)</text>\n",
            SVG_T + ph / 2);
    /* the lower bound, the persistent region's top and the peak step */
    fprintf(f, "<g class=\"marks\" stroke-dasharray=\"6 4\" stroke-width=\"1.2\">\n"
               "<line x1=\"%d\" x2=\"%.0f\" y1=\"%.2f\" y2=\"%.2f\" stroke=\"black\"/>\n"
               "<line x1=\"%d\" x2=\"%.0f\" y1=\"%.2f\" y2=\"%.2f\" stroke=\"#555\"/>\n"
               "<line x1=\"%.2f\" x2=\"%.2f\" y1=\"%d\" y2=\"%.0f\" stroke=\"black\"/>\n</g>\n",
            SVG_L, SVG_L + pw, YPX(g->lower_bound_bytes), YPX(g->lower_bound_bytes), SVG_L, SVG_L + pw,
            YPX(g->persistent_bytes), YPX(g->persistent_bytes), SVG_L + (v.peak + 0.5) * sx, SVG_L + (v.peak + 0.5) * sx,
            SVG_T, SVG_T + ph);
    fprintf(f, "<text x=\"%.0f\" y=\"%.2f\" font-size=\"11\" text-anchor=\"end\">lower bound</text>\n",
            SVG_L + pw - 4, YPX(g->lower_bound_bytes) - 3);
    fprintf(f, "<text x=\"%.0f\" y=\"%.2f\" font-size=\"11\" text-anchor=\"end\">persistent region (below%s)"
               "</text>\n", SVG_L + pw - 4, YPX(g->persistent_bytes) - 3,
            ym.band > 0 ? ", drawn to a smaller scale" : "");
    fprintf(f, "<text x=\"%.2f\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">peak step %d</text>\n",
            SVG_L + (v.peak + 0.5) * sx, SVG_T - 6, v.peak);
    /* legend: the categories the plan has */
    bool has[NCATS] = {false};
    for (int i = 0; i < v.n; i++) has[cat_index(&g->tensors[v.b[i].t])] = true;
    fputs("<g class=\"legend\">\n", f);
    int row = 0;
    for (int c = 0; c < NCATS; c++) {
        if (!has[c]) continue;
        double y = SVG_T + 40 + 22 * row++;
        fprintf(f, "<rect class=\"key\" x=\"%.0f\" y=\"%.0f\" width=\"14\" height=\"14\" fill=\"%s\"/>"
                   "<text x=\"%.0f\" y=\"%.0f\">%s</text>\n", SVG_L + pw + 20, y, COLOURS[c], SVG_L + pw + 40,
                y + 12, CATS[c]);
    }
    fputs("</g>\n</svg>\n", f);
#undef YPX
    view_free(&v);
}
