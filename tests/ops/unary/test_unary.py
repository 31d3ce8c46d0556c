"""The unary family (ir/ops/unary.c): every op, attribute variant and opset form against PyTorch float64.

    test_unary.py --vcc BUILD/vcc --work DIR [--only NAME] [--cuda | --cuda-one]

Named cases for tests/ops/op_check.py: the forward (vcc --forward-only) against the PyTorch op in
float64, the gradient of the input (a --loss mse trainer) against float64 autograd and central finite
differences. Inputs are drawn where each op is defined and smooth enough for finite differences (Log,
Sqrt, Reciprocal away from 0; the kinks of Relu, LeakyRelu, Clip, Abs, HardSigmoid, HardSwish are met
with probability 0 by the uniform draws). The references are PyTorch's own functions (torch.sigmoid,
F.hardswish, torch.clamp, ...) or, where ONNX's attributes go beyond PyTorch's (HardSigmoid's alpha and
beta, LeakyRelu's negative alpha), the ONNX formula written with torch ops.
"""

import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import op_check as oc  # noqa: E402

X = {"X": (2, 3, 4, 5)}  # (N, C, H, W)
X5 = {"X": (2, 3, 2, 3, 4)}  # (N, C, T, H, W)
F32 = np.float32
FLT_MAX = float(np.finfo(np.float32).max)


def away_from_zero(rng, shape):
    """Magnitudes in [0.2, 2), either sign (Reciprocal)."""
    return rng.uniform(0.2, 2.0, shape) * rng.choice([-1.0, 1.0], shape)


CASES = [
    # Sigmoid 1 (consumed_inputs), 6, 13
    oc.Case("sigmoid", "Sigmoid", X5, lambda X: torch.sigmoid(X), lo=-6, hi=6),
    oc.Case("sigmoid_opset6", "Sigmoid", X, lambda X: torch.sigmoid(X), opset=6, lo=-6, hi=6),
    oc.Case("sigmoid_opset1_consumed", "Sigmoid", X, lambda X: torch.sigmoid(X), opset=1,
            attrs={"consumed_inputs": [0]}, lo=-6, hi=6),
    # HardSigmoid 6, 22: default alpha 0.2 beta 0.5; PyTorch's hardsigmoid is alpha 1/6, beta 1/2
    oc.Case("hardsigmoid_default", "HardSigmoid", X, lambda X: torch.clamp(0.2 * X + 0.5, 0, 1), opset=6, lo=-4,
            hi=4),
    oc.Case("hardsigmoid_alpha_beta", "HardSigmoid", X,
            lambda X: torch.clamp(float(F32(0.3)) * X + float(F32(0.4)), 0, 1),
            attrs={"alpha": 0.3, "beta": 0.4}, opset=22, lo=-4, hi=4),
    oc.Case("hardsigmoid_torch", "HardSigmoid", X5, lambda X: F.hardsigmoid(X), attrs={"alpha": 1 / 6, "beta": 0.5},
            lo=-5, hi=5, fwd_tol=2e-6),
    # HardSwish 14, 22
    oc.Case("hardswish", "HardSwish", X5, lambda X: F.hardswish(X), opset=14, lo=-5, hi=5),
    oc.Case("hardswish_opset22", "HardSwish", X, lambda X: F.hardswish(X), opset=22, lo=-5, hi=5),
    # Tanh 6, 13
    oc.Case("tanh", "Tanh", X5, lambda X: torch.tanh(X), lo=-3, hi=3),
    oc.Case("tanh_opset6", "Tanh", X, lambda X: torch.tanh(X), opset=6, lo=-3, hi=3),
    # LeakyRelu 6, 16: default alpha 0.01, a given one, a negative one (the gradient then reads X)
    oc.Case("leakyrelu_default", "LeakyRelu", X5, lambda X: F.leaky_relu(X, float(F32(0.01)))),
    oc.Case("leakyrelu_alpha", "LeakyRelu", X, lambda X: F.leaky_relu(X, float(F32(0.3))), attrs={"alpha": 0.3},
            opset=6),
    oc.Case("leakyrelu_negative_alpha", "LeakyRelu", X, lambda X: torch.where(X > 0, X, float(F32(-0.2)) * X),
            attrs={"alpha": -0.2}, opset=16),
    oc.Case("leakyrelu_opset1_consumed", "LeakyRelu", X, lambda X: F.leaky_relu(X, float(F32(0.1))), opset=1,
            attrs={"alpha": 0.1, "consumed_inputs": [0]}),
    # Clip 6 (attributes, absent ones the lowest / highest float), 11, 13 (constant inputs, absent: no bound)
    oc.Case("clip_opset6", "Clip", X, lambda X: torch.clamp(X, -0.5, 0.75), attrs={"min": -0.5, "max": 0.75},
            opset=6),
    oc.Case("clip_opset6_min_only", "Clip", X, lambda X: torch.clamp(X, -0.5, FLT_MAX), attrs={"min": -0.5},
            opset=6),
    oc.Case("clip_opset11", "Clip", X, lambda X, lo, hi: torch.clamp(X, lo, hi),
            consts={"lo": np.array(-0.25, F32), "hi": np.array(0.5, F32)}, opset=11, grad=["X"]),
    oc.Case("clip_opset13", "Clip", X5, lambda X, lo, hi: torch.clamp(X, lo, hi),
            consts={"lo": np.array(-0.5, F32), "hi": np.array(0.25, F32)}, opset=13, grad=["X"]),
    oc.Case("clip_max_only", "Clip", X, lambda X, hi: torch.clamp(X, max=hi), consts={"hi": np.array(0.3, F32)},
            order=["X", "", "hi"], grad=["X"]),
    oc.Case("clip_min_only", "Clip", X, lambda X, lo: torch.clamp(X, min=lo), consts={"lo": np.array(-0.3, F32)},
            grad=["X"]),
    oc.Case("clip_no_bounds", "Clip", X, lambda X: X),
    oc.Case("clip_min_above_max", "Clip", X, lambda X, lo, hi: torch.clamp(X, lo, hi),
            consts={"lo": np.array(0.5, F32), "hi": np.array(-0.5, F32)}, grad=["X"]),
    # Softplus 1, 22
    oc.Case("softplus", "Softplus", X5, lambda X: F.softplus(X), lo=-12, hi=12),
    oc.Case("softplus_opset22", "Softplus", X, lambda X: F.softplus(X), opset=22, lo=-30, hi=30),
    # Elu 6, 22: default alpha 1, a given one
    oc.Case("elu_default", "Elu", X5, lambda X: F.elu(X), lo=-3, hi=3),
    oc.Case("elu_alpha", "Elu", X, lambda X: F.elu(X, float(F32(0.7))), attrs={"alpha": 0.7}, opset=22, lo=-3, hi=3),
    oc.Case("elu_opset6", "Elu", X, lambda X: F.elu(X, 2.0), attrs={"alpha": 2.0}, opset=6, lo=-3, hi=3),
    # Neg, Exp, Log, Sqrt, Abs, Floor, Reciprocal 6, 13; Sin, Cos 7; Erf 9, 13
    oc.Case("neg", "Neg", X5, lambda X: -X),
    oc.Case("neg_opset6", "Neg", X, lambda X: -X, opset=6),
    oc.Case("exp", "Exp", X5, lambda X: torch.exp(X), lo=-4, hi=4),
    oc.Case("exp_opset6", "Exp", X, lambda X: torch.exp(X), opset=6, lo=-4, hi=4),
    oc.Case("log", "Log", X5, lambda X: torch.log(X), lo=0.05, hi=4),
    oc.Case("log_opset6", "Log", X, lambda X: torch.log(X), opset=6, lo=0.05, hi=4),
    oc.Case("sqrt", "Sqrt", X5, lambda X: torch.sqrt(X), lo=0.05, hi=4),
    oc.Case("sqrt_opset6", "Sqrt", X, lambda X: torch.sqrt(X), opset=6, lo=0.05, hi=4),
    oc.Case("sin", "Sin", X5, lambda X: torch.sin(X), lo=-4, hi=4),
    oc.Case("sin_opset7", "Sin", X, lambda X: torch.sin(X), opset=7, lo=-4, hi=4),
    oc.Case("cos", "Cos", X5, lambda X: torch.cos(X), lo=-4, hi=4),
    oc.Case("cos_opset7", "Cos", X, lambda X: torch.cos(X), opset=7, lo=-4, hi=4),
    oc.Case("abs", "Abs", X5, lambda X: torch.abs(X)),
    oc.Case("abs_opset6", "Abs", X, lambda X: torch.abs(X), opset=6),
    # Floor 6, 13 (its zero gradient: tests/ops/dropout/test_random.py, stochastic depth)
    oc.Case("floor", "Floor", X5, lambda X: torch.floor(X), lo=-4, hi=4, grad=False),
    oc.Case("floor_opset6", "Floor", X, lambda X: torch.floor(X), opset=6, lo=-4, hi=4, grad=False),
    oc.Case("reciprocal", "Reciprocal", X5, lambda X: torch.reciprocal(X), init={"X": away_from_zero}),
    oc.Case("reciprocal_opset6", "Reciprocal", X, lambda X: torch.reciprocal(X), opset=6,
            init={"X": away_from_zero}),
    oc.Case("erf", "Erf", X5, lambda X: torch.erf(X), lo=-2.5, hi=2.5),
    oc.Case("erf_opset9", "Erf", X, lambda X: torch.erf(X), opset=9, lo=-2.5, hi=2.5),
    # Gelu 20: approximate "none" (the default, and written out) and "tanh"
    # Swish 24: alpha 1 (PyTorch's F.silu) and another alpha (the ONNX formula written with torch ops)
    oc.Case("swish", "Swish", X5, lambda X: F.silu(X), opset=24, lo=-6.0, hi=6.0),
    oc.Case("swish_alpha", "Swish", X, lambda X: X * torch.sigmoid(1.7 * X), opset=24, attrs={"alpha": 1.7},
            lo=-4.0, hi=4.0),
    oc.Case("gelu", "Gelu", X5, lambda X: F.gelu(X), opset=20, lo=-4.0, hi=4.0),
    oc.Case("gelu_none", "Gelu", X, lambda X: F.gelu(X, approximate="none"), attrs={"approximate": "none"},
            opset=20, lo=-4.0, hi=4.0),
    oc.Case("gelu_tanh", "Gelu", X5, lambda X: F.gelu(X, approximate="tanh"), attrs={"approximate": "tanh"},
            opset=20, lo=-4.0, hi=4.0),
    # Relu 6, 13, 14 (the family's first op)
    oc.Case("relu", "Relu", X5, lambda X: torch.relu(X)),
    oc.Case("relu_opset6", "Relu", X, lambda X: torch.relu(X), opset=6),
]

if __name__ == "__main__":
    sys.exit(oc.main(CASES))
