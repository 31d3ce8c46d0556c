"""The binary family (ir/ops/binary.c): Add, Sub, Mul, Div, Pow with broadcasting, in each opset form.

    test_binary.py --vcc BUILD/vcc --work DIR [--only NAME] [--cuda | --cuda-one]

Checked with tests/ops/op_check.py: the forward against PyTorch float64, every float input's gradient
against float64 autograd and central finite differences (the gradient of a broadcast operand is summed
back to its shape: ReduceToShape, ir/ops/reduce.c). Per op, the shape forms:
  same       equal shapes (3, 4, 5)
  trail      B (5,) against A (3, 4, 5): numpy's right alignment
  chan       B (3, 1, 1) against A (2, 3, 4, 5): GroupNorm's exported affine operands
  se         B (2, 3, 1, 1, 1) against A (2, 3, 2, 3, 3): squeeze-excite's x * s
  multi      A (2, 1, 4) with B (3, 1): both broadcast, Y (2, 3, 4)
  scalar     B () against A (3, 4)
  small_a    A (4,) against B (2, 3, 4): the first operand broadcast
and the opset forms: opset 7 and 13 (multidirectional, as 14), and before opset 7 the unidirectional
form (Pow: opset 1; Add, Sub, Mul, Div: opset 6, and Add of opset 1 with consumed_inputs):
  legacy_axis   broadcast=1 axis=1, B (3, 4) against A (2, 3, 4, 5)
  legacy_tail   broadcast=1 without axis, B (4, 5): A's trailing dims
  legacy_ones   broadcast=1 axis=0, B (2, 1) against A (2, 3): size-1 dims of B broadcast too
  legacy_same   no broadcast attribute: equal shapes
Div divides by values in [0.5, 1.5]; Pow raises values in [0.5, 1.5] (its exponent's gradient takes
their log) to exponents in [-2, 2].
"""

import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import op_check as oc  # noqa: E402

OPS = {
    "Add": lambda A, B: A + B,
    "Sub": lambda A, B: A - B,
    "Mul": lambda A, B: A * B,
    "Div": lambda A, B: A / B,
    "Pow": lambda A, B: torch.pow(A, B),
}
FORMS = [
    ("same", (3, 4, 5), (3, 4, 5)),
    ("trail", (3, 4, 5), (5,)),
    ("chan", (2, 3, 4, 5), (3, 1, 1)),
    ("se", (2, 3, 2, 3, 3), (2, 3, 1, 1, 1)),
    ("multi", (2, 1, 4), (3, 1)),
    ("scalar", (3, 4), ()),
    ("small_a", (4,), (2, 3, 4)),
]
# legacy forms: name, A, B, attributes, reference (B placed as numpy needs it)
LEGACY = [
    ("legacy_axis", (2, 3, 4, 5), (3, 4), {"broadcast": 1, "axis": 1}, lambda B: B[:, :, None]),
    ("legacy_tail", (2, 3, 4, 5), (4, 5), {"broadcast": 1}, lambda B: B),
    ("legacy_ones", (2, 3), (2, 1), {"broadcast": 1, "axis": 0}, lambda B: B),
    ("legacy_same", (2, 3), (2, 3), {}, lambda B: B),
]


def positive(rng, shape):
    return rng.uniform(0.5, 1.5, size=shape)


def exponent(rng, shape):
    return rng.uniform(-2.0, 2.0, size=shape)


def init(op):
    return {"Div": {"B": positive}, "Pow": {"A": positive, "B": exponent}}.get(op, {})


def ref2(op, place):
    f = OPS[op]
    return lambda A, B: f(A, place(B))


CASES = []
for op in OPS:
    for form, sa, sb in FORMS:
        CASES.append(oc.Case("%s_%s" % (op.lower(), form), op, inputs={"A": sa, "B": sb}, ref=OPS[op], init=init(op),
                             opset=15 if op == "Pow" else 14))
    for opset in ((7, 12, 13) if op == "Pow" else (7, 13)):
        CASES.append(oc.Case("%s_opset%d" % (op.lower(), opset), op, inputs={"A": (2, 3, 4), "B": (3, 1)},
                             ref=OPS[op], init=init(op), opset=opset))
    for form, sa, sb, attrs, place in LEGACY:
        CASES.append(oc.Case("%s_%s" % (op.lower(), form), op, inputs={"A": sa, "B": sb}, attrs=attrs,
                             ref=ref2(op, place), init=init(op), opset=1 if op == "Pow" else 6))
CASES += [
    # opset 1: consumed_inputs (an in-place hint, ignored) beside the legacy broadcast
    oc.Case("add_opset1_consumed", "Add", inputs={"A": (2, 3, 4), "B": (4,)},
            attrs={"broadcast": 1, "consumed_inputs": [0, 0]}, ref=lambda A, B: A + B, opset=1),
    # one input twice: both gradients reach it (GradAccumulate)
    oc.Case("mul_square", "Mul", inputs={"A": (3, 4)}, order=["A", "A"], ref=lambda A: A * A),
    oc.Case("pow_self", "Pow", inputs={"A": (3, 4)}, order=["A", "A"], init={"A": positive},
            ref=lambda A: torch.pow(A, A), opset=15),
    # a base of 0 with exponents >= 0: PyTorch's exponent gradient is 0 there (not 0 * log 0 = NaN)
    oc.Case("pow_zero_base", "Pow", inputs={"A": (2, 3), "B": (2, 3)}, opset=15, ref=lambda A, B: torch.pow(A, B),
            init={"A": lambda rng, s: np.where(rng.uniform(size=s) < 0.5, 0.0, rng.uniform(0.5, 1.5, size=s)),
                  "B": lambda rng, s: rng.uniform(1.0, 2.0, size=s)}, fd_points=0),
    # an exponent of 0: the base's gradient is 0 (PyTorch pow_backward_self)
    oc.Case("pow_zero_exponent", "Pow", inputs={"A": (2, 3), "B": (2, 3)}, opset=15, ref=lambda A, B: torch.pow(A, B),
            init={"A": positive, "B": lambda rng, s: np.where(rng.uniform(size=s) < 0.5, 0.0, 2.0)}),
    # exponent 2 exactly, negative bases too: the forward squares (the exponent's gradient, log of a
    # negative base, is NaN in PyTorch as here: not compared)
    oc.Case("pow_two", "Pow", inputs={"A": (2, 3, 4), "B": ()}, opset=15, ref=lambda A, B: torch.pow(A, B),
            init={"B": lambda rng, s: np.full(s, 2.0)}, grad=["A"]),
    # larger broadcast shapes: rows of the CPU loops, the CUDA grid stride, sums over many elements
    oc.Case("mul_se_large", "Mul", inputs={"A": (2, 8, 4, 16, 16), "B": (2, 8, 1, 1, 1)},
            ref=lambda A, B: A * B, grad_tol=1e-5),
    oc.Case("add_chan_large", "Add", inputs={"A": (4, 16, 4, 8, 8), "B": (16, 1, 1, 1)},
            ref=lambda A, B: A + B, grad_tol=1e-5),
]

if __name__ == "__main__":
    sys.exit(oc.main(CASES))
