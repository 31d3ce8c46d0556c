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
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

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
        if (indeg[k] == 0) heap[hn++] = k;
    for (int i = hn / 2 - 1; i >= 0; i--) heap_sift_down(heap, hn, key, i);
    while (hn > 0) {
        int pick = heap[0];
        heap[0] = heap[--hn];
        heap_sift_down(heap, hn, key, 0);
        order[cnt++] = pick;
        for (int e = start[pick]; e < start[pick + 1]; e++)
            if (--indeg[adj[e]] == 0) {
                int i = hn++;
                heap[i] = adj[e];
                while (i > 0 && key[heap[(i - 1) / 2]] > key[heap[i]]) { /* sift up */
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
    free(key);
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
