"""The norm family (ir/ops/norm.c) against PyTorch float64 and central finite differences.

    test_norm.py --vcc BUILD/vcc --work DIR [--only NAME] [--cuda]

Named cases of tests/ops/op_check.py (its docstring says what each check does), one per form ONNX
defines, decided by the node's opset:
  bn_infer_*   BatchNormalization in inference form (training_mode=0 from opset 14, one output in
               opsets 7-13, is_test=1 in opset 6): F.batch_norm(training=False); gradients of X, scale
               and B with the statistics frozen (the trainer is compiled with --allow-inference-export,
               the mean and var are constants).
  bn_train_*   BatchNormalization in training form: F.batch_norm(training=True) for Y; gradients of X,
               scale, B.
  in_*         InstanceNormalization, opsets 1 (consumed_inputs), 6, 22, ranks 3-5, epsilon:
               F.instance_norm; gradients of input, scale, B. in_groupnorm_export: the node as torch
               1.13 exports GroupNorm, X reshaped to (N, G, -1), scale ones and B zeros of shape (G).
  gn_*         GroupNormalization: opset 18 (scale and bias per group, (G)), opset 21 (per channel, (C);
               stash_type FLOAT and DOUBLE), num_groups 1, between, C; ranks 2-5: F.group_norm (opset 18
               with the group's value repeated over its channels); gradients of X, scale, bias.
  ln_*         LayerNormalization (opset 17): axis default, positive, negative, 0; ranks 2-5; epsilon;
               B absent; Scale and B broadcast to X (over part of the normalized dims, or along the
               dims before axis); the optional outputs Mean and InvStdDev (compared in the forward);
               stash_type DOUBLE without them: F.layer_norm, the statistics from X.mean and X.var
               (biased); gradients of X, Scale, B.
With --cuda only the cases in CUDA_CASES run (one per kernel path: the programs' nvcc builds take
long), building their .cu programs and, where a GPU is, running them against the CPU ones; exits 77
(skipped) when nvcc is absent.

Tolerances: the forward within 1e-6 of max|ref| (op_check's default); the gradients within 2e-6: vcc
computes in float32 with statistics and sums in double, and dX = invstd*(g - mean(g) - xhat*mean(g*xhat))
subtracts terms of the size of g, so its float32 rounding is a few ulps of max|g|. No case normalizes
rows of two elements: there xhat is +-1 and dX is a difference of nearly equal terms (PyTorch's own
float32 group_norm differs from its float64 one by 2e-5 of max|dX| on such rows).
"""

import os
import shutil
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import op_check as oc  # noqa: E402

GRAD_TOL = 2e-6
ALLOW = ["--allow-inference-export"]


def stats(c, seed):
    """Running mean and var (C) for an inference-form BatchNormalization: constants, var > 0."""
    rng = np.random.default_rng(seed)
    return {"mean": rng.uniform(-0.5, 0.5, c).astype(np.float32), "var": rng.uniform(0.2, 2.0, c).astype(np.float32)}


def bn_infer(name, shape, opset, eps=1e-5, **attrs):
    c = shape[1]
    if eps != 1e-5:
        attrs["epsilon"] = eps
    return oc.Case(name, "BatchNormalization", inputs={"X": shape, "scale": (c,), "B": (c,)}, consts=stats(c, len(name)),
                   attrs=attrs, opset=opset, flags=ALLOW, grad_tol=GRAD_TOL,
                   ref=lambda X, scale, B, mean, var: F.batch_norm(X, mean.double(), var.double(), scale, B,
                                                                    training=False, eps=eps))


def bn_train(name, shape, opset, eps=1e-5, **attrs):
    c = shape[1]
    if eps != 1e-5:
        attrs["epsilon"] = eps
    return oc.Case(name, "BatchNormalization", inputs={"X": shape, "scale": (c,), "B": (c,)}, consts=stats(c, len(name)),
                   attrs=attrs, opset=opset, grad_tol=GRAD_TOL,
                   ref=lambda X, scale, B, mean, var: F.batch_norm(X, None, None, scale, B, training=True, eps=eps))


def inorm(name, shape, opset, eps=None, **attrs):
    c = shape[1]
    if eps is not None:
        attrs["epsilon"] = eps
    e = 1e-5 if eps is None else eps
    return oc.Case(name, "InstanceNormalization", inputs={"X": shape, "scale": (c,), "B": (c,)}, attrs=attrs,
                   opset=opset, grad_tol=GRAD_TOL, ref=lambda X, scale, B: F.instance_norm(X, weight=scale, bias=B, eps=e))


def lnorm(name, inputs, axis=None, eps=None, outputs=1, **attrs):
    """LayerNormalization over X.shape[axis:]; inputs X, Scale[, B] (name -> shape)."""
    if axis is not None:
        attrs["axis"] = axis
    if eps is not None:
        attrs["epsilon"] = eps
    e, a = 1e-5 if eps is None else eps, -1 if axis is None else axis

    def ref(X, Scale, B=None):
        first = a % X.dim()
        dims = tuple(range(first, X.dim()))
        nshape = X.shape[first:]
        if Scale.shape == nshape and (B is None or B.shape == nshape):
            y = F.layer_norm(X, nshape, Scale, B, eps=e)
        else:  # Scale, B broadcast to X
            y = F.layer_norm(X, nshape, eps=e) * Scale + (0 if B is None else B)
        mean = X.mean(dims, keepdim=True)
        invstd = 1 / torch.sqrt(X.var(dims, unbiased=False, keepdim=True) + e)
        return (y, mean, invstd)[:outputs]
    return oc.Case(name, "LayerNormalization", inputs=inputs, attrs=attrs, opset=17, outputs=outputs,
                   grad_tol=GRAD_TOL, ref=ref)


def gnorm(name, shape, groups, opset, eps=None, **attrs):
    c = shape[1]
    p = c if opset >= 21 else groups
    attrs["num_groups"] = groups
    if eps is not None:
        attrs["epsilon"] = eps
    e = 1e-5 if eps is None else eps

    def ref(X, scale, bias):
        if p != c:  # opsets 18-20: one value per group, the same over its channels
            scale, bias = scale.repeat_interleave(c // groups), bias.repeat_interleave(c // groups)
        return F.group_norm(X, groups, scale, bias, eps=e)
    return oc.Case(name, "GroupNormalization", inputs={"X": shape, "scale": (p,), "bias": (p,)}, attrs=attrs,
                   opset=opset, grad_tol=GRAD_TOL, ref=ref)


CASES = [
    bn_infer("bn_infer_opset15_2d", (2, 3, 4, 5), 15, training_mode=0),
    bn_infer("bn_infer_opset15_3d_eps", (2, 4, 3, 2, 3), 15, eps=1e-2, training_mode=0),
    bn_infer("bn_infer_opset9_1d", (3, 4, 6), 9),
    bn_infer("bn_infer_opset6_is_test", (2, 3, 5), 6, is_test=1),
    bn_infer("bn_infer_opset7_spatial", (2, 3, 2, 3), 7, spatial=1),
    bn_train("bn_train_opset15_2d", (3, 3, 4, 5), 15, training_mode=1),
    bn_train("bn_train_opset15_3d_eps", (2, 4, 3, 2, 3), 15, eps=1e-3, training_mode=1),
    inorm("in_opset1_consumed_inputs", (2, 3, 4, 5), 1, consumed_inputs=[0, 0, 0]),
    inorm("in_opset6_rank3", (2, 3, 7), 6),
    inorm("in_opset6_rank4_eps", (2, 3, 4, 5), 6, eps=1e-2),
    inorm("in_opset22_rank5", (2, 3, 2, 3, 4), 22),
    inorm("in_opset22_rank5_eps", (1, 4, 3, 2, 2), 22, eps=0.5),
    oc.Case("in_groupnorm_export", "InstanceNormalization", inputs={"X": (2, 2, 40)},
            consts={"scale": np.ones(2, np.float32), "B": np.zeros(2, np.float32)}, opset=13, grad=["X"],
            grad_tol=GRAD_TOL, ref=lambda X, scale, B: F.instance_norm(X, weight=scale.double(), bias=B.double())),
    gnorm("gn_opset18_rank4", (2, 4, 3, 5), 2, 18),
    gnorm("gn_opset18_rank5_eps", (2, 6, 2, 3, 2), 3, 18, eps=1e-2),
    gnorm("gn_opset18_groups_eq_c", (2, 4, 6), 4, 18),
    gnorm("gn_opset21_rank4", (2, 4, 3, 5), 2, 21),
    gnorm("gn_opset21_rank3_one_group", (3, 4, 5), 1, 21),
    gnorm("gn_opset21_rank5_groups_eq_c", (2, 3, 2, 2, 3), 3, 21, eps=1e-3),
    gnorm("gn_opset21_rank2", (3, 12), 2, 21),
    gnorm("gn_opset21_stash_float", (2, 6, 4), 2, 21, stash_type=1),
    gnorm("gn_opset21_stash_double", (2, 6, 4), 3, 21, stash_type=11),
    lnorm("ln_default_axis_rank4", {"X": (2, 3, 4, 5), "Scale": (5,), "B": (5,)}),
    lnorm("ln_axis1_rank3_eps", {"X": (2, 3, 5), "Scale": (3, 5), "B": (3, 5)}, axis=1, eps=1e-2),
    lnorm("ln_axis0_rank2", {"X": (3, 4), "Scale": (3, 4), "B": (3, 4)}, axis=0),
    lnorm("ln_axis_neg2_rank4", {"X": (2, 3, 4, 5), "Scale": (4, 5), "B": (4, 5)}, axis=-2),
    lnorm("ln_axis2_rank5_video", {"X": (2, 3, 2, 4, 4), "Scale": (2, 4, 4), "B": (2, 4, 4)}, axis=2),
    lnorm("ln_no_bias", {"X": (3, 4, 6), "Scale": (6,)}),
    lnorm("ln_scale_broadcast_in_rows", {"X": (2, 3, 4, 5), "Scale": (5,), "B": (4, 1)}, axis=-2),
    lnorm("ln_scale_along_batch_dims", {"X": (2, 3, 6), "Scale": (3, 6), "B": (3, 1)}, axis=-1),
    lnorm("ln_scalar_like_scale", {"X": (2, 3, 4), "Scale": (1,), "B": (1, 1)}, axis=1),
    lnorm("ln_mean_invstddev", {"X": (2, 3, 4, 5), "Scale": (4, 5), "B": (4, 5)}, axis=2, outputs=3),
    lnorm("ln_mean_invstddev_axis0", {"X": (3, 5), "Scale": (3, 5), "B": (3, 5)}, axis=0, eps=0.1, outputs=3),
    lnorm("ln_stash_float", {"X": (2, 4, 5), "Scale": (5,), "B": (5,)}, outputs=3, stash_type=1),
    lnorm("ln_stash_double", {"X": (2, 4, 5), "Scale": (5,), "B": (5,)}, stash_type=11),
]

# one case per kernel path for the CUDA builds
CUDA_CASES = ["bn_infer_opset15_2d", "in_opset22_rank5", "gn_opset18_rank4", "gn_opset21_rank4",
              "ln_scale_broadcast_in_rows", "ln_no_bias"]

if __name__ == "__main__":
    if "--cuda" in sys.argv:
        if not shutil.which("nvcc"):
            print("skip: nvcc not found")
            sys.exit(77)
        CASES = [c for c in CASES if c.name in CUDA_CASES]
    sys.exit(oc.main(CASES))
