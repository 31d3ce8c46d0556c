/*
 * schedule.c — the execution order.
 *
 * Requires: a complete training graph (forward, loss, backward, update nodes).
 * Produces: the node array in a topological order; the given order is kept where valid (Kahn's algorithm
 *   taking the lowest-index ready node), so the schedule is deterministic. Step k = node k afterwards.
 *   Updates (SGDMomentum, AdamW) write their parameter after every other reader: an update node depends
 *   on all readers of the parameter it writes.
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

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
    /* Kahn, lowest index first: ready nodes in a binary min-heap, O(E + n log n) */
    int *order = vcc_malloc(sizeof(int) * (size_t)(n ? n : 1));
    int *heap = vcc_malloc(sizeof(int) * (size_t)(n ? n : 1));
    int *start = vcc_calloc((size_t)n + 1, sizeof(int));
    int *adj = vcc_malloc(sizeof(int) * (size_t)(ne ? ne : 1));
    for (int e = 0; e < ne; e++) start[eu[e] + 1]++;
    for (int k = 0; k < n; k++) start[k + 1] += start[k];
    int *fill = vcc_calloc((size_t)n + 1, sizeof(int));
    for (int e = 0; e < ne; e++) adj[start[eu[e]] + fill[eu[e]]++] = ev[e];
    int cnt = 0, hn = 0;
    for (int k = 0; k < n; k++)
        if (indeg[k] == 0) heap[hn++] = k; /* ascending: already a heap */
    while (hn > 0) {
        int pick = heap[0];
        heap[0] = heap[--hn];
        for (int i = 0;;) { /* sift down */
            int l = 2 * i + 1, m = i;
            if (l < hn && heap[l] < heap[m]) m = l;
            if (l + 1 < hn && heap[l + 1] < heap[m]) m = l + 1;
            if (m == i) break;
            int tmp = heap[i];
            heap[i] = heap[m];
            heap[m] = tmp;
            i = m;
        }
        order[cnt++] = pick;
        for (int e = start[pick]; e < start[pick + 1]; e++)
            if (--indeg[adj[e]] == 0) {
                int i = hn++;
                heap[i] = adj[e];
                while (i > 0 && heap[(i - 1) / 2] > heap[i]) { /* sift up */
                    int p = (i - 1) / 2, tmp = heap[i];
                    heap[i] = heap[p];
                    heap[p] = tmp;
                    i = p;
                }
            }
    }
    VccStatus st = VCC_OK;
    if (cnt < n) {
        vcc_error(ctx, "the graph has a cycle; %d of %d nodes could not be scheduled", n - cnt, n);
        st = VCC_ERR_INTERNAL;
    } else {
        VccNode *nodes = vcc_malloc(sizeof(VccNode) * (size_t)(n ? n : 1));
        for (int i = 0; i < n; i++) nodes[i] = g->nodes[order[i]];
        if (n > 0) memcpy(g->nodes, nodes, sizeof(VccNode) * (size_t)n); /* g->nodes is NULL when n == 0 */
        free(nodes);
        for (int k = 0; k < n; k++)
            for (int i = 0; i < g->nodes[k].nout; i++)
                if (g->nodes[k].out[i] >= 0) g->tensors[g->nodes[k].out[i]].producer = k;
    }
    free(order);
    free(heap);
    free(start);
    free(adj);
    free(fill);
    free(indeg);
    free(eu);
    free(ev);
    return st;
#undef EDGE
}
