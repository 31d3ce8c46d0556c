"""The softmax family (ir/ops/softmax.c): Softmax and LogSoftmax in both ONNX forms against PyTorch float64
and finite differences.

    test_softmax.py --vcc BUILD/vcc --work DIR [--only NAME] [--cuda | --cuda-one]

Named cases for tests/ops/op_check.py: the forward (vcc --forward-only) against torch.softmax /
torch.log_softmax in float64, the gradient of the input (a --loss mse trainer) against float64 autograd
and central finite differences. Opsets 1-12 coerce the input to 2-D at axis and normalize the flattened
trailing block (the reference flattens, normalizes along dim 1 and reshapes back): opset 11 with the
default axis 1 and axis 2 on a 4-D input, opset 1 with a negative axis. Opset 13 normalizes along one dim:
the default axis -1, axis 1 of a 4-D input (a dim with others after it), axis 0. Large-magnitude inputs
check the subtraction of the row max (exp of the raw values would overflow float32).
"""

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import op_check as oc  # noqa: E402

X4 = {"X": (2, 3, 4, 5)}


def coerced(f, axis):
    """The opset 1-12 form: X as (prod(dims[:axis]), prod(dims[axis:])), f along dim 1, shape restored."""
    def ref(X):
        a = axis % X.dim()
        return f(X.reshape(int(torch.tensor(X.shape[:a]).prod()), -1), 1).reshape(X.shape)
    return ref


def large(rng, shape):
    return rng.uniform(-1, 1, size=shape) * 200.0


CASES = []
for op, f, tag in (("Softmax", torch.softmax, "softmax"), ("LogSoftmax", torch.log_softmax, "logsoftmax")):
    CASES += [
        oc.Case(tag + "_opset13_default", op, X4, lambda X, f=f: f(X, -1), opset=13, lo=-3.0, hi=3.0),
        oc.Case(tag + "_opset13_axis1", op, X4, lambda X, f=f: f(X, 1), attrs={"axis": 1}, opset=13, lo=-3.0,
                hi=3.0),
        oc.Case(tag + "_opset13_axis0", op, {"X": (3, 4)}, lambda X, f=f: f(X, 0), attrs={"axis": 0}, opset=13,
                lo=-3.0, hi=3.0),
        oc.Case(tag + "_opset11_default", op, X4, coerced(f, 1), opset=11, lo=-3.0, hi=3.0),
        oc.Case(tag + "_opset11_axis1", op, X4, coerced(f, 1), attrs={"axis": 1}, opset=11, lo=-3.0, hi=3.0),
        oc.Case(tag + "_opset11_axis2", op, X4, coerced(f, 2), attrs={"axis": 2}, opset=11, lo=-3.0, hi=3.0),
        oc.Case(tag + "_opset1_negative_axis", op, X4, coerced(f, -1), attrs={"axis": -1}, opset=1, lo=-3.0,
                hi=3.0),
        oc.Case(tag + "_large", op, {"X": (4, 6)}, lambda X, f=f: f(X, -1), opset=13, init={"X": large}),
    ]

if __name__ == "__main__":
    sys.exit(oc.main(CASES))
