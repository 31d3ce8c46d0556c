/*
 * elem/conv.h - the conv family's per-element (and per-row) arithmetic, written once for both
 * targets: the CPU loops (cpu/conv.h) call these directly, the CUDA kernels (cuda/conv.cuh) from device
 * code. Pure C99, no I/O, no state.
 */
#ifndef VCC_ELEM_CONV_H
#define VCC_ELEM_CONV_H

#include "base.h"

/* vcc_conv_col_elems: floats in the im2col buffer for ONE sample and ONE
 * group: (C/G) * prod(kernel) * prod(out). */
static inline VCC_UNUSED int64_t vcc_conv_col_elems(const VccConvDesc *d)
{
    int64_t n = d->C / d->G;
    int i;
    for (i = 0; i < d->nsp; i++)
        n *= d->kernel[i] * d->out[i];
    return n;
}

#endif /* VCC_ELEM_CONV_H */
