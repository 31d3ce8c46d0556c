/*
 * cuda/optim.cuh - the optim family's CUDA kernels: SGD with momentum.
 * Signatures: proto/optim.h; per-element bodies shared with the C target: elem/optim.h. Part of the CUDA target's runtime (cuda/base.cuh).
 */
#ifndef VCC_CUDA_OPTIM_CUH
#define VCC_CUDA_OPTIM_CUH

#include "base.cuh"
#include "../elem/optim.h"

#define VCC_KERNEL VCC_KERNEL_DECLARE
#include "../proto/optim.h"
#undef VCC_KERNEL

static __global__ void sgd_update_kernel(int64_t n, float *p, const float *g, float *v, float lr, float momentum,
                                         float wd)
{
    VCC_GRID_STRIDE(i, n) {
        float none = 0.0f;
        vcc_sgd(&p[i], g[i], v ? &v[i] : &none, lr, momentum, wd);
    }
}

/* p, g, v (n); v (the momentum buffer) may be NULL when momentum == 0 */
static inline void sgd_update(VccRt *rt, int64_t n, float *p, const float *g, float *v, float lr, float momentum,
                              float wd)
{
    (void)rt;
    if (n <= 0) return;
    sgd_update_kernel<<<vcc__grid(n), VCC_CUDA_THREADS>>>(n, p, g, v, lr, momentum, wd);
    VCC_CUDA_LAUNCHED();
}

#define VCC_KERNEL VCC_KERNEL_CHECK
#include "../proto/optim.h"
#undef VCC_KERNEL

#endif /* VCC_CUDA_OPTIM_CUH */
