/*
 * vcc_state.h — what every generated program shares beyond the kernels: its name in error lines,
 * command-line helpers, the table of persistent tensors it loads from or saves to safetensors files
 * (the loader, the saver), fingerprints that identify a model and a data set, and the checkpoint
 * folder (stepK.safetensors files: listing, the newest complete one, pruning). Inlined after
 * vcc_elem.h, vcc_io.h and the target runtime, before vcc_main.h (trainer) or vcc_forward_main.h
 * (forward-only program); only the VccRt interface is used, so it serves both targets.
 *
 * Errors: vcc_die / vcc_dief print one line "<program>: <message>" and exit with status 1;
 * vcc_usage_error prints "<program>: <message> (see <program> --help)" and exits with status 2.
 * <program> is the basename of argv[0] (vcc_set_program), so a renamed binary speaks as itself.
 * Functions that return int give 0 on success and write "<file>: <problem>" into err otherwise.
 */
#ifndef VCC_STATE_H
#define VCC_STATE_H

#include <dirent.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define VCC_STATE_FN static VCC_UNUSED

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

/* The hyperparameters of one training step, which the generated step function passes to the update
 * kernels (ir/ops/optim.c). Forward and evaluation programs pass zeros. */
typedef struct {
    double lr;          /* this step's learning rate: --lr after --lr-schedule */
    float momentum;     /* SGD momentum */
    double wd;          /* weight decay (SGD: L2 added to the gradient; AdamW: decoupled) */
    double beta1, beta2, eps; /* AdamW */
    int64_t t;          /* AdamW's step count, 1 at the run's first step (bias corrections) */
    double clip;        /* --clip-grad-norm's max norm; 0: the gradients are not clipped */
} VccOptim;

/* The VccOptim of programs that do not train (all zero). */
static const VccOptim vcc_no_optim VCC_UNUSED = {0, 0, 0, 0, 0, 0, 0, 0};

enum { VCC_ROLE_PARAM = 0, VCC_ROLE_BUFFER = 1, VCC_ROLE_CONST = 2, VCC_ROLE_GRAD = 3, VCC_ROLE_OPT_STATE = 4 };

/* ------------------------------------------------------------------------ */
/* Program name and fatal errors                                            */
/* ------------------------------------------------------------------------ */

/* vcc_set_program: take the program's name for error lines from argv[0] (its basename); an empty or
 * missing argv[0] keeps VCC_PROGRAM. */
VCC_STATE_FN void vcc_set_program(const char *argv0) {
    if (!argv0 || !*argv0) return;
    const char *slash = strrchr(argv0, '/');
    vcc_program = slash && slash[1] ? slash + 1 : argv0;
}

/* vcc_die: print "<program>: <msg>" and exit with status 1 (a generated program's errors are fatal). */
VCC_STATE_FN void vcc_die(const char *msg) {
    fprintf(stderr, "%s: %s\n", vcc_program, msg);
    exit(1);
}

#if defined(__GNUC__) || defined(__clang__)
#define VCC_STATE_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define VCC_STATE_PRINTF(a, b)
#endif

/* vcc_vreport: one line "<program>: <prefix><message><suffix>" on stderr, the message from fmt and ap. */
VCC_STATE_FN void vcc_vreport(const char *prefix, const char *suffix, const char *fmt, va_list ap) {
    fprintf(stderr, "%s: %s", vcc_program, prefix);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "%s\n", suffix);
}

/* vcc_dief: vcc_die with a printf format. */
VCC_STATE_FN void vcc_dief(const char *fmt, ...) VCC_STATE_PRINTF(1, 2);
VCC_STATE_FN void vcc_dief(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vcc_vreport("", "", fmt, ap);
    va_end(ap);
    exit(1);
}

/* vcc_warnf: one line "<program>: warning: <message>" on stderr; the program goes on. */
VCC_STATE_FN void vcc_warnf(const char *fmt, ...) VCC_STATE_PRINTF(1, 2);
VCC_STATE_FN void vcc_warnf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vcc_vreport("warning: ", "", fmt, ap);
    va_end(ap);
}

/* vcc_usage_error: a malformed command line: "<program>: <message> (see <program> --help)", status 2. */
VCC_STATE_FN void vcc_usage_error(const char *fmt, ...) VCC_STATE_PRINTF(1, 2);
VCC_STATE_FN void vcc_usage_error(const char *fmt, ...) {
    char see[600];
    va_list ap;
    snprintf(see, sizeof see, " (see %.512s --help)", vcc_program);
    va_start(ap, fmt);
    vcc_vreport("", see, fmt, ap);
    va_end(ap);
    exit(2);
}

/* ------------------------------------------------------------------------ */
/* Standard output                                                          */
/* ------------------------------------------------------------------------ */

/* Set once a failed write to stdout has been reported, so the report is made once. */
static int vcc_stdout_reported = 0;

/* vcc_stdout_check: flush stdout; when that or an earlier write to it failed (a full disk, a closed
 * pipe's EPIPE, /dev/full), print "<program>: cannot write to standard output: <reason>" on stderr
 * and end the program with status 1 (_exit: also safe from the atexit handler). Called after every
 * line a program prints as it goes and at exit (vcc_watch_stdout). */
VCC_STATE_FN void vcc_stdout_check(void) {
    if (vcc_stdout_reported) return;
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout)) return;
    vcc_stdout_reported = 1;
    fprintf(stderr, "%s: cannot write to standard output: %s\n", vcc_program, errno ? strerror(errno) : "write error");
    fflush(stderr);
    _exit(1);
}

/* vcc_stdout_at_exit: the atexit form of vcc_stdout_check. */
static void vcc_stdout_at_exit(void) { vcc_stdout_check(); }

/* vcc_watch_stdout: check stdout once more when the program exits (atexit), so output that was
 * printed but could not be written turns a successful exit into status 1 with a message. */
VCC_STATE_FN void vcc_watch_stdout(void) { atexit(vcc_stdout_at_exit); }

/* ------------------------------------------------------------------------ */
/* Command line                                                             */
/* ------------------------------------------------------------------------ */

/* vcc_escaped: text as it may appear in a one-line message (vcc_io_escape: control characters and
 * invalid UTF-8 escaped, cut to cap bytes), into buf; returns buf. */
VCC_STATE_FN const char *vcc_escaped(const char *text, char *buf, size_t cap) {
    vcc_io_escape(text, buf, cap);
    return buf;
}

/* vcc_opt_match: whether argv[*i] is the option name, as "--name VALUE" or "--name=VALUE"; on a match
 * *value is the value and *i points at the last word used. A matching option without a value, and an
 * option given twice (*value already set: the caller starts every value at NULL), are usage errors. */
VCC_STATE_FN int vcc_opt_match(int argc, char **argv, int *i, const char *name, const char **value) {
    const char *a = argv[*i], *v;
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0) return 0;
    if (a[n] == '=') {
        v = a + n + 1;
    } else {
        if (a[n] != 0) return 0;
        if (*i + 1 >= argc) vcc_usage_error("option %s needs a value", name);
        v = argv[++*i];
    }
    if (*value) {
        char x[256], y[256];
        vcc_usage_error("option %s is given twice ('%s' and '%s')", name, vcc_escaped(*value, x, sizeof x),
                        vcc_escaped(v, y, sizeof y));
    }
    *value = v;
    return 1;
}

/* vcc_parse_count: a decimal integer (digits only: no sign, spaces or hex) in [0, LONG_MAX] into
 * *out. Returns 0; 1 for any other text; 2 when the value is above LONG_MAX. */
VCC_STATE_FN int vcc_parse_count(const char *s, long *out) {
    const char *p = s;
    while (*p >= '0' && *p <= '9') p++;
    if (p == s || *p) return 1;
    errno = 0;
    long v = strtol(s, NULL, 10);
    if (errno == ERANGE) return 2;
    *out = v;
    return 0;
}

/* vcc_option_float: parse option opt's value text with vcc_io_parse_float into *out, or die (status 1) with
 * a one-line message naming the option and saying what is wrong. */
VCC_STATE_FN void vcc_option_float(const char *opt, const char *text, float *out) {
    char s[256];
    int rc = vcc_io_parse_float(text, out);
    vcc_escaped(text, s, sizeof s);
    if (rc == 1) vcc_dief("%s needs a decimal number >= 0 (like 0.01 or 1e-3), got '%s'", opt, s);
    if (rc == 2) vcc_dief("%s %s is too large for float32 (at most %g)", opt, s, (double)FLT_MAX);
    if (rc == 3) vcc_dief("%s %s is too small for float32: it would be 0", opt, s);
}

/* vcc_option_count: parse option opt's value text with vcc_parse_count into *out, or die (status 1) with
 * a one-line message naming the option. */
VCC_STATE_FN void vcc_option_count(const char *opt, const char *text, long *out) {
    char s[256];
    int rc = vcc_parse_count(text, out);
    vcc_escaped(text, s, sizeof s);
    if (rc == 1) vcc_dief("%s needs a non-negative decimal integer, got '%s'", opt, s);
    if (rc == 2) vcc_dief("%s %s is too large (at most %ld)", opt, s, LONG_MAX);
}

/* --threads N: the C programs' thread count (vcc_rt_set_threads, cpu/base.h); the CUDA programs have no
 * such option (these match nothing and apply nothing there). */

/* vcc_omp_passive: with -fopenmp on Linux, unless the environment sets OMP_WAIT_POLICY, and only when
 * sgemm runs on a second thread pool (a C program linked with OpenBLAS's pthreads build:
 * openblas_get_parallel() == 1), run this program again (execv of /proc/self/exe, same argv and pid)
 * with OMP_WAIT_POLICY=passive, which libgomp reads only when it loads. Between parallel loops the
 * OpenMP workers then sleep instead of spinning, and do not take cores from OpenBLAS's own sgemm
 * threads: on a 2-core machine under load, spinning workers made r3d_18's step about twice as slow
 * (bench/README.md). With OpenBLAS's OpenMP build (or a sequential one) there is one pool, and
 * libgomp's default policy stays: its workers spin a little before they sleep, so the many short
 * loops of a step do not each pay a futex wake-up (s3d's step, 2 threads: passive workers 0.33 s,
 * the default 0.22 s). Called first in every C program's main; when the exec fails the program runs
 * on with libgomp's default policy. */
VCC_STATE_FN void vcc_omp_passive(char **argv) {
#if defined(_OPENMP) && defined(__linux__)
    if (getenv("OMP_WAIT_POLICY")) return;
#ifdef VCC_RT_THREADS
    if (openblas_get_parallel() != 1) return;
#endif
    if (setenv("OMP_WAIT_POLICY", "passive", 1) != 0) return;
    execv("/proc/self/exe", argv);
#else
    (void)argv;
#endif
}

/* vcc_threads_match: vcc_opt_match for --threads, in a program whose target has threads. */
VCC_STATE_FN int vcc_threads_match(int argc, char **argv, int *i, const char **value) {
#ifdef VCC_RT_THREADS
    return vcc_opt_match(argc, argv, i, "--threads", value);
#else
    (void)argc, (void)argv, (void)i, (void)value;
    return 0;
#endif
}

/* vcc_threads_help: the --threads line of --help (width w of the option column), C programs only. */
VCC_STATE_FN void vcc_threads_help(FILE *f, int w) {
#ifdef VCC_RT_THREADS
    fprintf(f, "  %-*s threads of the loops and of sgemm (default: the physical cores, here %d)\n", w, "--threads N",
            vcc_cpu_physical_cores());
#else
    (void)f, (void)w;
#endif
}

/* vcc_threads_apply: set rt's threads to --threads' value text (a decimal integer >= 1; NULL: the
 * physical cores); dies (status 1) naming the option on a bad value. */
VCC_STATE_FN void vcc_threads_apply(VccRt *rt, const char *text) {
#ifdef VCC_RT_THREADS
    long n = 0;
    if (text) {
        vcc_option_count("--threads", text, &n);
        if (n < 1 || n > 4096) vcc_dief("--threads needs a thread count from 1 to 4096, got %ld", n);
    }
    vcc_rt_set_threads(rt, text ? (int)n : vcc_cpu_physical_cores());
#else
    (void)rt, (void)text;
#endif
}

/* ------------------------------------------------------------------------ */
/* Output files                                                             */
/* ------------------------------------------------------------------------ */

/* vcc_check_writable: fail now, before the run, when option opt's output path cannot be written: an
 * empty name, an existing file that is not a regular file (a FIFO, a device, a folder, a symlink to
 * one: the write renames a new file over the path and would replace it), a folder that is missing or
 * not writable (vcc_io_check_output). Dies with one line naming the file (status 1). The writers
 * check the path again when they write. */
VCC_STATE_FN void vcc_check_writable(const char *opt, const char *path) {
    char err[1024];
    if (!*path) vcc_dief("%s: the file name is empty", opt);
    if (vcc_io_check_output(path, err, sizeof err)) vcc_die(err);
}

/* A file on the command line: the option (or role) that names it and its path. */
typedef struct {
    const char *opt, *path;
} VccFileArg;

/* vcc_check_distinct: refuse (usage error, status 2) an output that names the same file
 * (vcc_io_same_file) as an input or another output, naming both options; entries with a NULL path are
 * skipped. Called at startup, before anything is read or written. */
VCC_STATE_FN void vcc_check_distinct(const VccFileArg *in, int nin, const VccFileArg *out, int nout) {
    for (int i = 0; i < nout; i++) {
        if (!out[i].path) continue;
        for (int j = 0; j < nin + i; j++) {
            const VccFileArg *o = j < nin ? &in[j] : &out[j - nin];
            if (o->path && vcc_io_same_file(out[i].path, o->path)) {
                char shown[1024];
                vcc_usage_error("%s and %s name the same file (%s): an output must not replace an input or another "
                                "output", o->opt, out[i].opt, vcc_escaped(out[i].path, shown, sizeof shown));
            }
        }
    }
}

/* vcc_beside_program: the path of a file vcc wrote beside the program (name, e.g. "train.safetensors"),
 * found from argv[0]'s folder, so "dir/train" run from anywhere reads dir/train.safetensors; a program
 * started through PATH (no '/' in argv[0]) looks in the current folder. Written into buf (cap bytes). */
VCC_STATE_FN const char *vcc_beside_program(const char *argv0, const char *name, char *buf, size_t cap) {
    const char *slash = argv0 ? strrchr(argv0, '/') : NULL;
    if (!slash || name[0] == '/') snprintf(buf, cap, "%s", name);
    else snprintf(buf, cap, "%.*s/%s", (int)(slash - argv0), argv0, name);
    return buf;
}

/* ------------------------------------------------------------------------ */
/* Data files: clips and labels                                             */
/* ------------------------------------------------------------------------ */

/* A graph input or output: where it lives in the arena and what it must look like. */
typedef struct {
    const char *name;
    size_t offset, bytes;
    int rank;
    int64_t dims[8];
    const char *npy; /* the .npy dtype code: "f4" (float32), "i8" (int64); outputs also "i4", "f8", "b1" */
} VccIoInfo;

/* vcc_clip_shape: "(S, 3, 8, 56, 56)", the compiled shape (N, C, T, H, W) with the sample count left
 * open, into buf (cap bytes). */
VCC_STATE_FN const char *vcc_clip_shape(int rank, const int64_t *dims, char *buf, size_t cap) {
    size_t o = (size_t)snprintf(buf, cap, "(S");
    for (int d = 1; d < rank && o < cap; d++) o += (size_t)snprintf(buf + o, cap - o, ", %lld", (long long)dims[d]);
    if (o < cap) snprintf(buf + o, cap - o, ")");
    return buf;
}

/* vcc_load_samples: load path as float32 (S, ...) with the trailing dims = dims[1..rank-1] and S >= 1 (or
 * S == want_S when want_S > 0: the data's sample count) into x; what names the array in messages
 * ("data", "targets"). Dies with a one-line message naming the file otherwise. */
VCC_STATE_FN void vcc_load_samples(const char *path, const char *what, int rank, const int64_t *dims, int64_t want_S,
                                   VccNpy *x) {
    char err[1024];
    if (vcc_npy_load_as(path, "f4", what, x, err, sizeof err)) vcc_die(err);
    int shape_ok = x->rank == rank && x->dims[0] >= 1 && (want_S <= 0 || x->dims[0] == want_S);
    for (int d = 1; shape_ok && d < rank; d++) shape_ok = x->dims[d] == dims[d];
    if (!shape_ok) {
        char want[256], got[256];
        size_t o = (size_t)snprintf(got, sizeof got, "(");
        for (int d = 0; d < x->rank && o < sizeof got; d++)
            o += (size_t)snprintf(got + o, sizeof got - o, d ? ", %lld" : "%lld", (long long)x->dims[d]);
        if (o < sizeof got) snprintf(got + o, sizeof got - o, ")");
        if (want_S > 0 && x->rank == rank && x->dims[0] != want_S)
            vcc_dief("%s: expected %lld samples to match the data's, got shape %s", path, (long long)want_S, got);
        vcc_dief("%s: expected shape %s, got %s", path, vcc_clip_shape(rank, dims, want, sizeof want), got);
    }
}

/* vcc_load_clips: load path as float32 (S, C, T, H, W) with (C, T, H, W) = dims[1..] and S >= 1 into x;
 * dies with a one-line message naming the file otherwise. */
VCC_STATE_FN void vcc_load_clips(const char *path, int rank, const int64_t *dims, VccNpy *x) {
    vcc_load_samples(path, "data", rank, dims, 0, x);
}

/* vcc_load_labels: load path as int64 (S,) with every value in [0, K) (K <= 0: any value) into y; dies
 * with a one-line message naming the file otherwise. */
VCC_STATE_FN void vcc_load_labels(const char *path, int64_t S, int64_t K, VccNpy *y) {
    char err[1024];
    if (vcc_npy_load_as(path, "i8", "labels", y, err, sizeof err)) vcc_die(err);
    if (y->rank != 1 || y->dims[0] != S)
        vcc_dief("%s: expected shape (%lld,) to match the data's %lld samples", path, (long long)S, (long long)S);
    const int64_t *labels = (const int64_t *)y->data;
    for (int64_t i = 0; i < S && K > 0; i++)
        if (labels[i] < 0 || labels[i] >= K)
            vcc_dief("%s: label %lld at index %lld is outside [0, %lld)", path, (long long)labels[i], (long long)i,
                     (long long)K);
}

/* ------------------------------------------------------------------------ */
/* Fingerprints (FNV-1a, 64 bits): what identifies a model, a data set, a run */
/* ------------------------------------------------------------------------ */

/* vcc_fnv: fold n bytes at p into the hash h (start from VCC_FNV_INIT). */
#define VCC_FNV_INIT 0xcbf29ce484222325ull
VCC_STATE_FN uint64_t vcc_fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = (const unsigned char *)p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* vcc_fnv_u64: fold one integer (as 8 little-endian bytes) into h. */
VCC_STATE_FN uint64_t vcc_fnv_u64(uint64_t h, uint64_t v) {
    unsigned char b[8];
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)(v >> (8 * i));
    return vcc_fnv(h, b, 8);
}

/* vcc_state_fingerprint: the compiled program's identity as far as saved state goes: every state
 * tensor's name, arena offset, size, shape, dtype and role, and the arena size. Two programs with the
 * same fingerprint read and write the same checkpoints. */
VCC_STATE_FN uint64_t vcc_state_fingerprint(const VccStateInfo *state, int nstate, size_t arena_bytes) {
    uint64_t h = vcc_fnv_u64(VCC_FNV_INIT, arena_bytes);
    for (int i = 0; i < nstate; i++) {
        const VccStateInfo *s = &state[i];
        h = vcc_fnv(h, s->name, strlen(s->name) + 1);
        h = vcc_fnv_u64(vcc_fnv_u64(vcc_fnv_u64(h, s->offset), s->bytes), (uint64_t)s->rank);
        for (int d = 0; d < s->rank; d++) h = vcc_fnv_u64(h, (uint64_t)s->dims[d]);
        h = vcc_fnv_u64(vcc_fnv_u64(h, (uint64_t)s->is_i64), (uint64_t)s->role);
    }
    return h;
}

/* vcc_array_fingerprint: an array's dtype, shape and contents; arrays above 1 MiB are sampled (4096
 * blocks of 64 bytes spread evenly, plus the last 64 bytes), so a multi-GB clip file costs
 * microseconds. */
VCC_STATE_FN uint64_t vcc_array_fingerprint(const VccNpy *a) {
    uint64_t h = vcc_fnv(VCC_FNV_INIT, a->dtype, strlen(a->dtype));
    h = vcc_fnv_u64(h, (uint64_t)a->rank);
    for (int d = 0; d < a->rank; d++) h = vcc_fnv_u64(h, (uint64_t)a->dims[d]);
    const unsigned char *p = (const unsigned char *)a->data;
    size_t n = a->nbytes, block = 64, nblocks = 4096;
    if (n <= ((size_t)1 << 20)) return vcc_fnv(h, p, n);
    for (size_t i = 0; i < nblocks; i++) h = vcc_fnv(h, p + (n - block) / (nblocks - 1) * i, block);
    return vcc_fnv(h, p + n - block, block);
}

/* ------------------------------------------------------------------------ */
/* State: load and save                                                     */
/* ------------------------------------------------------------------------ */

/* vcc_dtype_shape: "F32 (64, 3, 3, 7, 7)" (Python's tuple text: "(8,)" for rank 1, "()" for rank 0)
 * into buf (cap bytes). */
VCC_STATE_FN const char *vcc_dtype_shape(const char *dtype, int rank, const int64_t *dims, char *buf, size_t cap) {
    size_t o = (size_t)snprintf(buf, cap, "%s (", dtype);
    for (int d = 0; d < rank && o < cap; d++) o += (size_t)snprintf(buf + o, cap - o, d ? ", %lld" : "%lld", (long long)dims[d]);
    if (o < cap) snprintf(buf + o, cap - o, rank == 1 ? ",)" : ")");
    return buf;
}

/* vcc_state_check: whether the loaded file st (read from path) holds every state tensor this program
 * reads, with the compiled dtype and shape: parameters, BN buffers and constants always, momentum
 * buffers when need_opt (a checkpoint to resume); gradients are never read. Returns 0, or 1 with
 * "<path>: tensor '<name>' is missing" or "<path>: tensor '<name>' is F32 (8, 3) in the file; the
 * program needs F32 (8, 4)" in err (names escaped by vcc_io_errf). */
VCC_STATE_FN int vcc_state_check(const VccSafetensors *st, const char *path, const VccStateInfo *state, int nstate,
                                 int need_opt, char *err, size_t errlen) {
    for (int i = 0; i < nstate; i++) {
        const VccStateInfo *s = &state[i];
        if (s->role == VCC_ROLE_GRAD) continue;
        const VccStEntry *e = vcc_st_find(st, s->name);
        if (!e && s->role == VCC_ROLE_OPT_STATE && !need_opt) continue;
        if (!e) {
            vcc_io_errf(err, errlen, path, "tensor '%s' is missing", s->name);
            return 1;
        }
        int same = e->rank == s->rank && !strcmp(e->dtype, s->is_i64 ? "I64" : "F32") && e->end - e->begin == s->bytes;
        for (int d = 0; same && d < s->rank; d++) same = e->dims[d] == s->dims[d];
        if (!same) {
            char got[300], want[300];
            vcc_io_errf(err, errlen, path, "tensor '%s' is %s in the file; the program needs %s", s->name,
                        vcc_dtype_shape(e->dtype, e->rank, e->dims, got, sizeof got),
                        vcc_dtype_shape(s->is_i64 ? "I64" : "F32", s->rank, s->dims, want, sizeof want));
            return 1;
        }
    }
    return 0;
}

/* vcc_state_upload: copy the state tensors of st (checked with vcc_state_check) into the arena;
 * momentum buffers absent from st keep the arena's contents (zero in a fresh arena). */
VCC_STATE_FN void vcc_state_upload(VccRt *rt, const VccSafetensors *st, const VccStateInfo *state, int nstate,
                                   unsigned char *arena) {
    for (int i = 0; i < nstate; i++) {
        const VccStateInfo *s = &state[i];
        const VccStEntry *e = s->role == VCC_ROLE_GRAD ? NULL : vcc_st_find(st, s->name);
        if (e) vcc_upload(rt, arena + s->offset, st->buf + e->begin, s->bytes);
    }
}

/* vcc_load_state: load the state tensors from the safetensors file at path into the arena: parameters,
 * BN buffers and constants must be present with the compiled dtype and shape; momentum buffers are
 * restored when present (a checkpoint), else stay zero; gradients are not read. Dies with a one-line
 * message; where path is the default (beside_program: no --weights given) and cannot be opened, the
 * message says to name one with --weights (a program compiled from a .vir dump has no such file). */
VCC_STATE_FN void vcc_load_state(VccRt *rt, const VccStateInfo *state, int nstate, unsigned char *arena, const char *path,
                                 int beside_program) {
    char err[1024];
    VccSafetensors st;
    if (vcc_st_load(path, &st, err, sizeof err)) {
        if (beside_program && access(path, F_OK) != 0)
            vcc_dief("%s (the weights vcc writes beside the program it compiles from an ONNX model; name a file "
                     "with --weights W.safetensors)", err);
        vcc_die(err);
    }
    if (vcc_state_check(&st, path, state, nstate, 0, err, sizeof err)) vcc_die(err);
    vcc_state_upload(rt, &st, state, nstate, arena);
    vcc_st_free(&st);
}

/* vcc_save_state_meta: save every state tensor whose role is in roles_mask (bit per role) from the
 * arena to path, with nmeta "__metadata__" strings; written to a new temporary file beside path,
 * flushed to disk and renamed (vcc_st_save_meta). Returns 0, or 1 with the message in err. */
VCC_STATE_FN int vcc_save_state_meta(VccRt *rt, const VccStateInfo *state, int nstate, const unsigned char *arena,
                                     const char *path, int roles_mask, const VccStMeta *meta, int nmeta, char *err,
                                     size_t errlen) {
    VccStWrite *w = (VccStWrite *)calloc((size_t)nstate + 1, sizeof *w);
    void **bufs = (void **)calloc((size_t)nstate + 1, sizeof *bufs);
    int n = 0, rc = 0;
    if (!w || !bufs) {
        vcc_io_errf(err, errlen, path, "out of memory");
        rc = 1;
    }
    for (int i = 0; i < nstate && !rc; i++) {
        const VccStateInfo *s = &state[i];
        if (!(roles_mask & (1 << s->role))) continue;
        bufs[n] = malloc(s->bytes ? s->bytes : 1);
        if (!bufs[n]) {
            vcc_io_errf(err, errlen, path, "out of memory");
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
    if (!rc) rc = vcc_st_save_meta(path, meta, nmeta, w, n, err, errlen);
    for (int i = 0; i < n; i++) free(bufs[i]);
    free(bufs);
    free(w);
    return rc;
}

/* vcc_save_state: vcc_save_state_meta without metadata. */
VCC_STATE_FN int vcc_save_state(VccRt *rt, const VccStateInfo *state, int nstate, const unsigned char *arena,
                                const char *path, int roles_mask, char *err, size_t errlen) {
    return vcc_save_state_meta(rt, state, nstate, arena, path, roles_mask, NULL, 0, err, errlen);
}

/* ------------------------------------------------------------------------ */
/* Checkpoint folders: DIR/step<k>.safetensors                              */
/* ------------------------------------------------------------------------ */

/* vcc_ckpt_path: "<dir>/step<k>.safetensors" into buf (cap bytes). */
VCC_STATE_FN const char *vcc_ckpt_path(const char *dir, long step, char *buf, size_t cap) {
    snprintf(buf, cap, "%s/step%ld.safetensors", dir, step);
    return buf;
}

/* vcc_ckpt_step_of: the k of a file name "step<k>.safetensors" (k written without leading zeros), or -1
 * for any other name; with tmp, the name must be that of a temporary file of step<k>.safetensors
 * instead (vcc_io_is_tmp_suffix: "step<k>.safetensors.tmp.XXXXXX", a write in flight or cut short). */
VCC_STATE_FN long vcc_ckpt_step_of(const char *name, int tmp) {
    static const char suffix[] = ".safetensors";
    if (strncmp(name, "step", 4) != 0 || name[4] < '0' || name[4] > '9' || (name[4] == '0' && name[5] != '.')) return -1;
    char *end;
    errno = 0;
    long k = strtol(name + 4, &end, 10);
    if (errno || strncmp(end, suffix, sizeof suffix - 1) != 0) return -1;
    end += sizeof suffix - 1;
    if (tmp ? !vcc_io_is_tmp_suffix(end) : *end != '\0') return -1;
    return k;
}

/* qsort order: step numbers, largest first. */
VCC_STATE_FN int vcc_ckpt_cmp_desc(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* vcc_ckpt_list: the step numbers of the checkpoint files (tmp 0) or of the leftover temporary files
 * (tmp 1, vcc_ckpt_step_of) in dir, newest first, in *steps (malloc'd, free it; NULL when *n is 0). A
 * missing dir holds none. Returns 0, or 1 with "<dir>: cannot read: <reason>" in err. */
VCC_STATE_FN int vcc_ckpt_list(const char *dir, int tmp, long **steps, int *n, char *err, size_t errlen) {
    *steps = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) {
        if (errno == ENOENT) return 0;
        vcc_io_errf(err, errlen, dir, "cannot read: %s", strerror(errno));
        return 1;
    }
    int cap = 0;
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL) {
        long k = vcc_ckpt_step_of(ent->d_name, tmp);
        if (k < 0) continue;
        if (*n == cap) {
            long *grown = (long *)realloc(*steps, sizeof(long) * (size_t)(cap ? 2 * cap : 16));
            if (!grown) {
                closedir(d);
                free(*steps);
                *steps = NULL;
                *n = 0;
                vcc_io_errf(err, errlen, dir, "out of memory");
                return 1;
            }
            *steps = grown;
            cap = cap ? 2 * cap : 16;
        }
        (*steps)[(*n)++] = k;
    }
    closedir(d);
    if (*n) qsort(*steps, (size_t)*n, sizeof(long), vcc_ckpt_cmp_desc);
    return 0;
}

/* vcc_ckpt_remove_tmp: remove the temporary files of checkpoint writes that were cut short (a kill
 * during a write leaves "step<k>.safetensors.tmp.XXXXXX") from dir; each one that cannot be removed
 * is reported as a warning. Returns the number removed, -1 when dir cannot be read. */
VCC_STATE_FN int vcc_ckpt_remove_tmp(const char *dir) {
    char path[4200];
    int removed = 0;
    DIR *d = opendir(dir);
    if (!d) return -1;
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL) {
        if (vcc_ckpt_step_of(ent->d_name, 1) < 0) continue;
        snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
        if (remove(path) == 0) removed++;
        else vcc_warnf("%s: cannot remove: %s", path, strerror(errno));
    }
    closedir(d);
    return removed;
}

/* vcc_ckpt_newest: load the newest complete checkpoint in dir into *st (its path in path, cap bytes,
 * its step in *step). A file that does not load (cut short or damaged) is skipped with a warning and the
 * next older one is tried. Returns 0; 1 with the reason in err when dir holds no checkpoint that loads. */
VCC_STATE_FN int vcc_ckpt_newest(const char *dir, VccSafetensors *st, char *path, size_t cap, long *step, char *err,
                                 size_t errlen) {
    long *steps;
    int n, damaged = 0;
    if (vcc_ckpt_list(dir, 0, &steps, &n, err, errlen)) return 1;
    for (int i = 0; i < n; i++) {
        char why[1024];
        vcc_ckpt_path(dir, steps[i], path, cap);
        if (vcc_st_load(path, st, why, sizeof why) == 0) {
            *step = steps[i];
            free(steps);
            return 0;
        }
        vcc_warnf("skipping a checkpoint that does not load: %s", why);
        damaged++;
    }
    free(steps);
    if (damaged)
        vcc_io_errf(err, errlen, dir, "none of its %d checkpoint files loads (see the warnings above)", damaged);
    else
        vcc_io_errf(err, errlen, dir, "holds no checkpoint (step<k>.safetensors) to resume from");
    return 1;
}

/* vcc_ckpt_prune: after step now's checkpoint is written, delete the checkpoints in dir with a smaller
 * step beyond the keep newest ones (the new one counted); files of later steps are left alone; keep 0
 * keeps everything. A file that cannot be removed is reported as a warning. */
VCC_STATE_FN void vcc_ckpt_prune(const char *dir, long now, long keep) {
    long *steps;
    int n;
    long kept = 1;
    char err[1024], path[4200];
    if (keep <= 0) return;
    if (vcc_ckpt_list(dir, 0, &steps, &n, err, sizeof err)) {
        vcc_warnf("%s", err);
        return;
    }
    for (int i = 0; i < n; i++) {
        if (steps[i] >= now) continue;
        if (kept++ < keep) continue;
        if (remove(vcc_ckpt_path(dir, steps[i], path, sizeof path)) != 0)
            vcc_warnf("%s: cannot remove: %s", path, strerror(errno));
    }
    free(steps);
}

#endif /* VCC_STATE_H */
