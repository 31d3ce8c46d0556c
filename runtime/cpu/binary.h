/*
 * cpu/binary.h - the binary family's CPU kernels: Add and GradAccumulate.
 * Signatures: proto/binary.h. Part of the C target's runtime (cpu/base.h).
 */
#ifndef VCC_CPU_BINARY_H
#define VCC_CPU_BINARY_H

#include "base.h"

#define VCC_KERNEL VCC_KERNEL_DECLARE
#include "../proto/binary.h"
#undef VCC_KERNEL

/* add_forward: y = a + b elementwise (ONNX Add, same shape). a, b, y (n);
 * y may == a or b. */
VCC_CPU_FN void add_forward(VccRt *rt, int64_t n, const float *a, const float *b, float *y)
{
    int64_t i;
    (void)rt;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (i = 0; i < n; i++) y[i] = a[i] + b[i];
}

#define VCC_KERNEL VCC_KERNEL_CHECK
#include "../proto/binary.h"
#undef VCC_KERNEL

#endif /* VCC_CPU_BINARY_H */
