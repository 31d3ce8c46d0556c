"""Gradients that reach parameters through views and shared tensors (ir/ops/grad.c, passes/autodiff.c).

Each parameter must get its own gradient: one that is a view of another tensor's bytes (a reshaped
parameter) or one that another parameter receives too (Add of two parameters passes one dY to both)
is copied (GradCopy). Checked with tests/ops/op_check.py against PyTorch float64 and finite differences.
"""

import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import op_check as oc  # noqa: E402

I64 = np.int64
CASES = [
    oc.Case("add_two_params", "Add", inputs={"A": (2, 3), "B": (2, 3)}, ref=lambda A, B: A + B),
    oc.Case("add_param_twice", "Add", inputs={"A": (2, 3)}, order=["A", "A"], ref=lambda A: A + A),
    oc.Case("reshape_param", "Reshape", inputs={"X": (2, 6)}, consts={"shape": np.array([3, 4], I64)},
            ref=lambda X, shape: X.reshape(3, 4)),
    oc.Case("flatten_param", "Flatten", inputs={"X": (2, 3, 2)}, attrs={"axis": 1}, ref=lambda X: X.reshape(2, 6)),
    oc.Case("identity_param", "Identity", inputs={"X": (3, 2)}, ref=lambda X: X),
    oc.Case("gemm_param_twice", "Gemm", inputs={"A": (3, 4)}, order=["A", "A"], attrs={"transB": 1},
            ref=lambda A: A @ A.T),
    oc.Case("relu_param", "Relu", inputs={"X": (4, 5)}, ref=lambda X: torch.relu(X)),
]

if __name__ == "__main__":
    sys.exit(oc.main(CASES))
