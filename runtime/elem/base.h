/*
 * elem/base.h - what the per-element bodies of every op family (elem/<family>.h) build on: VCC_HD
 * (__host__ __device__ under nvcc, static inline under cc), VCC_UNUSED, and the convolution
 * descriptor both targets read.
 *
 * One arithmetic, two targets: every hand-written kernel body lives once, in elem/<family>.h.
 * The CPU loops call it directly; the CUDA kernels call it from device code. Pure C99, no libc
 * I/O, no global state. Inlined verbatim into generated programs.
 *
 * Shape legend:
 *   N  batch            C  input channels     K  output channels (filters)
 *   T  time (frames)    H  height             W  width
 *   G  groups           S  prod(spatial dims) = T*H*W for 3-D tensors
 * Layout is row-major N, C, spatial (NCDHW for 3-D).
 */
#ifndef VCC_ELEM_BASE_H
#define VCC_ELEM_BASE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <math.h>

/* VCC_UNUSED: silences "declared but never referenced" for helpers a given
 * trainer does not call (nvcc's front end warns about unused static inline
 * functions in the main file, which is where the inlined runtime lands). */
#if defined(__GNUC__) || defined(__clang__) || defined(__CUDACC__)
#define VCC_UNUSED __attribute__((unused))
#else
#define VCC_UNUSED
#endif

/* VCC_STEP_FN: the generated step function, the one a program's main() calls through its model
 * table. GCC 12's interprocedural constant propagation (-O2, ipa-cp) resolved that constant function
 * pointer and then dropped the call of a forward program whose step was a single Transpose (the ONNX
 * node test transpose_all_permutations_4 wrote zeros); noipa keeps the step out of interprocedural
 * analysis, at no cost (main calls it once per step). Other compilers need nothing. */
#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
#define VCC_STEP_FN static __attribute__((noipa))
#else
#define VCC_STEP_FN static
#endif

#if defined(__CUDACC__)
#define VCC_HD __host__ __device__ __forceinline__
#else
#define VCC_HD static inline VCC_UNUSED
#endif

/* vcc_bf16_round: x rounded to the nearest bfloat16 value (8 significand bits), ties to even, as a
 * float32 (its low 16 bits zero); infinities stay, a NaN stays a NaN (its quiet bit set). The conversion
 * of torch's float32 -> bfloat16 (c10::BFloat16, round_to_nearest_even) and CUDA's __float2bfloat16_rn;
 * --precision bf16 stores every activation and gradient value through it (passes/precision.c). */
VCC_HD float vcc_bf16_round(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu)) u |= 0x00400000u; /* NaN: quiet, kept */
    else u += 0x7fffu + ((u >> 16) & 1u);                                         /* nearest, ties to even */
    u &= 0xffff0000u;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* Element access of the bodies that read or write through pointers (a pool window, a softmax row), so the
 * CUDA target instantiates them for bfloat16 storage too (vcc --precision bf16: VCC_B pointers):
 *   vcc_ld(p, i)      element i of p as a float;
 *   vcc_st(p, i, v)   stores v into element i of p: as is into a float, rounded by vcc_bf16_round (the C
 *                     trainer's rounding, so both targets store the same bfloat16 value) into a bfloat16;
 *   VCC_ELEM_IN       before such a body: under nvcc "template <class VccIn>", so its input pointer type
 *                     VCC_IN is whatever the kernel passes; under cc nothing, VCC_IN being float;
 *   VCC_ELEM_IO       the same for a body with an input (VCC_IN) and an output (VCC_OUT) pointer. */
VCC_HD float vcc_ld(const float *p, int64_t i) { return p[i]; }
VCC_HD void vcc_st(float *p, int64_t i, float v) { p[i] = v; }
#if defined(__CUDACC__)
#include <cuda_bf16.h>
VCC_HD float vcc_ld(const __nv_bfloat16 *p, int64_t i) { return __bfloat162float(p[i]); }
VCC_HD void vcc_st(__nv_bfloat16 *p, int64_t i, float v)
{
    uint32_t u;
    __nv_bfloat16_raw r;
    v = vcc_bf16_round(v);
    memcpy(&u, &v, sizeof u);
    r.x = (unsigned short)(u >> 16);
    p[i] = __nv_bfloat16(r);
}
#define VCC_ELEM_IN template <class VccIn>
#define VCC_ELEM_IO template <class VccIn, class VccOut>
#define VCC_IN VccIn
#define VCC_OUT VccOut
#else
#define VCC_ELEM_IN
#define VCC_ELEM_IO
#define VCC_IN float
#define VCC_OUT float
#endif

/* VccConvDesc: one ONNX Conv (cross-correlation) with nsp spatial dims.
 *   x (N, C, in[0..nsp-1])   w (K, C/G, kernel[0..nsp-1])   b (K)
 *   y (N, K, out[0..nsp-1]), out = floor((in + pb + pe - dil*(k-1) - 1)/stride) + 1
 * Entries past nsp are ignored (generated code sets them to 1 / 0).
 * backend: target-private cache (cuDNN descriptors and algorithms); NULL
 * initially, owned by the backend. */
typedef struct VccConvDesc {
    int nsp;                          /* spatial rank, 1..3 */
    int64_t N, C, K, G;               /* batch, in channels, out channels (filters), groups */
    int64_t in[3], out[3], kernel[3], stride[3], dilation[3], pad_begin[3], pad_end[3];
    void *backend;                    /* target-private cache; NULL initially */
} VccConvDesc;

#endif /* VCC_ELEM_BASE_H */
