/*
 * schedule.c — the execution order.
 *
 * Requires: a complete training graph (forward, loss, backward, update nodes).
 * Produces: the node array in a topological order; the given order is kept where valid (Kahn's algorithm
 *   taking the lowest-index ready node), so the schedule is deterministic. Step k = node k afterwards.
 *   Updates (SGDMomentum, AdamW) write their parameter after every other reader: an update node depends
 *   on all readers of the parameter it writes. Update nodes and GradCopy nodes (which give a parameter
 *   its own gradient) are taken before any other ready node: an update runs as soon as its gradient is
 *   final and the last reader of its parameter has run, so the gradient's bytes (passes/optimizer.c:
 *   planned unless --keep-grads) are free for what follows. With --keep-grads every update waits for the
 *   GradNormClip node, which reads all gradients.
 *   Memory-aware order: a second Kahn order takes, among the ready nodes, the one that keeps the peak
 *   lowest (the peak so far against the bytes live while the node runs, its workspaces included), then
 *   the one adding the fewest bytes to what stays live, then the lowest key, so the order of independent
 *   nodes follows memory: a ConvGradFilter that frees the conv input before the ConvGradData that
 *   allocates dX, a branch that frees more first, a saved activation's last reader early. Each order's
 *   peak is the persistent bytes plus the largest sum of planned bytes live at one step before in-place
 *   reuse (the sweep passes/liveness and memplan's lower bound make); the memory-aware order replaces
 *   the first only when its peak is lower, so the result is deterministic and never worse. Sets
 *   g->schedule_peak_bytes and g->given_order_peak_bytes (the first order's).
 *   Workspaces (unless --workspace-limit fixes them): a conv workspace that sets the chosen order's peak is shrunk to fewer im2col columns
 *   per chunk while that lowers the peak by 0.5% or more (vcc_conv_ws_halved; at least
 *   VCC_WORKSPACE_MIN_COLS columns), before both peaks are measured. Recomputation (passes/remat) keeps
 *   these sizes, so a limited build computes every conv in the same chunks as the unlimited one.
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

/* Graphs above this many nodes keep the order by key alone (the memory-aware order costs O(n * ready)). */
#define VCC_SCHEDULE_MEM_MAX_NODES 20000

/* Restore the min-heap order (by key[node]) of heap[0..hn) below position i. */
static void heap_sift_down(int *heap, int hn, const int *key, int i) {
    for (;;) {
        int l = 2 * i + 1, m = i;
        if (l < hn && key[heap[l]] < key[heap[m]]) m = l;
        if (l + 1 < hn && key[heap[l + 1]] < key[heap[m]]) m = l + 1;
        if (m == i) return;
        int tmp = heap[i];
        heap[i] = heap[m];
        heap[m] = tmp;
        i = m;
    }
}

/* The dependence graph: node k's successors adj[start[k] .. start[k+1]), in-degrees, and the key that
 * orders ready nodes (lowest first) where nothing else decides. */
typedef struct {
    int n;
    const int *start, *adj, *indeg;
    const int *key;
} Dag;

/* Kahn's algorithm taking the ready node of the lowest key (a binary min-heap, O(E + n log n)); writes
 * the order and returns how many nodes it holds (fewer than n: a cycle). */
static int kahn_by_key(const Dag *d, int *order) {
    int n = d->n, cnt = 0, hn = 0;
    int *indeg = vcc_malloc(sizeof(int) * (size_t)(n ? n : 1));
    int *heap = vcc_malloc(sizeof(int) * (size_t)(n ? n : 1));
    if (n > 0) memcpy(indeg, d->indeg, sizeof(int) * (size_t)n);
    for (int k = 0; k < n; k++)
        if (indeg[k] == 0) heap[hn++] = k;
    for (int i = hn / 2 - 1; i >= 0; i--) heap_sift_down(heap, hn, d->key, i);
    while (hn > 0) {
        int pick = heap[0];
        heap[0] = heap[--hn];
        heap_sift_down(heap, hn, d->key, 0);
        order[cnt++] = pick;
        for (int e = d->start[pick]; e < d->start[pick + 1]; e++)
            if (--indeg[d->adj[e]] == 0) {
                int i = hn++;
                heap[i] = d->adj[e];
                while (i > 0 && d->key[heap[(i - 1) / 2]] > d->key[heap[i]]) { /* sift up */
                    int p = (i - 1) / 2, tmp = heap[i];
                    heap[i] = heap[p];
                    heap[p] = tmp;
                    i = p;
                }
            }
    }
    free(indeg);
    free(heap);
    return cnt;
}

/* What the schedule's memory needs of the graph, in buffers: a tensor's root is the tensor whose bytes
 * it views (alias_of); bytes[r] is a root's aligned size in the planned region (0 for persistent,
 * empty and view tensors); node k reads the distinct roots reads[rstart[k] .. rstart[k+1]) of nonzero
 * size; nreaders[r] counts those nodes; host[r] marks the values the host reads after the step (the
 * loss, the graph outputs and what they view), which live to its end. */
typedef struct {
    int *root, *rstart, *reads, *nreaders;
    int64_t *bytes, persistent;
    bool *host;
} MemInfo;

static void mem_info_init(const VccGraph *g, MemInfo *mi) {
    int nt = g->ntensors ? g->ntensors : 1, n = g->nnodes;
    mi->root = vcc_malloc(sizeof(int) * (size_t)nt);
    mi->bytes = vcc_calloc((size_t)nt, sizeof(int64_t));
    mi->nreaders = vcc_calloc((size_t)nt, sizeof(int));
    mi->host = vcc_calloc((size_t)nt, sizeof(bool));
    mi->rstart = vcc_calloc((size_t)n + 1, sizeof(int));
    mi->persistent = 0;
    for (int t = 0; t < g->ntensors; t++) {
        int r = t;
        while (g->tensors[r].alias_of >= 0) r = g->tensors[r].alias_of;
        mi->root[t] = r;
        const VccTensor *x = &g->tensors[t];
        int64_t b = (vcc_tensor_bytes(x) + VCC_ARENA_ALIGN - 1) / VCC_ARENA_ALIGN * VCC_ARENA_ALIGN;
        if (x->alias_of >= 0) continue;
        if (vcc_tensor_is_persistent(x)) mi->persistent += b;
        else mi->bytes[t] = b;
    }
    for (int i = -1; i < g->noutputs; i++) {
        int t = i < 0 ? g->loss : g->outputs[i];
        if (t >= 0) mi->host[mi->root[t]] = true;
    }
    int *seen = vcc_malloc(sizeof(int) * (size_t)nt), total = 0;
    for (int t = 0; t < nt; t++) seen[t] = -1;
    for (int pass = 0; pass < 2; pass++) { /* count, then fill */
        if (pass == 1) mi->reads = vcc_malloc(sizeof(int) * (size_t)(total ? total : 1));
        total = 0;
        for (int t = 0; t < nt; t++) seen[t] = -1;
        for (int k = 0; k < n; k++) {
            mi->rstart[k] = total;
            const VccNode *nd = &g->nodes[k];
            for (int i = 0; i < nd->nin; i++) {
                if (nd->in[i] < 0) continue;
                int r = mi->root[nd->in[i]];
                if (mi->bytes[r] == 0 || seen[r] == k) continue;
                seen[r] = k;
                if (pass == 1) {
                    mi->reads[total] = r;
                    mi->nreaders[r]++;
                }
                total++;
            }
        }
        mi->rstart[n] = total;
    }
    free(seen);
}

static void mem_info_free(MemInfo *mi) {
    free(mi->root);
    free(mi->bytes);
    free(mi->nreaders);
    free(mi->host);
    free(mi->rstart);
    free(mi->reads);
}

/* The peak of an order (order[i] = the node at step i): the persistent bytes plus the largest sum of the
 * planned buffers live at one step, each from the step producing it (0 for graph inputs) to its last
 * reader (the step count for host-read values), before in-place reuse; passes/liveness and memplan's
 * lower bound count the same way. */
static int64_t order_profile(const VccGraph *g, const MemInfo *mi, const int *order, int64_t *live_at);

static int64_t order_peak(const VccGraph *g, const MemInfo *mi, const int *order) {
    return order_profile(g, mi, order, NULL);
}

/* order_peak, and with live_at (n + 1 entries) the planned bytes live at each step (not the persistent
 * ones). */
static int64_t order_profile(const VccGraph *g, const MemInfo *mi, const int *order, int64_t *live_at) {
    int n = g->nnodes, nt = g->ntensors;
    int *pos = vcc_malloc(sizeof(int) * (size_t)(n ? n : 1));
    int *first = vcc_malloc(sizeof(int) * (size_t)(nt ? nt : 1)), *last = vcc_malloc(sizeof(int) * (size_t)(nt ? nt : 1));
    int64_t *diff = vcc_calloc((size_t)n + 2, sizeof(int64_t));
    for (int i = 0; i < n; i++) pos[order[i]] = i;
    for (int t = 0; t < nt; t++) {
        int p = g->tensors[t].producer;
        first[t] = last[t] = p >= 0 ? pos[p] : 0;
        if (mi->host[t]) last[t] = n;
    }
    for (int k = 0; k < n; k++)
        for (int j = mi->rstart[k]; j < mi->rstart[k + 1]; j++)
            if (last[mi->reads[j]] < pos[k]) last[mi->reads[j]] = pos[k];
    for (int t = 0; t < nt; t++)
        if (mi->bytes[t]) {
            diff[first[t]] += mi->bytes[t];
            diff[last[t] + 1] -= mi->bytes[t];
        }
    int64_t live = 0, peak = 0;
    for (int i = 0; i <= n; i++) {
        live += diff[i];
        if (live > peak) peak = live;
        if (live_at) live_at[i] = live;
    }
    free(pos);
    free(first);
    free(last);
    free(diff);
    return mi->persistent + peak;
}

/* Kahn's algorithm taking, among the ready nodes, the one that keeps the peak lowest: the least of the
 * peak so far and the bytes live while the node runs (what is live, plus every buffer it writes,
 * workspaces included); among those, the one that adds the fewest bytes to what stays live after it
 * (the buffers it writes that a later node or the host reads, less those whose last reader it is);
 * then the lowest key. O(n * ready nodes). Writes the order and returns how many nodes it holds. */
static int kahn_by_memory(const Dag *d, const VccGraph *g, const MemInfo *mi, int *order) {
    int n = d->n, cnt = 0, nready = 0;
    int *indeg = vcc_malloc(sizeof(int) * (size_t)(n ? n : 1));
    int *ready = vcc_malloc(sizeof(int) * (size_t)(n ? n : 1));
    int *left = vcc_malloc(sizeof(int) * (size_t)(g->ntensors ? g->ntensors : 1));
    if (n > 0) memcpy(indeg, d->indeg, sizeof(int) * (size_t)n);
    if (g->ntensors > 0) memcpy(left, mi->nreaders, sizeof(int) * (size_t)g->ntensors);
    int64_t live = 0, peak = 0;
    for (int t = 0; t < g->ntensors; t++)
        if (mi->bytes[t] && g->tensors[t].producer < 0) live += mi->bytes[t]; /* graph inputs: from step 0 */
    for (int k = 0; k < n; k++)
        if (indeg[k] == 0) ready[nready++] = k;
    while (nready > 0) {
        int best = -1;
        int64_t best_peak = 0, best_delta = 0;
        for (int i = 0; i < nready; i++) {
            int k = ready[i];
            const VccNode *nd = &g->nodes[k];
            int64_t all = 0, delta = 0;
            for (int o = 0; o < nd->nout; o++) {
                int t = nd->out[o];
                if (t < 0 || !mi->bytes[t]) continue;
                all += mi->bytes[t];
                if (mi->nreaders[t] > 0 || mi->host[t]) delta += mi->bytes[t];
            }
            for (int j = mi->rstart[k]; j < mi->rstart[k + 1]; j++)
                if (left[mi->reads[j]] == 1 && !mi->host[mi->reads[j]]) delta -= mi->bytes[mi->reads[j]];
            int64_t pk = live + all > peak ? live + all : peak;
            if (best < 0 || pk < best_peak || (pk == best_peak && delta < best_delta) ||
                (pk == best_peak && delta == best_delta && d->key[k] < d->key[ready[best]])) {
                best = i;
                best_peak = pk;
                best_delta = delta;
            }
        }
        int pick = ready[best];
        ready[best] = ready[--nready];
        order[cnt++] = pick;
        peak = best_peak;
        live += best_delta;
        for (int j = mi->rstart[pick]; j < mi->rstart[pick + 1]; j++) left[mi->reads[j]]--;
        for (int e = d->start[pick]; e < d->start[pick + 1]; e++)
            if (--indeg[d->adj[e]] == 0) ready[nready++] = d->adj[e];
    }
    free(indeg);
    free(ready);
    free(left);
    return cnt;
}

/* Conv workspaces that set the peak of `order`, shrunk (vcc_conv_ws_halved) where that pays. While the
 * step with the most bytes live (the first such) runs a conv-family node whose workspace can still
 * shrink, the largest such workspace's columns are halved (a workspace lives at its node's step alone,
 * so the profile changes there only). Then the halvings at the end of that sequence that together lower
 * the peak by less than 0.5% of it (persistent bytes included) are undone: smaller chunks cost time,
 * and there they would buy next to no bytes. Updates the tensors' shapes, mi->bytes, g->ws_shrunk and
 * g->ws_shrunk_bytes. */
static void shrink_peak_workspaces(VccCtx *ctx, VccGraph *g, MemInfo *mi, const int *order) {
    int n = g->nnodes, nt = g->ntensors;
    int64_t *live = vcc_malloc(sizeof(int64_t) * (size_t)(n + 1));
    int *pos = vcc_malloc(sizeof(int) * (size_t)(n ? n : 1));
    order_profile(g, mi, order, live);
    for (int i = 0; i < n; i++) pos[order[i]] = i;
    /* the halvings in order: the tensor, its bytes before, and the peak after */
    int cnt = 0, cap = 16, *who = vcc_malloc(sizeof(int) * (size_t)cap);
    int64_t *before = vcc_malloc(sizeof(int64_t) * (size_t)cap), *after = vcc_malloc(sizeof(int64_t) * (size_t)cap);
    int64_t first_peak = -1;
    for (;;) {
        int peak = 0;
        for (int i = 1; i <= n; i++)
            if (live[i] > live[peak]) peak = i;
        if (first_peak < 0) first_peak = live[peak];
        if (cnt) after[cnt - 1] = live[peak];
        int best = -1;
        int64_t best_bytes = 0, best_new = 0;
        for (int t = 0; t < nt; t++) {
            const VccTensor *x = &g->tensors[t];
            if (x->kind != VCC_T_WORKSPACE || x->producer < 0 || !mi->bytes[t] || mi->nreaders[t] ||
                pos[x->producer] != peak)
                continue;
            int64_t bytes = vcc_tensor_bytes(x), smaller = vcc_conv_ws_halved(ctx, g, x->producer, bytes, false);
            if (smaller < bytes && bytes > best_bytes) best = t, best_bytes = bytes, best_new = smaller;
        }
        if (best < 0) break;
        if (cnt == cap) {
            cap *= 2;
            who = vcc_realloc(who, sizeof(int) * (size_t)cap);
            before = vcc_realloc(before, sizeof(int64_t) * (size_t)cap);
            after = vcc_realloc(after, sizeof(int64_t) * (size_t)cap);
        }
        who[cnt] = best;
        before[cnt++] = best_bytes;
        g->tensors[best].shape = (VccShape){1, {best_new / 4}};
        int64_t b = (best_new + VCC_ARENA_ALIGN - 1) / VCC_ARENA_ALIGN * VCC_ARENA_ALIGN;
        live[peak] -= mi->bytes[best] - b;
        mi->bytes[best] = b;
    }
    int64_t last = cnt ? after[cnt - 1] : first_peak;
    int keep = cnt;
    while (keep > 0 && ((keep > 1 ? after[keep - 2] : first_peak) - last) * 200 < mi->persistent + first_peak)
        keep--;
    for (int i = cnt - 1; i >= keep; i--) {
        g->tensors[who[i]].shape = (VccShape){1, {before[i] / 4}};
        mi->bytes[who[i]] = (before[i] + VCC_ARENA_ALIGN - 1) / VCC_ARENA_ALIGN * VCC_ARENA_ALIGN;
    }
    for (int i = 0; i < keep; i++) { /* each tensor once, at its first halving: its bytes before all of them */
        bool again = false;
        for (int j = 0; j < i; j++) again |= who[j] == who[i];
        if (again) continue;
        g->ws_shrunk++;
        g->ws_shrunk_bytes += before[i] - vcc_tensor_bytes(&g->tensors[who[i]]);
    }
    free(who);
    free(before);
    free(after);
    free(pos);
    free(live);
}

VccStatus vcc_schedule(VccCtx *ctx, VccGraph *g) {
    int n = g->nnodes;
    int *indeg = vcc_calloc((size_t)n, sizeof(int));
    /* edges: producer(t) -> node reading t; readers of a param -> that param's update node */
    int *eu = NULL, *ev = NULL, ne = 0, cap = 0;
#define EDGE(a, b)                                                    \
    do {                                                              \
        if (ne == cap) {                                              \
            cap = cap ? 2 * cap : 1024;                               \
            eu = vcc_realloc(eu, sizeof(int) * (size_t)cap);          \
            ev = vcc_realloc(ev, sizeof(int) * (size_t)cap);          \
        }                                                             \
        eu[ne] = (a);                                                 \
        ev[ne] = (b);                                                 \
        ne++;                                                         \
        indeg[b]++;                                                   \
    } while (0)
    int *writer = vcc_malloc(sizeof(int) * (size_t)(g->ntensors ? g->ntensors : 1));
    for (int t = 0; t < g->ntensors; t++) writer[t] = -1;
    for (int k = 0; k < n; k++)
        if (g->nodes[k].op == VCC_OP_SGD || g->nodes[k].op == VCC_OP_ADAMW) writer[g->nodes[k].in[0]] = k;
    for (int k = 0; k < n; k++) {
        const VccNode *nd = &g->nodes[k];
        for (int i = 0; i < nd->nin; i++) {
            int t = nd->in[i];
            if (t < 0) continue;
            int root = t;
            while (g->tensors[root].alias_of >= 0) root = g->tensors[root].alias_of;
            int p = g->tensors[t].producer;
            if (p < 0 && g->tensors[t].alias_of >= 0) p = g->tensors[root].producer;
            if (p >= 0 && p != k) EDGE(p, k);
            if (writer[root] >= 0 && writer[root] != k) EDGE(k, writer[root]);
        }
    }
    free(writer);
    /* Kahn, lowest key first: ready nodes in a binary min-heap, O(E + n log n); the key is the node index,
     * minus n for the nodes taken as soon as they are ready (updates, GradCopy) */
    int *key = vcc_malloc(sizeof(int) * (size_t)(n ? n : 1));
    for (int k = 0; k < n; k++) {
        VccOp op = g->nodes[k].op;
        key[k] = op == VCC_OP_SGD || op == VCC_OP_ADAMW || op == VCC_OP_GRAD_COPY ? k - n : k;
    }
    int *start = vcc_calloc((size_t)n + 1, sizeof(int));
    int *adj = vcc_malloc(sizeof(int) * (size_t)(ne ? ne : 1));
    for (int e = 0; e < ne; e++) start[eu[e] + 1]++;
    for (int k = 0; k < n; k++) start[k + 1] += start[k];
    int *fill = vcc_calloc((size_t)n + 1, sizeof(int));
    for (int e = 0; e < ne; e++) adj[start[eu[e]] + fill[eu[e]]++] = ev[e];
    Dag dag = {n, start, adj, indeg, key};
    int *order = vcc_malloc(sizeof(int) * (size_t)(n ? n : 1));
    int cnt = kahn_by_key(&dag, order);
    VccStatus st = VCC_OK;
    if (cnt < n) {
        vcc_error(ctx, "the graph has a cycle; %d of %d nodes could not be scheduled", n - cnt, n);
        st = VCC_ERR_INTERNAL;
    } else {
        /* the memory-aware order where its peak is lower; the order above otherwise */
        MemInfo mi;
        mem_info_init(g, &mi);
        g->given_order_peak_bytes = g->schedule_peak_bytes = order_peak(g, &mi, order);
        int *mem = NULL;
        if (n <= VCC_SCHEDULE_MEM_MAX_NODES) {
            mem = vcc_malloc(sizeof(int) * (size_t)(n ? n : 1));
            if (kahn_by_memory(&dag, g, &mi, mem) != n) {
                free(mem);
                mem = NULL;
            }
        }
        bool use_mem = mem && order_peak(g, &mi, mem) < g->schedule_peak_bytes;
        /* the workspaces that set the chosen order's peak, shrunk; both peaks again with their sizes */
        if (!ctx->workspace_limit_fixed) shrink_peak_workspaces(ctx, g, &mi, use_mem ? mem : order);
        g->given_order_peak_bytes = g->schedule_peak_bytes = order_peak(g, &mi, order);
        if (mem) {
            int64_t peak = order_peak(g, &mi, mem);
            if (peak < g->schedule_peak_bytes) {
                g->schedule_peak_bytes = peak;
                memcpy(order, mem, sizeof(int) * (size_t)n);
            }
        }
        free(mem);
        mem_info_free(&mi);
        VccNode *nodes = vcc_malloc(sizeof(VccNode) * (size_t)(n ? n : 1));
        for (int i = 0; i < n; i++) nodes[i] = g->nodes[order[i]];
        if (n > 0) memcpy(g->nodes, nodes, sizeof(VccNode) * (size_t)n); /* g->nodes is NULL when n == 0 */
        free(nodes);
        for (int k = 0; k < n; k++)
            for (int i = 0; i < g->nodes[k].nout; i++)
                if (g->nodes[k].out[i] >= 0) g->tensors[g->nodes[k].out[i]].producer = k;
    }
    free(order);
    free(key);
    free(start);
    free(adj);
    free(fill);
    free(indeg);
    free(eu);
    free(ev);
    return st;
#undef EDGE
}

VccStatus vcc_check_update_order(VccCtx *ctx, const VccGraph *g) {
    int *roots = vcc_tensor_roots(g);
    int *updated_at = vcc_malloc(sizeof(int) * (size_t)(g->ntensors ? g->ntensors : 1));
    for (int t = 0; t < g->ntensors; t++) updated_at[t] = -1;
    VccStatus st = VCC_OK;
    for (int k = 0; k < g->nnodes && !st; k++) {
        const VccNode *n = &g->nodes[k];
        bool update = n->op == VCC_OP_SGD || n->op == VCC_OP_ADAMW;
        for (int i = update ? 1 : 0; i < n->nin && !st; i++) {
            int t = n->in[i] >= 0 ? roots[n->in[i]] : -1, u = t >= 0 ? updated_at[t] : -1;
            if (u >= 0) {
                vcc_error(ctx, "node '%s' (%s) at step %d reads parameter '%s' after its update '%s' at step %d: "
                          "every reader of a parameter runs before its update", n->name, vcc_op_name(n->op), k,
                          g->tensors[t].name, g->nodes[u].name, u);
                st = VCC_ERR_SHAPE;
            }
        }
        if (update && n->nin > 0 && n->in[0] >= 0) updated_at[roots[n->in[0]]] = k;
    }
    free(roots);
    free(updated_at);
    return st;
}
