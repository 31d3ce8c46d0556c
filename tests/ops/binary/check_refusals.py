"""The binary family's refusals (ir/ops/binary.c): forms of Add, Sub, Mul, Div, Pow vcc does not compile,
each refused cleanly with the node, the op and the reason (tests/ops/refusals.py).

    check_refusals.py --vcc BUILD/vcc --work DIR [--only NAME]
"""

import os
import sys

from onnx import helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import refusals as rf  # noqa: E402

N = helper.make_node
CASES = [
    rf.Refusal("no_broadcast", [N("Add", ["A", "B"], ["Y"])], inputs={"A": (3, 4), "B": (5,)},
               expect=["'n0' (Add)", "cannot broadcast (3, 4) with (5)"]),
    rf.Refusal("no_broadcast_inner", [N("Mul", ["A", "B"], ["Y"])], inputs={"A": (2, 3, 4), "B": (2, 1)},
               expect=["'n0' (Mul)", "cannot broadcast (2, 3, 4) with (2, 1)"]),
    rf.Refusal("legacy_unequal", [N("Sub", ["A", "B"], ["Y"])], inputs={"A": (3, 4), "B": (4,)}, opset=6,
               expect=["'n0' (Sub)", "before opset 7, unequal shapes need broadcast=1"]),
    rf.Refusal("legacy_axis_past_end", [N("Div", ["A", "B"], ["Y"], broadcast=1, axis=2)],
               inputs={"A": (2, 3, 4), "B": (4, 5)}, opset=6,
               expect=["'n0' (Div)", "B's dims must fit in A's from dim axis"]),
    rf.Refusal("legacy_dim_differs", [N("Add", ["A", "B"], ["Y"], broadcast=1, axis=0)],
               inputs={"A": (2, 3), "B": (3,)}, opset=6,
               expect=["'n0' (Add)", "each of B's dims must equal A's or be 1"]),
    rf.Refusal("legacy_b_larger", [N("Pow", ["A", "B"], ["Y"], broadcast=1)], inputs={"A": (3,), "B": (2, 3)}, opset=1,
               expect=["'n0' (Pow)", "B's dims must fit in A's"]),
    rf.Refusal("broadcast_value", [N("Add", ["A", "B"], ["Y"], broadcast=2)], inputs={"A": (3, 4), "B": (4,)}, opset=6,
               expect=["'n0'", "Add attribute 'broadcast'", "must be 0 or 1"]),
    rf.Refusal("negative_axis", [N("Mul", ["A", "B"], ["Y"], broadcast=1, axis=-1)], inputs={"A": (3, 4), "B": (4,)},
               opset=6, expect=["'n0'", "Mul attribute 'axis'", "a negative axis is not defined before opset 7"]),
    rf.Refusal("broadcast_attr_opset14", [N("Add", ["A", "B"], ["Y"], broadcast=1)], inputs={"A": (3, 4), "B": (4,)},
               opset=14, expect=["'n0'", "Add attribute 'broadcast'", "exists in opsets 1-6"]),
    rf.Refusal("pow_bool_exponent", [N("Pow", ["A", "B"], ["Y"])], inputs={"A": (3,), "B": ((3,), "bool")}, opset=15,
               expect=["'n0' (Pow)", "input 1 'B' has dtype bool, expected a number type"]),
]

if __name__ == "__main__":
    sys.exit(rf.main(CASES))
