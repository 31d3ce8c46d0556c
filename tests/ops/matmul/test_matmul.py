"""The matmul family (ir/ops/matmul.c): MatMul in every shape form numpy.matmul gives it, against PyTorch
float64 (torch.matmul) and finite differences.

    test_matmul.py --vcc BUILD/vcc --work DIR [--only NAME] [--cuda | --cuda-one]

Named cases for tests/ops/op_check.py: the forward (vcc --forward-only) against torch.matmul in float64,
the gradients of both operands (a --loss mse trainer, where the operands are parameters) against float64
autograd and central finite differences. The forms: 2-D x 2-D; batched against a shared matrix (3-D x 2-D,
which the compiler runs as one GEMM, and 2-D x 3-D); equal batches (3-D x 3-D, 4-D x 4-D); batch dims
broadcast both ways ((B, 1, M, K) x (1, H, K, N)) and against missing leading dims; 1-D operands on
either side (promoted to a row or a column, the added dim removed); the opset 1 and 9 forms (the same
semantics as 13).
"""

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import op_check as oc  # noqa: E402


def mm(name, a, b, opset=13):
    return oc.Case(name, "MatMul", {"A": a, "B": b}, lambda A, B: torch.matmul(A, B), opset=opset)


CASES = [
    mm("matmul_2d", (3, 4), (4, 5)),
    mm("matmul_3d_2d", (2, 3, 4), (4, 5)),
    mm("matmul_2d_3d", (3, 4), (2, 4, 5)),
    mm("matmul_3d_3d", (2, 3, 4), (2, 4, 5)),
    mm("matmul_4d_4d", (2, 3, 4, 5), (2, 3, 5, 6)),
    mm("matmul_4d_2d", (2, 3, 4, 5), (5, 6)),
    mm("matmul_bcast_batch", (2, 1, 3, 4), (1, 3, 4, 5)),
    mm("matmul_bcast_batch_inner", (2, 3, 3, 4), (2, 1, 4, 5)),
    mm("matmul_bcast_rank", (3, 3, 4), (2, 1, 4, 5)),
    mm("matmul_1d_2d", (4,), (4, 5)),
    mm("matmul_2d_1d", (3, 4), (4,)),
    mm("matmul_1d_1d", (4,), (4,)),
    mm("matmul_1d_3d", (4,), (2, 4, 5)),
    mm("matmul_3d_1d", (2, 3, 4), (4,)),
    mm("matmul_opset1", (2, 3, 4), (4, 5), opset=1),
    mm("matmul_opset9", (2, 3, 4), (2, 4, 5), opset=9),
]

if __name__ == "__main__":
    sys.exit(oc.main(CASES))
