/*
 * cpu/optim.h - the optim family's CPU kernels: SGD with momentum, AdamW, and the global gradient norm
 * of --clip-grad-norm.
 * Signatures: proto/optim.h; per-element bodies shared with the CUDA target: elem/optim.h. Part of the C target's runtime (cpu/base.h).
 */
#ifndef VCC_CPU_OPTIM_H
#define VCC_CPU_OPTIM_H

#include "base.h"
#include "../elem/optim.h"

#define VCC_KERNEL VCC_KERNEL_DECLARE
#include "../proto/optim.h"
#undef VCC_KERNEL

/* the update loops run their elements in parallel under OpenMP (each element is independent) */
#define VCC_OPTIM_PARALLEL VCC_CPU_PARALLEL_MAP

/* sgd_update: torch.optim.SGD step (dampening 0, nesterov off) per element,
 * vcc_sgd: g += wd*p; v = momentum*v + g; p -= lr*v.
 *   p, v (n) updated in place (v zero before the first step); g (n), multiplied by (float)*scale first
 *   when scale is not NULL (the clip scale of grad_clip_scale). */
VCC_CPU_FN void sgd_update(VccRt *rt, int64_t n, float *p, const float *g, float *v, const double *scale, float lr,
                           float momentum, float wd)
{
    int64_t i;
    float s = scale ? (float)*scale : 1.0f;
    (void)rt;
    VCC_OPTIM_PARALLEL
    for (i = 0; i < n; i++) vcc_sgd(&p[i], scale ? g[i] * s : g[i], &v[i], lr, momentum, wd);
}

/* adamw_update: torch.optim.AdamW step per element (vcc_adamw with the step's scalars c,
 * vcc_adamw_coef). p, m, v (n) updated in place (m, v zero before the first step); g (n), multiplied by
 * (float)*scale first when scale is not NULL. */
VCC_CPU_FN void adamw_update(VccRt *rt, int64_t n, float *p, const float *g, float *m, float *v, const double *scale,
                             VccAdamwCoef c)
{
    int64_t i;
    float s = scale ? (float)*scale : 1.0f;
    (void)rt;
    VCC_OPTIM_PARALLEL
    for (i = 0; i < n; i++) vcc_adamw(&p[i], scale ? g[i] * s : g[i], &m[i], &v[i], &c);
}

/* grad_sumsq: the sum of g's squares (n elements) in float64, in index order, stored in acc[0]
 * (first != 0) or added to it. */
VCC_CPU_FN void grad_sumsq(VccRt *rt, int64_t n, const float *g, double *acc, int first)
{
    int64_t i;
    double s = 0.0;
    (void)rt;
    for (i = 0; i < n; i++) s += (double)g[i] * (double)g[i];
    acc[0] = first ? s : acc[0] + s;
}

/* grad_clip_scale: c (2 doubles, the sum of squares grad_sumsq left in c[0]) becomes (total norm, clip
 * scale), vcc_clip_scale. */
VCC_CPU_FN void grad_clip_scale(VccRt *rt, double *c, double max_norm)
{
    (void)rt;
    vcc_clip_scale(c, max_norm);
}

#define VCC_KERNEL VCC_KERNEL_CHECK
#include "../proto/optim.h"
#undef VCC_KERNEL

#endif /* VCC_CPU_OPTIM_H */
