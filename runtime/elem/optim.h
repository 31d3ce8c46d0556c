/*
 * elem/optim.h - the optim family's per-element (and per-row) arithmetic, written once for both
 * targets: the CPU loops (cpu/optim.h) call these directly, the CUDA kernels (cuda/optim.cuh) from device
 * code. Pure C99, no I/O, no state.
 */
#ifndef VCC_ELEM_OPTIM_H
#define VCC_ELEM_OPTIM_H

#include "base.h"

/* vcc_sgd: one element of torch.optim.SGD (dampening 0, nesterov off):
 *   g += wd * p;  v = momentum * v + g;  p -= lr * v
 * v must start at 0 (then the first step gives v = g, as PyTorch's clone).
 * With momentum 0 this is plain p -= lr * (g + wd*p). */
VCC_HD void vcc_sgd(float *p, float g, float *v, float lr, float momentum, float wd)
{
    float pv = *p;
    float vv;
    g += wd * pv;
    vv = momentum * (*v) + g;
    *v = vv;
    *p = pv - lr * vv;
}

#endif /* VCC_ELEM_OPTIM_H */
