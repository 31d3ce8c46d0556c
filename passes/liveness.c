/*
 * liveness.c — live intervals over the schedule.
 *
 * Requires: schedule (step k = node k).
 * Produces: per non-persistent tensor its own interval [start, end] in inclusive steps: start = the step
 *   producing it (0 for graph inputs), end = the last step reading it or any view of it. Values the host
 *   reads after the step (the loss, the graph outputs, and the tensors those are views of) end at
 *   g->nnodes, the host's read one step past the last node: no node may reuse their bytes, in place or
 *   otherwise. Persistent tensors and their views get -1.
 *   saved = true for forward/loss values (and their views' bases) read by a backward node: saved tensors
 *   are what make training memory-bound, e.g. every conv input lives until its ConvGradFilter.
 */
#include "passes.h"

static bool persistent_root(const VccGraph *g, int t) {
    while (g->tensors[t].alias_of >= 0) t = g->tensors[t].alias_of;
    return vcc_tensor_is_persistent(&g->tensors[t]);
}

VccStatus vcc_liveness(VccCtx *ctx, VccGraph *g) {
    (void)ctx;
    for (int t = 0; t < g->ntensors; t++) {
        VccTensor *x = &g->tensors[t];
        x->saved = false;
        if (persistent_root(g, t)) {
            x->start = x->end = -1;
            continue;
        }
        x->start = x->producer >= 0 ? x->producer : 0;
        x->end = x->start;
    }
    for (int k = 0; k < g->nnodes; k++) {
        const VccNode *n = &g->nodes[k];
        bool bwd = n->phase == VCC_PHASE_BACKWARD;
        for (int i = 0; i < n->nin; i++) {
            /* a read of a view is a read of everything it views */
            for (int t = n->in[i]; t >= 0; t = g->tensors[t].alias_of) {
                VccTensor *x = &g->tensors[t];
                if (x->start < 0) break;
                if (k > x->end) x->end = k;
                int p = x->producer;
                if (bwd && (p < 0 || g->nodes[p].phase == VCC_PHASE_FORWARD || g->nodes[p].phase == VCC_PHASE_LOSS))
                    x->saved = true;
            }
        }
    }
    /* the host reads the loss and the graph outputs after the step: at step g->nnodes */
    for (int i = -1; i < g->noutputs; i++)
        for (int t = i < 0 ? g->loss : g->outputs[i]; t >= 0 && g->tensors[t].start >= 0; t = g->tensors[t].alias_of)
            g->tensors[t].end = g->nnodes;
    return VCC_OK;
}
