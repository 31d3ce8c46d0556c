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

/* VccAdamwCoef: the per-step scalars of one torch.optim.AdamW step (torch/optim/adamw.py,
 * _single_tensor_adamw), computed on the host in double from the step's hyperparameters and rounded to
 * float32 as PyTorch's tensor ops round their Python-number operands. */
typedef struct {
    float decay;            /* 1 - lr * wd                                   (param.mul_) */
    float beta1, omb1;      /* beta1, 1 - beta1                              (exp_avg.mul_.add_) */
    float beta2, omb2;      /* beta2, 1 - beta2                              (exp_avg_sq.mul_.addcmul_) */
    float bc2_sqrt;         /* sqrt(1 - beta2^t)                             (the denominator's divisor) */
    float eps;              /* added to the denominator */
    float neg_step_size;    /* -lr / (1 - beta1^t)                           (addcdiv_'s value) */
} VccAdamwCoef;

/* vcc_adamw_coef: the scalars of AdamW step t (1 at the first step) with learning rate lr (this step's),
 * betas beta1, beta2 in [0, 1), eps >= 0 and decoupled weight decay wd. */
VCC_HD VccAdamwCoef vcc_adamw_coef(double lr, double beta1, double beta2, double eps, double wd, int64_t t)
{
    VccAdamwCoef c;
    double bc1 = 1.0 - pow(beta1, (double)t), bc2 = 1.0 - pow(beta2, (double)t);
    c.decay = (float)(1.0 - lr * wd);
    c.beta1 = (float)beta1;
    c.omb1 = (float)(1.0 - beta1);
    c.beta2 = (float)beta2;
    c.omb2 = (float)(1.0 - beta2);
    c.bc2_sqrt = (float)sqrt(bc2);
    c.eps = (float)eps;
    c.neg_step_size = (float)(-(lr / bc1));
    return c;
}

/* vcc_adamw: one element of torch.optim.AdamW (amsgrad and maximize off), in PyTorch's order:
 *   p *= 1 - lr*wd;  m = m*beta1 + (1-beta1)*g;  v = v*beta2 + (1-beta2)*g*g;
 *   p += -(lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
 * with the scalars of c (vcc_adamw_coef). m and v (exp_avg, exp_avg_sq) start at 0. */
VCC_HD void vcc_adamw(float *p, float g, float *m, float *v, const VccAdamwCoef *c)
{
    float pv = *p * c->decay;
    float mv = *m * c->beta1 + c->omb1 * g;
    float vv = *v * c->beta2 + c->omb2 * g * g;
    float denom = sqrtf(vv) / c->bc2_sqrt + c->eps;
    *m = mv;
    *v = vv;
    *p = pv + c->neg_step_size * mv / denom;
}

/* vcc_clip_scale: the end of torch.nn.utils.clip_grad_norm_(max_norm) (norm type 2) on c, a float64 pair
 * holding the sum of the squares of every gradient element: c becomes (total norm, scale) with
 * scale = max_norm / (norm + 1e-6) when that is below 1, else 1. The updates multiply each gradient
 * element by (float)scale. */
VCC_HD void vcc_clip_scale(double *c, double max_norm)
{
    double norm = sqrt(c[0]), coef = max_norm / (norm + 1e-6);
    c[0] = norm;
    c[1] = coef < 1.0 ? coef : 1.0;
}

#endif /* VCC_ELEM_OPTIM_H */
