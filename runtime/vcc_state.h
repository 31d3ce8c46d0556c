/*
 * vcc_state.h — the persistent state of a generated program: the table of tensors it loads from or
 * saves to safetensors files, the loader, the saver and the one-line fatal error. Inlined after
 * vcc_elem.h, vcc_io.h and the target runtime, before vcc_main.h (trainer) or vcc_forward_main.h
 * (forward-only program); only the VccRt interface is used, so it serves both targets.
 */
#ifndef VCC_STATE_H
#define VCC_STATE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef VCC_PROGRAM
#define VCC_PROGRAM "train" /* the prefix of error lines; the generated file sets it */
#endif

/* A persistent tensor the trainer loads or saves by name. */
typedef struct {
    const char *name;
    size_t offset;   /* bytes into the arena */
    size_t bytes;
    int rank;
    int64_t dims[8];
    int is_i64;      /* dtype int64 (else float32) */
    int role;        /* VCC_ROLE_* */
} VccStateInfo;

enum { VCC_ROLE_PARAM = 0, VCC_ROLE_BUFFER = 1, VCC_ROLE_CONST = 2, VCC_ROLE_GRAD = 3, VCC_ROLE_OPT_STATE = 4 };

/* Print "<program>: <msg>" and exit with status 1 (a generated program's errors are fatal). */
static void vcc_die(const char *msg) {
    fprintf(stderr, VCC_PROGRAM ": %s\n", msg);
    exit(1);
}

/* Load the state tensors from the safetensors file at path into the arena: parameters, BN buffers and
 * constants must be present with the compiled dtype and shape; momentum buffers are restored when
 * present (a checkpoint), else stay zero; gradients are not read. Dies with a one-line message. */
static void vcc_load_state(VccRt *rt, const VccStateInfo *state, int nstate, unsigned char *arena, const char *path) {
    char err[1024];
    VccSafetensors st;
    if (vcc_st_load(path, &st, err, sizeof err)) vcc_die(err);
    for (int i = 0; i < nstate; i++) {
        const VccStateInfo *s = &state[i];
        if (s->role == VCC_ROLE_GRAD) continue;
        const VccStEntry *e = vcc_st_find(&st, s->name);
        if (!e && s->role == VCC_ROLE_OPT_STATE) continue;
        if (!e) {
            snprintf(err, sizeof err, "%s: tensor '%s' is missing", path, s->name);
            vcc_die(err);
        }
        int same = e->rank == s->rank && !strcmp(e->dtype, s->is_i64 ? "I64" : "F32") && e->end - e->begin == s->bytes;
        for (int d = 0; same && d < s->rank; d++) same = e->dims[d] == s->dims[d];
        if (!same) {
            snprintf(err, sizeof err, "%s: tensor '%s' has the wrong dtype or shape", path, s->name);
            vcc_die(err);
        }
        vcc_upload(rt, arena + s->offset, st.buf + e->begin, s->bytes);
    }
    vcc_st_free(&st);
}

/* Save every state tensor whose role is in roles_mask (bit per role) from the arena. */
static int vcc_save_state(VccRt *rt, const VccStateInfo *state, int nstate, const unsigned char *arena, const char *path, int roles_mask,
                          char *err, size_t errlen) {
    VccStWrite *w = (VccStWrite *)calloc((size_t)nstate + 1, sizeof *w);
    void **bufs = (void **)calloc((size_t)nstate + 1, sizeof *bufs);
    int n = 0, rc = 0;
    if (!w || !bufs) {
        snprintf(err, errlen, "%s: out of memory", path);
        rc = 1;
    }
    for (int i = 0; i < nstate && !rc; i++) {
        const VccStateInfo *s = &state[i];
        if (!(roles_mask & (1 << s->role))) continue;
        bufs[n] = malloc(s->bytes ? s->bytes : 1);
        if (!bufs[n]) {
            snprintf(err, errlen, "%s: out of memory", path);
            rc = 1;
            break;
        }
        vcc_download(rt, bufs[n], arena + s->offset, s->bytes);
        w[n].name = s->name;
        w[n].dtype = s->is_i64 ? "I64" : "F32";
        w[n].rank = s->rank;
        w[n].dims = s->dims;
        w[n].data = bufs[n];
        w[n].nbytes = s->bytes;
        n++;
    }
    if (!rc) rc = vcc_st_save(path, w, n, err, errlen);
    for (int i = 0; i < n; i++) free(bufs[i]);
    free(bufs);
    free(w);
    return rc;
}

#endif /* VCC_STATE_H */
