/*
 * elem/unary.h - the unary family's per-element arithmetic (Relu, Sigmoid, HardSigmoid, HardSwish,
 * Tanh, LeakyRelu, Clip, Softplus, Elu, Neg, Exp, Log, Sqrt, Sin, Cos, Abs, Floor, Reciprocal, Erf, Gelu
 * and their gradients), written once for both targets: the CPU loops (cpu/unary.h) call these directly, the
 * CUDA kernels (cuda/unary.cuh) from device code. Pure C99, no I/O, no state. Every tensor of the
 * family is elementwise: x, y, dy, dx have n elements of any shape (N, C, T, H, W).
 */
#ifndef VCC_ELEM_UNARY_H
#define VCC_ELEM_UNARY_H

#include "base.h"

/* vcc_relu_fwd: max(x, 0) as torch.relu / ONNX Relu. NaN propagates
 * (relu(NaN) = NaN, as PyTorch); -0.0 and negatives give +0.0. */
VCC_HD float vcc_relu_fwd(float x)
{
    return (x > 0.0f || x != x) ? x : 0.0f;
}

/* vcc_relu_bwd: gradient of ReLU given its OUTPUT y and upstream dy:
 * y > 0 ? dy : 0. (A NaN y passes dy through, as PyTorch's
 * threshold_backward, which zeroes where y <= 0.) */
VCC_HD float vcc_relu_bwd(float y, float dy)
{
    return (y <= 0.0f) ? 0.0f : dy;
}

/* The other ops of the family, one forward and one backward body each, all of one form so that the
 * loops of both targets are written once (cpu/unary.h, cuda/unary.cuh):
 *
 *   float vcc_<op>_fwd(float x, float a, float b)            y of x
 *   float vcc_<op>_bwd(float v, float dy, float a, float b)  dx of the value the gradient reads and dy
 *
 * a and b are the op's attributes (HardSigmoid alpha, beta; LeakyRelu and Elu alpha; Clip min, max;
 * Gelu a = 1 for approximate "tanh", 0 for "none"),
 * ignored by the others. v is the forward OUTPUT y where the gradient can be written with it (the
 * input's bytes may then be reused by the output), else the INPUT x: ir/ops/unary.c says which.
 * Formulas and special values (NaN, 0, infinities) follow PyTorch's kernels and derivatives.yaml;
 * the forward ones also ONNX Operators. */

/* Sigmoid: 1 / (1 + exp(-x)). Gradient from y: dy * (1 - y) * y (sigmoid_backward). */
VCC_HD float vcc_sigmoid_fwd(float x, float a, float b)
{
    (void)a; (void)b;
    return 1.0f / (1.0f + expf(-x));
}

VCC_HD float vcc_sigmoid_bwd(float y, float dy, float a, float b)
{
    (void)a; (void)b;
    return dy * (1.0f - y) * y;
}

/* HardSigmoid(alpha a, beta b): max(0, min(1, a*x + b)), NaN propagating (ONNX HardSigmoid;
 * torch.nn.functional.hardsigmoid is a = 1/6, b = 1/2). Gradient from y: dy * a where 0 < y < 1, i.e.
 * where 0 < a*x + b < 1 (hardsigmoid_backward: -3 < x < 3), else 0. */
VCC_HD float vcc_hardsigmoid_fwd(float x, float a, float b)
{
    float v = a * x + b;
    return v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
}

VCC_HD float vcc_hardsigmoid_bwd(float y, float dy, float a, float b)
{
    (void)b;
    return (y > 0.0f && y < 1.0f) ? dy * a : 0.0f;
}

/* HardSwish: x * min(max(x + 3, 0), 6) / 6 (torch hardswish; ONNX HardSwish, alpha 1/6, beta 1/2).
 * Gradient from x (hardswish_backward): 0 below -3, dy * (x / 3 + 1/2) up to 3, dy above. */
VCC_HD float vcc_hardswish_fwd(float x, float a, float b)
{
    (void)a; (void)b;
    return x * fminf(fmaxf(x + 3.0f, 0.0f), 6.0f) / 6.0f;
}

VCC_HD float vcc_hardswish_bwd(float x, float dy, float a, float b)
{
    (void)a; (void)b;
    if (x < -3.0f) return 0.0f;
    if (x <= 3.0f) return dy * (x / 3.0f + 0.5f);
    return dy;
}

/* Tanh. Gradient from y: dy * (1 - y * y) (tanh_backward). */
VCC_HD float vcc_tanh_fwd(float x, float a, float b)
{
    (void)a; (void)b;
    return tanhf(x);
}

VCC_HD float vcc_tanh_bwd(float y, float dy, float a, float b)
{
    (void)a; (void)b;
    return dy * (1.0f - y * y);
}

/* LeakyRelu(alpha a): x > 0 ? x : a * x. Gradient (leaky_relu_backward): v > 0 ? dy : dy * a, from y
 * when a >= 0 (then y > 0 exactly where x > 0), from x otherwise. */
VCC_HD float vcc_leakyrelu_fwd(float x, float a, float b)
{
    (void)b;
    return x > 0.0f ? x : x * a;
}

VCC_HD float vcc_leakyrelu_bwd(float v, float dy, float a, float b)
{
    (void)b;
    return v > 0.0f ? dy : dy * a;
}

/* Clip(min a, max b): min(max(x, a), b) (torch.clamp; ONNX Clip: every value is b when a > b); NaN
 * propagates. Gradient from x (clamp_backward): dy where a <= x <= b, else 0. */
VCC_HD float vcc_clip_fwd(float x, float a, float b)
{
    float v = x < a ? a : x;
    return v > b ? b : v;
}

VCC_HD float vcc_clip_bwd(float x, float dy, float a, float b)
{
    return (x >= a && x <= b) ? dy : 0.0f;
}

/* Softplus: log(1 + exp(x)), computed as max(x, 0) + log1p(exp(-|x|)) (no overflow; ONNX Softplus,
 * torch softplus with beta 1). Gradient from y: dy * sigmoid(x) = dy * (1 - exp(-y)), written
 * -expm1(-y), accurate for small y too (softplus_backward computes dy * z / (z + 1), z = exp(x)). */
VCC_HD float vcc_softplus_fwd(float x, float a, float b)
{
    (void)a; (void)b;
    return fmaxf(x, 0.0f) + log1pf(expf(-fabsf(x)));
}

VCC_HD float vcc_softplus_bwd(float y, float dy, float a, float b)
{
    (void)a; (void)b;
    return dy * -expm1f(-y);
}

/* Elu(alpha a): x > 0 ? x : a * (exp(x) - 1) (expm1, as torch elu). Gradient from x (elu_backward
 * with is_result false): x <= 0 ? dy * a * exp(x) : dy. */
VCC_HD float vcc_elu_fwd(float x, float a, float b)
{
    (void)b;
    return x > 0.0f ? x : a * expm1f(x);
}

VCC_HD float vcc_elu_bwd(float x, float dy, float a, float b)
{
    (void)b;
    return x <= 0.0f ? dy * a * expf(x) : dy;
}

/* Neg: -x. Its gradient is Neg of dy: no backward body. */
VCC_HD float vcc_neg_fwd(float x, float a, float b)
{
    (void)a; (void)b;
    return -x;
}

/* Exp. Gradient from y: dy * y. */
VCC_HD float vcc_exp_fwd(float x, float a, float b)
{
    (void)a; (void)b;
    return expf(x);
}

VCC_HD float vcc_exp_bwd(float y, float dy, float a, float b)
{
    (void)a; (void)b;
    return dy * y;
}

/* Log (natural). Gradient from x: dy / x. */
VCC_HD float vcc_log_fwd(float x, float a, float b)
{
    (void)a; (void)b;
    return logf(x);
}

VCC_HD float vcc_log_bwd(float x, float dy, float a, float b)
{
    (void)a; (void)b;
    return dy / x;
}

/* Sqrt. Gradient from y: dy / (2 * y). */
VCC_HD float vcc_sqrt_fwd(float x, float a, float b)
{
    (void)a; (void)b;
    return sqrtf(x);
}

VCC_HD float vcc_sqrt_bwd(float y, float dy, float a, float b)
{
    (void)a; (void)b;
    return dy / (2.0f * y);
}

/* Sin (radians). Gradient from x: dy * cos(x). */
VCC_HD float vcc_sin_fwd(float x, float a, float b)
{
    (void)a; (void)b;
    return sinf(x);
}

VCC_HD float vcc_sin_bwd(float x, float dy, float a, float b)
{
    (void)a; (void)b;
    return dy * cosf(x);
}

/* Cos (radians). Gradient from x: dy * -sin(x). */
VCC_HD float vcc_cos_fwd(float x, float a, float b)
{
    (void)a; (void)b;
    return cosf(x);
}

VCC_HD float vcc_cos_bwd(float x, float dy, float a, float b)
{
    (void)a; (void)b;
    return dy * -sinf(x);
}

/* Abs. Gradient from x: dy * sgn(x), sgn(0) = 0 (abs_backward); a NaN x gives 0. */
VCC_HD float vcc_abs_fwd(float x, float a, float b)
{
    (void)a; (void)b;
    return fabsf(x);
}

VCC_HD float vcc_abs_bwd(float x, float dy, float a, float b)
{
    (void)a; (void)b;
    return x > 0.0f ? dy : x < 0.0f ? -dy : 0.0f;
}

/* Floor: the largest integer <= x (ONNX Floor; NaN and infinities kept). Its gradient is zero (PyTorch's
 * floor backward), so it has no backward kernel. */
VCC_HD float vcc_floor_fwd(float x, float a, float b)
{
    (void)a; (void)b;
    return floorf(x);
}

/* Reciprocal: 1 / x. Gradient from y: -dy * (y * y). */
VCC_HD float vcc_reciprocal_fwd(float x, float a, float b)
{
    (void)a; (void)b;
    return 1.0f / x;
}

VCC_HD float vcc_reciprocal_bwd(float y, float dy, float a, float b)
{
    (void)a; (void)b;
    return -dy * (y * y);
}

/* Erf. Gradient from x: 2 / sqrt(pi) * exp(-x * x) * dy. */
VCC_HD float vcc_erf_fwd(float x, float a, float b)
{
    (void)a; (void)b;
    return erff(x);
}

VCC_HD float vcc_erf_bwd(float x, float dy, float a, float b)
{
    (void)a; (void)b;
    return 1.12837916709551257f * expf(-x * x) * dy;
}

/* Gelu (ONNX Gelu, opset 20; PyTorch F.gelu and its GeluKernel backward). a = 0: approximate "none",
 * y = x * 0.5 * (1 + erf(x / sqrt(2))), gradient from x: dy * (Phi(x) + x * phi(x)) with Phi the normal
 * CDF and phi = exp(-x^2 / 2) / sqrt(2 pi) its density. a = 1: approximate "tanh",
 * y = 0.5 * x * (1 + tanh(u)), u = sqrt(2 / pi) * (x + 0.044715 x^3), gradient from x:
 * dy * (0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) sqrt(2 / pi) (1 + 3 * 0.044715 x^2)). */
VCC_HD float vcc_gelu_fwd(float x, float a, float b)
{
    (void)b;
    if (a != 0.0f) {
        const float u = 0.797884560802865356f * (x + 0.044715f * x * x * x);
        return 0.5f * x * (1.0f + tanhf(u));
    }
    return 0.5f * x * (1.0f + erff(x * 0.707106781186547524f));
}

VCC_HD float vcc_gelu_bwd(float x, float dy, float a, float b)
{
    (void)b;
    if (a != 0.0f) {
        const float x2 = x * x;
        const float t = tanhf(0.797884560802865356f * (x + 0.044715f * x2 * x));
        const float du = 0.797884560802865356f * (1.0f + 3.0f * 0.044715f * x2);
        return dy * (0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du);
    }
    {
        const float cdf = 0.5f * (1.0f + erff(x * 0.707106781186547524f));
        const float pdf = 0.398942280401432678f * expf(-0.5f * x * x);
        return dy * (cdf + x * pdf);
    }
}

/* Swish(alpha a): x * sigmoid(a x) (ONNX Swish, opset 24; a = 1 is PyTorch's F.silu, and the written-out
 * x * Sigmoid(x) that passes/fuse.c makes one Swish: the same product, so the same bits). Gradient from
 * x: dy * s * (1 + a x (1 - s)) with s = sigmoid(a x) (silu_backward: dy * s * (1 + x (1 - s))). */
VCC_HD float vcc_swish_fwd(float x, float a, float b)
{
    return x * vcc_sigmoid_fwd(a * x, 0.0f, b);
}

VCC_HD float vcc_swish_bwd(float x, float dy, float a, float b)
{
    const float s = vcc_sigmoid_fwd(a * x, 0.0f, b);
    return dy * s * (1.0f + a * x * (1.0f - s));
}

#endif /* VCC_ELEM_UNARY_H */
