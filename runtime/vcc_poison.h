/*
 * vcc_poison.h — the plan checked at run time (C trainers built with -DVCC_POISON; nothing without it).
 *
 * The generated program describes its plan in a VccPoisonPlan (codegen/poison.c): every tensor that holds
 * arena bytes (offset, bytes, the tensor whose bytes it reads: itself, or for a view the tensor it views),
 * and per scheduled node the tensors it reads, the ones it writes and the ones whose live interval ends
 * there. Around each node the step calls:
 *
 *   vcc_poison_pre   before the node: every tensor it reads must still hold its definition's bytes.
 *                    Two checks: a shadow map with one tag per VCC arena granule (256 bytes; no two
 *                    tensors share one) says which tensor owns each granule now, and it must be the
 *                    definition; and the bytes must hash (FNV-1a, 64 bits) to what they hashed to when
 *                    their node wrote them, so a write through any address (a kernel, an emitter bug)
 *                    over bytes still live is seen at the next read.
 *   vcc_poison_post  after the node: its outputs own their granules and their hashes are taken; every
 *                    tensor whose interval ends at this node and still owns its bytes (no in-place
 *                    successor took them) has them overwritten with 0xff bytes (a float NaN) and its
 *                    granules marked free, so a later read of them fails the tag check or computes NaN.
 *
 * With -DVCC_POISON_SWEEP as well, after each node every live planned tensor it did not write is hashed
 * again, so the node that wrote over one is named at once (the cost: the live bytes, at every node).
 *
 * vcc_poison_begin, at the start of each step, marks the planned region free and gives the persistent
 * tensors and the inputs the host wrote their granules (persistent tensors, which updates rewrite in place,
 * are checked by tag only). A violation prints one line naming the training step, the node (index, op,
 * name), the tensor read, and the tensor that owns its bytes instead (or that they are free), or the
 * nodes that ran since its bytes were last seen intact (one of them wrote over them), then aborts. Host
 * memory only: CUDA trainers do not take -DVCC_POISON.
 */
#ifdef VCC_POISON

typedef struct {
    int64_t offset, bytes;
    int def;            /* table index of the tensor whose bytes this one reads (itself unless a view) */
    int persistent;     /* in the persistent region: tag checks only (updates rewrite it in place) */
    const char *name;
} VccPoisonTensor;

typedef struct {
    int ntensors;
    const VccPoisonTensor *t;
    int nnodes;
    const char *const *node; /* "Op 'name'" per node */
    const int *in_at, *in;   /* tensors node k reads: in[in_at[k] .. in_at[k+1]) */
    const int *out_at, *out; /* definitions node k writes */
    const int *end_at, *end; /* planned definitions whose live interval ends at node k */
    const int *host, nhost;  /* what holds its bytes at a step's start: persistent tensors and inputs */
    int64_t arena_bytes;
} VccPoisonPlan;

#define VCC_POISON_GRANULE 256

static uint32_t *vcc_poison_tag;  /* per granule: 1 + the table index of the owner, 0 free */
static uint64_t *vcc_poison_hash; /* per tensor: the hash of its bytes when written */
static int *vcc_poison_seen;      /* per tensor: the last node after which its bytes were seen intact (-1: the
                                     host's write before the step) */
static int64_t vcc_poison_step;

static uint64_t vcc_poison_fnv(const unsigned char *p, int64_t n) {
    uint64_t h = 1469598103934665603ull;
    for (int64_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static void vcc_poison_own(const VccPoisonPlan *P, int i, uint32_t tag) {
    int64_t g0 = P->t[i].offset / VCC_POISON_GRANULE;
    int64_t g1 = (P->t[i].offset + P->t[i].bytes + VCC_POISON_GRANULE - 1) / VCC_POISON_GRANULE;
    for (int64_t gr = g0; gr < g1; gr++) vcc_poison_tag[gr] = tag;
}

/* The granule of tensor i's bytes whose owner is not want, or -1. */
static int64_t vcc_poison_foreign(const VccPoisonPlan *P, int i, uint32_t want) {
    int64_t g0 = P->t[i].offset / VCC_POISON_GRANULE;
    int64_t g1 = (P->t[i].offset + P->t[i].bytes + VCC_POISON_GRANULE - 1) / VCC_POISON_GRANULE;
    for (int64_t gr = g0; gr < g1; gr++)
        if (vcc_poison_tag[gr] != want) return gr;
    return -1;
}

static void vcc_poison_fail(const VccPoisonPlan *P, int k, int i, const char *what) {
    fprintf(stderr, "VCC_POISON: step %lld, node %d (%s) reads '%s' (offset %lld, %lld bytes): %s\n",
            (long long)vcc_poison_step, k, P->node[k], P->t[i].name, (long long)P->t[i].offset,
            (long long)P->t[i].bytes, what);
    fflush(stderr);
    abort();
}

static void vcc_poison_begin(const VccPoisonPlan *P, unsigned char *A) {
    size_t ngran = (size_t)(P->arena_bytes / VCC_POISON_GRANULE + 1);
    if (!vcc_poison_tag) {
        vcc_poison_tag = (uint32_t *)calloc(ngran, sizeof(uint32_t));
        vcc_poison_hash = (uint64_t *)calloc((size_t)P->ntensors + 1, sizeof(uint64_t));
        vcc_poison_seen = (int *)calloc((size_t)P->ntensors + 1, sizeof(int));
        if (!vcc_poison_tag || !vcc_poison_hash || !vcc_poison_seen) {
            fprintf(stderr, "VCC_POISON: out of memory for the shadow map\n");
            abort();
        }
    }
    vcc_poison_step++;
    memset(vcc_poison_tag, 0, ngran * sizeof(uint32_t));
    for (int j = 0; j < P->nhost; j++) {
        int i = P->host[j];
        vcc_poison_own(P, i, (uint32_t)i + 1);
        if (!P->t[i].persistent) vcc_poison_hash[i] = vcc_poison_fnv(A + P->t[i].offset, P->t[i].bytes);
        vcc_poison_seen[i] = -1;
    }
}

static void vcc_poison_pre(const VccPoisonPlan *P, unsigned char *A, int k) {
    for (int j = P->in_at[k]; j < P->in_at[k + 1]; j++) {
        int i = P->in[j], d = P->t[i].def;
        int64_t gr = vcc_poison_foreign(P, i, (uint32_t)d + 1);
        if (gr >= 0) {
            char msg[1024];
            uint32_t owner = vcc_poison_tag[gr];
            if (owner)
                snprintf(msg, sizeof msg, "its bytes at offset %lld belong to '%s', not to '%s'",
                         (long long)(gr * VCC_POISON_GRANULE), P->t[owner - 1].name, P->t[d].name);
            else
                snprintf(msg, sizeof msg, "its bytes at offset %lld are free (poisoned or never written)",
                         (long long)(gr * VCC_POISON_GRANULE));
            vcc_poison_fail(P, k, i, msg);
        }
        if (P->t[d].persistent) continue;
        if (vcc_poison_fnv(A + P->t[d].offset, P->t[d].bytes) != vcc_poison_hash[d]) {
            char msg[1024];
            int s0 = vcc_poison_seen[d] + 1; /* intact after node s0 - 1, changed before node k */
            if (k == 0)
                snprintf(msg, sizeof msg, "the bytes of '%s' changed between the start of the step and its first node",
                         P->t[d].name);
            else if (s0 == k - 1)
                snprintf(msg, sizeof msg, "the bytes of '%s' were written over by node %d (%s)", P->t[d].name, s0,
                         P->node[s0]);
            else
                snprintf(msg, sizeof msg, "the bytes of '%s' were written over by one of nodes %d (%s) to %d (%s)",
                         P->t[d].name, s0, P->node[s0], k - 1, P->node[k - 1]);
            vcc_poison_fail(P, k, i, msg);
        }
        vcc_poison_seen[d] = k - 1;
    }
}

static void vcc_poison_post(const VccPoisonPlan *P, unsigned char *A, int k) {
    for (int j = P->out_at[k]; j < P->out_at[k + 1]; j++) {
        int i = P->out[j];
        vcc_poison_own(P, i, (uint32_t)i + 1);
        vcc_poison_hash[i] = vcc_poison_fnv(A + P->t[i].offset, P->t[i].bytes);
        vcc_poison_seen[i] = k;
    }
#ifdef VCC_POISON_SWEEP
    /* every live planned tensor this node did not write must be as it was: the writer named exactly */
    for (int i = 0; i < P->ntensors; i++) {
        if (P->t[i].def != i || P->t[i].persistent || vcc_poison_seen[i] == k) continue;
        if (vcc_poison_foreign(P, i, (uint32_t)i + 1) >= 0) continue; /* not live, or taken in place */
        if (vcc_poison_fnv(A + P->t[i].offset, P->t[i].bytes) != vcc_poison_hash[i]) {
            fprintf(stderr, "VCC_POISON: step %lld, node %d (%s) wrote over '%s' (offset %lld, %lld bytes), which is "
                    "still live\n", (long long)vcc_poison_step, k, P->node[k], P->t[i].name,
                    (long long)P->t[i].offset, (long long)P->t[i].bytes);
            fflush(stderr);
            abort();
        }
        vcc_poison_seen[i] = k;
    }
#endif
    for (int j = P->end_at[k]; j < P->end_at[k + 1]; j++) {
        int i = P->end[j];
        if (vcc_poison_foreign(P, i, (uint32_t)i + 1) >= 0) continue; /* an in-place successor holds them */
        memset(A + P->t[i].offset, 0xff, (size_t)P->t[i].bytes);
        vcc_poison_own(P, i, 0);
    }
}

#endif /* VCC_POISON */
