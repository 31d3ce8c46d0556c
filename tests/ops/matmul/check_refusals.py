"""The matmul family's refusals (ir/ops/matmul.c): MatMul nodes whose operands do not multiply, and Einsum
equations vcc does not lower or that do not fit their inputs, each refused cleanly with the node, the op and
the shapes or the equation (tests/ops/refusals.py).

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
    # Einsum: what vcc does not lower (a diagonal, three inputs) and equations that do not fit the inputs
    rf.Refusal("einsum_diagonal", [N("Einsum", ["A"], ["Y"], equation="...ii->...i")], inputs={"A": (3, 5, 5)},
               expect=["Einsum attribute 'equation'", "'n0'", "'...ii->...i'", "appears twice in input 0 (a diagonal)"]),
    rf.Refusal("einsum_three_inputs", [N("Einsum", ["A", "B", "C"], ["Y"], equation="ij,jk,kl->il")],
               inputs={"A": (2, 3), "B": (3, 4), "C": (4, 5)},
               expect=["Einsum attribute 'equation'", "'n0'", "'ij,jk,kl->il'", "3 inputs; vcc lowers Einsum of one or two"]),
    rf.Refusal("einsum_terms_differ_from_inputs", [N("Einsum", ["A", "B"], ["Y"], equation="ij->ji")],
               inputs={"A": (2, 3), "B": (3, 4)},
               expect=["Einsum attribute 'equation'", "'n0'", "'ij->ji' has 1 input terms for 2 inputs"]),
    rf.Refusal("einsum_output_subscript_unknown", [N("Einsum", ["A"], ["Y"], equation="ij->ik")], inputs={"A": (2, 3)},
               expect=["Einsum attribute 'equation'", "'n0'", "output subscript 'k' is in no input"]),
    rf.Refusal("einsum_rank_differs", [N("Einsum", ["A", "B"], ["Y"], equation="bij,bjk->bik")],
               inputs={"A": (3, 4), "B": (2, 4, 5)},
               expect=["'n0' (Einsum)", "equation 'bij,bjk->bik'", "input 0 (3, 4) does not have the 3 dims its term names"]),
    rf.Refusal("einsum_sizes_differ", [N("Einsum", ["A", "B"], ["Y"], equation="ij,jk->ik")],
               inputs={"A": (3, 4), "B": (5, 2)},
               expect=["'n0' (Einsum)", "equation 'ij,jk->ik'", "subscript 'j' is 4 long in one input and 5 in input 1"]),
    rf.Refusal("einsum_before_opset12", [N("Einsum", ["A"], ["Y"], equation="ij->ji")], inputs={"A": (2, 3)},
               opset=11, expect=["Einsum attribute 'equation'", "'n0'", "exists from opset 12"]),
]

if __name__ == "__main__":
    sys.exit(rf.main(CASES))
