/*
 * cpu/base.h - the C target's runtime base: the arena, host transfers, the memory kernels every family
 * uses (copy, fill, counter), and the signature machinery of the op families. Each family's kernels
 * are in cpu/<family>.h (signatures in proto/<family>.h, per-element bodies in elem/<family>.h); a
 * generated .c program inlines this file and the families its schedule uses, after elem/base.h and
 * vcc_io.h; link with -lopenblas -lm. Compiled with -fopenmp (vcc's build command has it), OpenMP
 * runs im2col/col2im and the per-channel/elementwise loops (sgemm is threaded by OpenBLAS either way);
 * without it every loop here runs on one thread. vcc's build command links OpenBLAS's OpenMP build where
 * CMake found one, and then sgemm runs on the same OpenMP workers. With a pthreads OpenBLAS the two
 * thread pools alternate, and its workers spin in sched_yield for a while after each sgemm. Spinning
 * OpenMP workers would steal cores from sgemm, so with that build the programs run with
 * OMP_WAIT_POLICY=passive unless it is set (vcc_omp_passive, vcc_state.h).
 *
 * Shape legend:
 *   N  batch               C  input channels        K  output channels / classes
 *   T  time (frames)       H  height                W  width
 *   G  conv groups         S  prod(spatial) = T*H*W
 *   (in gemm_*, M, N, K are the ONNX Gemm dims: op(A) (M, K), op(B) (K, N))
 * Layout is row-major N, C, spatial (NCDHW for 3-D); all pointers are arena
 * pointers (host memory here); sizes are element counts unless named *_bytes.
 *
 * Errors: a kernel given an inconsistent descriptor or a too-small workspace
 * prints "<program>: internal error: message (file:line)" to stderr and aborts
 * (this is trainer code; the plan guarantees these never fire). Same signatures and semantics as
 * the CUDA target (cuda/), so codegen emits identical call sites for both targets.
 */
#ifndef VCC_CPU_BASE_H
#define VCC_CPU_BASE_H

#include "../elem/base.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cblas.h>
#ifdef _OPENMP
#include <omp.h>
#endif
/* VCC_CPU_PARALLEL_MAP, before a loop whose iterations are independent elementwise maps (element i
 * read and written at i only, no sum across iterations): OpenMP's threads and SIMD lanes under
 * -fopenmp, nothing without it. GCC 12 at -O2 vectorizes only loops whose vector code needs no scalar
 * remainder, so without `simd` these loops ran one float at a time. The lanes compute each element
 * with the same IEEE operations as the scalar code (-std=c11 contracts no multiply-add), so the
 * results are the same bits. */
#ifdef _OPENMP
#define VCC_CPU_PARALLEL_MAP _Pragma("omp parallel for simd schedule(static)")
#else
#define VCC_CPU_PARALLEL_MAP
#endif
/* VCC_CPU_SIMD: the same for an inner map loop that runs on one thread (SIMD lanes only). */
#ifdef _OPENMP
#define VCC_CPU_SIMD _Pragma("omp simd")
#else
#define VCC_CPU_SIMD
#endif
/* OpenBLAS's cblas.h pulls in <complex.h>, whose macros `I` and `complex`
 * would capture ordinary identifiers in the generated code; C99 7.3.1 allows
 * undefining them. */
#ifdef I
#undef I
#endif
#ifdef complex
#undef complex
#endif

/* Every function here is static inline and marked unused (VCC_UNUSED from
 * vcc_elem.h), so a trainer that calls only some kernels compiles warning-free. */
#define VCC_CPU_FN static inline VCC_UNUSED

/* The kernel signature lists (proto/<family>.h) are read twice around each family's definitions: first
 * as declarations (a C definition that differs from its declaration is a compile error), then as
 * checks, which C does not need. */
#define VCC_KERNEL_DECLARE(ret, name, params) VCC_CPU_FN ret name params;
#define VCC_KERNEL_CHECK(ret, name, params)

#ifndef VCC_PROGRAM
#define VCC_PROGRAM "train" /* the generated file defines it as the binary's name */
#endif
/* vcc_program: the first word of every error line the program prints: VCC_PROGRAM until main() sets
 * it to the basename of argv[0] (vcc_set_program in vcc_state.h). */
static const char *vcc_program VCC_UNUSED = VCC_PROGRAM;

/* An internal invariant (never a user error): "<program>: internal error: <message> (file:line)". */
#define VCC_CPU_CHECK(cond, ...)                                              \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "%s: internal error: ", vcc_program);             \
            fprintf(stderr, __VA_ARGS__);                                     \
            fprintf(stderr, " (%s:%d)\n", __FILE__, __LINE__);                \
            abort();                                                          \
        }                                                                     \
    } while (0)

/* VccRt: per-trainer runtime state: the position of dropout's counter-based draws (elem/dropout.h),
 * which the program's main() sets: seed, the run's --seed; step, the training step being computed
 * (1, 2, ...; a forward program computes step 1). conv_state: the convolution library's state (oneDNN's
 * engine, stream and primitives under -DVCC_CONV_DNNL, cpu/conv_dnnl.h), made at its first call and
 * freed by vcc_rt_destroy through conv_state_free; NULL with the im2col backend. */
typedef struct VccRt {
    uint64_t seed, step;
    void *conv_state;
    void (*conv_state_free)(void *state);
} VccRt;

#define VCC_KERNEL VCC_KERNEL_DECLARE
#include "../proto/base.h"
#undef VCC_KERNEL

/* vcc_rt_init / vcc_rt_destroy / vcc_rt_sync: zero rt; free the convolution library's state (oneDNN's
 * primitives, when it made any); nothing (kernels are synchronous). Present so call sites match the
 * CUDA target. */
VCC_CPU_FN void vcc_rt_init(VccRt *rt) { if (rt) memset(rt, 0, sizeof *rt); }
VCC_CPU_FN void vcc_rt_destroy(VccRt *rt)
{
    if (rt && rt->conv_state && rt->conv_state_free) rt->conv_state_free(rt->conv_state);
    if (rt) rt->conv_state = NULL;
}
VCC_CPU_FN void vcc_rt_sync(VccRt *rt) { (void)rt; }

/* The C target's threads: --threads N of the generated programs (vcc_main.h and the evaluation and
 * forward mains) sets both pools, OpenMP's (the loops of this runtime, with -fopenmp) and OpenBLAS's
 * (sgemm). Every OpenMP loop here gives each output element to one thread, which computes it in a
 * fixed order, and OpenBLAS splits sgemm over rows and columns, not over the summed dim, so a step's
 * numbers do not depend on the thread count. */
#define VCC_RT_THREADS 1

/* vcc_cpu_physical_cores: the physical cores this process may run on: the logical CPUs it may use
 * (omp_get_num_procs, which honours the affinity mask, with -fopenmp; else the online CPUs) divided by
 * the hardware threads per core (the CPUs listed in cpu0's topology/thread_siblings_list); at least 1.
 * PyTorch's default intra-op thread count is the physical cores too. */
VCC_CPU_FN int vcc_cpu_physical_cores(void)
{
    long logical;
    int smt = 0;
    FILE *f;
#ifdef _OPENMP
    logical = omp_get_num_procs();
#else
    logical = sysconf(_SC_NPROCESSORS_ONLN);
#endif
    f = fopen("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list", "r");
    if (f) {
        /* "0-1", "0,8" or "0": count the CPUs of each comma-separated item */
        long a, b;
        int c;
        while (fscanf(f, "%ld", &a) == 1) {
            b = a;
            c = fgetc(f);
            if (c == '-') {
                if (fscanf(f, "%ld", &b) != 1) break;
                c = fgetc(f);
            }
            if (b >= a && b - a < 1024) smt += (int)(b - a + 1);
            if (c != ',') break;
        }
        fclose(f);
    }
    if (smt < 1) smt = 1;
    if (logical < 1) logical = 1;
    logical /= smt;
    return logical < 1 ? 1 : logical > INT_MAX ? INT_MAX : (int)logical;
}

/* vcc_rt_set_threads: n (>= 1) threads for this process's OpenMP loops (omp_set_num_threads; only with
 * -fopenmp) and for OpenBLAS's sgemm (openblas_set_num_threads); either overrides OMP_NUM_THREADS and
 * OPENBLAS_NUM_THREADS. */
VCC_CPU_FN void vcc_rt_set_threads(VccRt *rt, int n)
{
    (void)rt;
    if (n < 1) n = 1;
#ifdef _OPENMP
    omp_set_num_threads(n);
#endif
    openblas_set_num_threads(n);
}

/* vcc_arena_alloc: bytes of zeroed memory aligned to 256 bytes; NULL on
 * failure or size overflow. Free with vcc_arena_free. (calloc underneath, so
 * a large arena is zero-filled lazily by the OS.) */
VCC_CPU_FN void *vcc_arena_alloc(VccRt *rt, size_t bytes)
{
    size_t extra = 256 + sizeof(void *);
    unsigned char *raw;
    uintptr_t a;
    (void)rt;
    if (bytes > (size_t)-1 - extra) return NULL;
    raw = (unsigned char *)calloc(bytes + extra, 1);
    if (!raw) return NULL;
    a = ((uintptr_t)raw + sizeof(void *) + 255u) & ~(uintptr_t)255u;
    ((void **)a)[-1] = raw;
    return (void *)a;
}

/* vcc_arena_free: release a vcc_arena_alloc block; NULL is a no-op. */
VCC_CPU_FN void vcc_arena_free(VccRt *rt, void *p)
{
    (void)rt;
    if (p) free(((void **)p)[-1]);
}

/* vcc_upload: host -> arena copy of bytes (memcpy on the CPU). */
VCC_CPU_FN void vcc_upload(VccRt *rt, void *dst, const void *src, size_t bytes)
{
    (void)rt;
    if (bytes && dst != src) memcpy(dst, src, bytes);
}

/* vcc_download: arena -> host copy of bytes (memcpy on the CPU). */
VCC_CPU_FN void vcc_download(VccRt *rt, void *dst, const void *src, size_t bytes)
{
    (void)rt;
    if (bytes && dst != src) memcpy(dst, src, bytes);
}

/* vcc_read_scalar: the float at arena pointer p (e.g. the loss). */
VCC_CPU_FN float vcc_read_scalar(VccRt *rt, const float *p)
{
    (void)rt;
    return *p;
}

/* vcc_dot_sums_f64: *su = sum u_i and *suv = sum u_i * v_i over i < S, u_i = (double)p[i] - ps and
 * v_i = (double)q[i] - qs, in double, with 8 partial sums (lane l takes i = l mod 8, the tail lane 0)
 * added in a fixed tree at the end: the same order, so the same bits, with and without -fopenmp and at
 * any SIMD width; with GCC or Clang the lanes are one vector (2 or 4 registers below AVX-512). Every double
 * reduction of the C runtime goes through it: batch norm's forward (p = q = x, ps = qs = shift: sum
 * and sum of squares) and backward (p = dy, ps = 0, q = x, qs = mean), vcc_sum_f64 and
 * vcc_sumsq_dev_f64. */
VCC_CPU_FN void vcc_dot_sums_f64(const float *p, double ps, const float *q, double qs, int64_t S, double *su,
                                 double *suv)
{
    double a[8] = {0}, b[8] = {0};
    const int64_t S8 = S - S % 8; /* precomputed: gcc 12 misreads the `i + 8 <= S` form as overflowing
                                   * when S is a constant after inlining (-Waggressive-loop-optimizations) */
    int64_t i, l;
#if defined(__GNUC__) || defined(__clang__)
    /* the 8 lanes as one vector type: an `omp simd` loop over them stayed scalar once GCC 12 inlined this
     * into the OpenMP bodies (its -O2 cost model unrolls the 8-iteration loop first); each lane does the
     * scalar loop's IEEE operations, so the bits are the same */
    typedef double vcc_v8d __attribute__((vector_size(64)));
    typedef float vcc_v8f __attribute__((vector_size(32)));
    vcc_v8d va = {0}, vb = {0};
    for (i = 0; i < S8; i += 8) {
        vcc_v8f pf, qf;
        vcc_v8d u, v;
        memcpy(&pf, p + i, sizeof pf);
        memcpy(&qf, q + i, sizeof qf);
        u = __builtin_convertvector(pf, vcc_v8d) - ps;
        v = __builtin_convertvector(qf, vcc_v8d) - qs;
        va += u;
        vb += u * v;
    }
    for (l = 0; l < 8; l++) {
        a[l] = va[l];
        b[l] = vb[l];
    }
#else
    for (i = 0; i < S8; i += 8) {
        for (l = 0; l < 8; l++) {
            double u = (double)p[i + l] - ps, v = (double)q[i + l] - qs;
            a[l] += u;
            b[l] += u * v;
        }
    }
#endif
    for (; i < S; i++) {
        double u = (double)p[i] - ps, v = (double)q[i] - qs;
        a[0] += u;
        b[0] += u * v;
    }
    *su = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
    *suv = ((b[0] + b[1]) + (b[2] + b[3])) + ((b[4] + b[5]) + (b[6] + b[7]));
}

/* vcc_sum_f64: sum of r[0..n-1] in double (vcc_dot_sums_f64's fixed order, so the result does not
 * depend on threads). */
VCC_CPU_FN double vcc_sum_f64(const float *r, int64_t n)
{
    double s, unused;
    vcc_dot_sums_f64(r, 0.0, r, 0.0, n, &s, &unused);
    return s;
}

/* vcc_sumsq_dev_f64: sum of (r[i] - mu)^2 over r[0..n-1] in double (vcc_dot_sums_f64's fixed order). */
VCC_CPU_FN double vcc_sumsq_dev_f64(const float *r, int64_t n, double mu)
{
    double unused, s;
    vcc_dot_sums_f64(r, mu, r, mu, n, &unused, &s);
    return s;
}

/* copy_forward: y = x (n elements; Identity / Reshape / Flatten copies).
 * Overlapping ranges are allowed. */
VCC_CPU_FN void copy_forward(VccRt *rt, int64_t n, const float *x, float *y)
{
    (void)rt;
    if (n > 0 && x != y) memmove(y, x, (size_t)n * sizeof(float));
}

/* bf16_round_forward: y[i] = x[i] rounded to bfloat16 (vcc_bf16_round), n elements; y may == x. The
 * CastBF16 op, and under --precision bf16 every store of a bfloat16 value in the C trainer (float32
 * storage: the values a CUDA trainer keeps as bfloat16). */
VCC_CPU_FN void bf16_round_forward(VccRt *rt, int64_t n, const float *x, float *y)
{
    int64_t i;
    (void)rt;
    VCC_CPU_PARALLEL_MAP
    for (i = 0; i < n; i++) y[i] = vcc_bf16_round(x[i]);
}

/* counter_increment: *count += 1 (a BatchNormalization's num_batches_tracked,
 * which PyTorch counts up once per training-mode forward). */
VCC_CPU_FN void counter_increment(VccRt *rt, int64_t *count)
{
    (void)rt;
    *count += 1;
}

/* fill_forward: y[i] = value for i < n (e.g. the loss seed dloss = 1). */
VCC_CPU_FN void fill_forward(VccRt *rt, int64_t n, float value, float *y)
{
    int64_t i;
    (void)rt;
    for (i = 0; i < n; i++) y[i] = value;
}

#define VCC_KERNEL VCC_KERNEL_CHECK
#include "../proto/base.h"
#undef VCC_KERNEL

#endif /* VCC_CPU_BASE_H */
