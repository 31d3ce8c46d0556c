"""The reduce family (ir/ops/reduce.c): ReduceSum, ReduceMean, ReduceMax, ReduceMin in each opset form.

    test_reduce.py --vcc BUILD/vcc --work DIR [--only NAME] [--cuda | --cuda-one]

Checked with tests/ops/op_check.py: the forward against PyTorch float64, the input's gradient against
float64 autograd and central finite differences. Per op:
  attr_*     axes as an attribute (ReduceSum before opset 13, the others before 18): one axis kept as 1,
             two axes dropped (keepdims=0), a negative axis (opset 11+), no axes (every axis; keepdims=0
             gives a scalar), the spatial dims of (N, C, T, H, W) (a global pool written as a reduction)
  opset1     the first form: axes attribute, keepdims default 1
  input_*    axes as an input (ReduceSum 13+, the others 18+): a constant int64 tensor, negative axes,
             no axes input (every axis), an empty one (every axis), an empty one with
             noop_with_empty_axes=1 (the identity)
ReduceMax and ReduceMin also on inputs with ties (values drawn from {0, 1, 2, 3}): the gradient is split
evenly among the elements equal to the result, as torch.amax / torch.amin (the reference); there
finite differences are not a reference (the max is not differentiable at a tie) and are skipped, except
for two-way ties, where the central difference is the even split too.
"""

import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import op_check as oc  # noqa: E402

I64 = np.int64
TORCH = {
    "ReduceSum": lambda X, dims, keep: torch.sum(X, dim=dims, keepdim=keep),
    "ReduceMean": lambda X, dims, keep: torch.mean(X, dim=dims, keepdim=keep),
    "ReduceMax": lambda X, dims, keep: torch.amax(X, dim=dims, keepdim=keep),
    "ReduceMin": lambda X, dims, keep: torch.amin(X, dim=dims, keepdim=keep),
}
INPUT_OPSET = {"ReduceSum": 13, "ReduceMean": 18, "ReduceMax": 18, "ReduceMin": 18}
# attribute forms: name, X, axes (None: absent), keepdims (None: absent, default 1)
ATTR = [
    ("attr_one_keep", (2, 3, 4), [1], 1),
    ("attr_two_drop", (2, 3, 4, 5), [0, 2], 0),
    ("attr_negative", (2, 3, 4), [-1], 1),
    ("attr_all", (2, 3, 4), None, 0),
    ("attr_all_keep", (3, 4), None, None),
    ("attr_spatial", (2, 3, 2, 3, 4), [2, 3, 4], 1),
]
# axes-input forms: name, X, axes input (None: absent), keepdims, noop_with_empty_axes (None: absent)
INPUT = [
    ("input_one", (2, 3, 4), [1], 1, None),
    ("input_negative", (2, 3, 4, 5), [-3, -1], 0, None),
    ("input_absent", (2, 3, 4), None, 0, None),
    ("input_empty", (2, 3, 4), [], 1, None),
    ("input_empty_noop", (2, 3, 4), [], 1, 1),
]


def ref(op, axes, keep, noop=False):
    def f(X, **_):
        if noop:
            return X.clone()
        dims = tuple(a % X.dim() for a in axes) if axes else tuple(range(X.dim()))
        return TORCH[op](X, dims, bool(keep))
    return f


def ties(rng, shape):
    return rng.integers(0, 4, size=shape).astype(np.float64)


CASES = []
for op in TORCH:
    short = op[len("Reduce"):].lower()
    attr_opset = 11 if op == "ReduceSum" else 17
    for name, shape, axes, keep in ATTR:
        attrs = {}
        if axes is not None:
            attrs["axes"] = axes
        if keep is not None:
            attrs["keepdims"] = keep
        CASES.append(oc.Case("%s_%s" % (short, name), op, inputs={"X": shape}, attrs=attrs,
                             ref=ref(op, axes, 1 if keep is None else keep), opset=attr_opset))
    CASES.append(oc.Case("%s_opset1" % short, op, inputs={"X": (2, 3, 4)}, attrs={"axes": [0, 2]},
                         ref=ref(op, [0, 2], 1), opset=1))
    for name, shape, axes, keep, noop in INPUT:
        attrs = {"keepdims": keep}
        if noop is not None:
            attrs["noop_with_empty_axes"] = noop
        consts = {} if axes is None else {"axes": np.array(axes, I64)}
        CASES.append(oc.Case("%s_%s" % (short, name), op, inputs={"X": shape}, attrs=attrs, consts=consts,
                             ref=ref(op, axes, keep, noop=bool(noop) and not axes), opset=INPUT_OPSET[op]))
for op in ("ReduceMax", "ReduceMin"):
    short = op[len("Reduce"):].lower()
    CASES += [
        oc.Case("%s_ties" % short, op, inputs={"X": (4, 3, 5)}, attrs={"axes": [1, 2], "keepdims": 0},
                init={"X": ties}, ref=ref(op, [1, 2], 0), fd_points=0, opset=17),
        oc.Case("%s_ties_all" % short, op, inputs={"X": (3, 4)}, attrs={"keepdims": 0},
                init={"X": ties}, ref=ref(op, None, 0), fd_points=0, opset=17),
        # each row (1, 3, 2) or (2, 0, 2): two-way ties, where central differences split evenly too
        oc.Case("%s_two_way_tie" % short, op, inputs={"X": (2, 3)}, attrs={"axes": [1], "keepdims": 1},
                init={"X": lambda rng, s: np.array([[1.0, 3.0, 3.0], [2.0, 0.0, 2.0]]) * (1 if op == "ReduceMax" else -1)},
                ref=ref(op, [1], 1), opset=17),
    ]
CASES += [
    # larger: one CUDA block per output element (>= 64 elements each), long rows on the CPU
    oc.Case("mean_spatial_large", "ReduceMean", inputs={"X": (2, 8, 4, 16, 16)}, attrs={"axes": [2, 3, 4]},
            ref=ref("ReduceMean", [2, 3, 4], 1), opset=17, grad_tol=1e-5),
    oc.Case("sum_batch_large", "ReduceSum", inputs={"X": (64, 4, 8, 8)}, attrs={"axes": [0, 2], "keepdims": 0},
            ref=ref("ReduceSum", [0, 2], 0), opset=11, grad_tol=1e-5),
    oc.Case("max_rows_large", "ReduceMax", inputs={"X": (6, 2000)}, attrs={"axes": [1]},
            ref=ref("ReduceMax", [1], 1), opset=17),
]

if __name__ == "__main__":
    sys.exit(oc.main(CASES))
