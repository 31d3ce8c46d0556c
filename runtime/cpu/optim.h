/*
 * cpu/optim.h - the optim family's CPU kernels: SGD with momentum.
 * Signatures: proto/optim.h; per-element bodies shared with the CUDA target: elem/optim.h. Part of the C target's runtime (cpu/base.h).
 */
#ifndef VCC_CPU_OPTIM_H
#define VCC_CPU_OPTIM_H

#include "base.h"
#include "../elem/optim.h"

#define VCC_KERNEL VCC_KERNEL_DECLARE
#include "../proto/optim.h"
#undef VCC_KERNEL

/* sgd_update: torch.optim.SGD step (dampening 0, nesterov off) per element,
 * vcc_sgd: g += wd*p; v = momentum*v + g; p -= lr*v.
 *   p, v (n) updated in place (v zero before the first step); g (n). */
VCC_CPU_FN void sgd_update(VccRt *rt, int64_t n, float *p, const float *g, float *v, float lr, float momentum,
                              float wd)
{
    int64_t i;
    (void)rt;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (i = 0; i < n; i++) vcc_sgd(&p[i], g[i], &v[i], lr, momentum, wd);
}

#define VCC_KERNEL VCC_KERNEL_CHECK
#include "../proto/optim.h"
#undef VCC_KERNEL

#endif /* VCC_CPU_OPTIM_H */
