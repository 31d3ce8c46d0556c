/*
 * schedule.c — the execution order.
 *
 * Requires: a complete training graph (forward, loss, backward, update nodes).
 * Produces: the node array in a topological order; the given order is kept where valid (Kahn's algorithm
 *   taking the lowest-index ready node), so the schedule is deterministic. Step k = node k afterwards.
 *   SGD updates read their parameter after every other reader: an update node depends on all readers of
 *   the parameter it writes.
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

VccStatus vcc_schedule(VccCtx *ctx, VccGraph *g) {
    int n = g->nnodes;
    int *indeg = vcc_calloc((size_t)n, sizeof(int));
    /* edges: producer(t) -> node reading t; readers of a param -> that param's SGD node */
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
        if (g->nodes[k].op == VCC_OP_SGD) writer[g->nodes[k].in[0]] = k;
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
    /* Kahn, lowest index first (a simple O(n^2) selection: graphs have thousands of nodes at most) */
    int *order = vcc_malloc(sizeof(int) * (size_t)(n ? n : 1));
    char *done = vcc_calloc((size_t)n + 1, 1);
    int *start = vcc_calloc((size_t)n + 1, sizeof(int));
    int *adj = vcc_malloc(sizeof(int) * (size_t)(ne ? ne : 1));
    for (int e = 0; e < ne; e++) start[eu[e] + 1]++;
    for (int k = 0; k < n; k++) start[k + 1] += start[k];
    int *fill = vcc_calloc((size_t)n + 1, sizeof(int));
    for (int e = 0; e < ne; e++) adj[start[eu[e]] + fill[eu[e]]++] = ev[e];
    int cnt = 0;
    for (int lo = 0; cnt < n;) {
        int pick = -1;
        for (int k = lo; k < n; k++)
            if (!done[k] && indeg[k] == 0) {
                pick = k;
                break;
            }
        if (pick < 0) break;
        done[pick] = 1;
        order[cnt++] = pick;
        for (int e = start[pick]; e < start[pick + 1]; e++) indeg[adj[e]]--;
        while (lo < n && done[lo]) lo++;
    }
    VccStatus st = VCC_OK;
    if (cnt < n) {
        vcc_error(ctx, "the graph has a cycle; %d of %d nodes could not be scheduled", n - cnt, n);
        st = VCC_ERR_INTERNAL;
    } else {
        VccNode *nodes = vcc_malloc(sizeof(VccNode) * (size_t)(n ? n : 1));
        for (int i = 0; i < n; i++) nodes[i] = g->nodes[order[i]];
        memcpy(g->nodes, nodes, sizeof(VccNode) * (size_t)n);
        free(nodes);
        for (int k = 0; k < n; k++)
            for (int i = 0; i < g->nodes[k].nout; i++)
                if (g->nodes[k].out[i] >= 0) g->tensors[g->nodes[k].out[i]].producer = k;
    }
    free(order);
    free(done);
    free(start);
    free(adj);
    free(fill);
    free(indeg);
    free(eu);
    free(ev);
    return st;
#undef EDGE
}
