/*
 * cpu/softmax.h - the softmax family's CPU kernels: Softmax, LogSoftmax and their gradients.
 * Signatures: proto/softmax.h; per-row bodies shared with the CUDA target: elem/softmax.h. Part of the C
 * target's runtime (cpu/base.h).
 */
#ifndef VCC_CPU_SOFTMAX_H
#define VCC_CPU_SOFTMAX_H

#include "base.h"
#include "../elem/softmax.h"

#define VCC_KERNEL VCC_KERNEL_DECLARE
#include "../proto/softmax.h"
#undef VCC_KERNEL

/* The rows of the (outer, D, inner) view: vcc_softmax_row of v into out (dy NULL), or
 * vcc_softmax_bwd_row of v = y and dy into out. */
VCC_CPU_FN void vcc__softmax_rows(int lg, int64_t outer, int64_t D, int64_t inner, const float *v, const float *dy,
                                  float *out)
{
    int64_t r;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (r = 0; r < outer * inner; r++) {
        const int64_t base = (r / inner) * D * inner + r % inner;
        if (dy)
            vcc_softmax_bwd_row(lg, D, inner, v + base, dy + base, out + base);
        else
            vcc_softmax_row(lg, D, inner, v + base, out + base);
    }
}

/* softmax_forward: ONNX Softmax (lg 0) / LogSoftmax (lg 1) of x viewed as (outer, D, inner), normalized
 * along D for each (outer, inner) row (torch.softmax / torch.log_softmax along that dim). x, y
 * (outer * D * inner); y OVERWRITTEN, y != x. */
VCC_CPU_FN void softmax_forward(VccRt *rt, int lg, int64_t outer, int64_t D, int64_t inner, const float *x, float *y)
{
    (void)rt;
    vcc__softmax_rows(lg, outer, D, inner, x, NULL, y);
}

/* softmax_backward: the gradient of softmax_forward from its OUTPUT y and dy (same view):
 * softmax dx = y * (dy - sum(dy * y)), log-softmax dx = dy - exp(y) * sum(dy), sums over each row in
 * double. dx OVERWRITTEN, dx != y, dy. */
VCC_CPU_FN void softmax_backward(VccRt *rt, int lg, int64_t outer, int64_t D, int64_t inner, const float *y,
                                 const float *dy, float *dx)
{
    (void)rt;
    vcc__softmax_rows(lg, outer, D, inner, y, dy, dx);
}

#define VCC_KERNEL VCC_KERNEL_CHECK
#include "../proto/softmax.h"
#undef VCC_KERNEL

#endif /* VCC_CPU_SOFTMAX_H */
