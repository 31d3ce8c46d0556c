"""The matmul family's refusals (ir/ops/matmul.c): MatMul nodes whose operands do not multiply, each
refused cleanly with the node, the op and the shapes (tests/ops/refusals.py).

    check_refusals.py --vcc BUILD/vcc --work DIR [--only NAME]
"""

import os
import sys

from onnx import helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import refusals as rf  # noqa: E402

N = helper.make_node

CASES = [
    rf.Refusal("inner_dims_differ", [N("MatMul", ["A", "B"], ["Y"])], inputs={"A": (3, 4), "B": (5, 6)}, opset=13,
               expect=["'n0' (MatMul)", "A (3, 4) and B (5, 6) do not multiply"]),
    rf.Refusal("batch_no_broadcast", [N("MatMul", ["A", "B"], ["Y"])], inputs={"A": (2, 3, 4), "B": (3, 4, 5)},
               opset=13, expect=["'n0' (MatMul)", "A (2, 3, 4) and B (3, 4, 5) do not multiply"]),
    rf.Refusal("vector_length_differs", [N("MatMul", ["A", "B"], ["Y"])], inputs={"A": (4,), "B": (5,)}, opset=13,
               expect=["'n0' (MatMul)", "A (4) and B (5) do not multiply"]),
]

if __name__ == "__main__":
    sys.exit(rf.main(CASES))
