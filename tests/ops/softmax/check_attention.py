"""Softmax, LogSoftmax, MatMul and Gelu together in the blocks of a transformer, trained (tests/ops/op_check.py
checks each graph like one op: forward against PyTorch float64, every parameter's gradient against float64
autograd and central finite differences; the graphs come from tests/ops/layout/test_layout_graphs.py's
GraphCase):

  attention_mlp        one-head self-attention x Wq (x Wk)^T -> Softmax -> (.) x Wv, then a Gelu MLP
  attention_heads      two heads: Reshape and Transpose to (B, H, T, d), scores (B, H, T, T) by a batched
                       MatMul, Softmax, the heads merged back and projected, LogSoftmax over the features
  each as written (--no-fuse-attention) and with its attention fused (NAME_fused: passes/fuse.c)
  gelu_erf_form        GELU as torch exports it below opset 20 (Div, Erf, Add, Mul, Mul), which passes/fuse.c
                       makes one Gelu

    check_attention.py --vcc BUILD/vcc --work DIR [--only NAME]
"""

import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from onnx import helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "layout"))
import op_check as oc  # noqa: E402
from test_layout_graphs import GraphCase  # noqa: E402

N = helper.make_node
B, T, C, H = 2, 4, 6, 2


def mlp_nodes():
    return [N("MatMul", ["X", "Wq"], ["q"]), N("MatMul", ["X", "Wk"], ["k"]), N("MatMul", ["X", "Wv"], ["v"]),
            N("Transpose", ["k"], ["kt"], perm=[0, 2, 1]), N("MatMul", ["q", "kt"], ["s"]),
            N("Softmax", ["s"], ["a"], axis=-1), N("MatMul", ["a", "v"], ["o"]),
            N("MatMul", ["o", "W1"], ["h"]), N("Gelu", ["h"], ["g"]), N("MatMul", ["g", "W2"], ["y0"])]


def mlp_ref(X, Wq, Wk, Wv, W1, W2):
    a = torch.softmax((X @ Wq) @ (X @ Wk).transpose(1, 2), -1)
    return F.gelu((a @ (X @ Wv)) @ W1) @ W2


def gelu_erf_nodes():
    """torch's export of nn.GELU below opset 20: x * (erf(x / sqrt(2)) + 1) * 0.5 (passes/fuse.c makes it one
    Gelu), after a projection."""
    return [N("MatMul", ["X", "W1"], ["h"]), N("Div", ["h", "sqrt2"], ["a"]), N("Erf", ["a"], ["e"]),
            N("Add", ["e", "one"], ["p"]), N("Mul", ["h", "p"], ["m"]), N("Mul", ["m", "half"], ["y0"])]


def gelu_erf_ref(X, W1, sqrt2, one, half):
    return F.gelu(X @ W1)


def heads_nodes():
    return [N("MatMul", ["X", "Wq"], ["q"]), N("MatMul", ["X", "Wk"], ["k"]), N("MatMul", ["X", "Wv"], ["v"]),
            N("Reshape", ["q", "heads"], ["q4"]), N("Reshape", ["k", "heads"], ["k4"]),
            N("Reshape", ["v", "heads"], ["v4"]),
            N("Transpose", ["q4"], ["qh"], perm=[0, 2, 1, 3]), N("Transpose", ["k4"], ["kh"], perm=[0, 2, 3, 1]),
            N("Transpose", ["v4"], ["vh"], perm=[0, 2, 1, 3]),
            N("MatMul", ["qh", "kh"], ["s"]), N("Softmax", ["s"], ["a"], axis=3), N("MatMul", ["a", "vh"], ["o"]),
            N("Transpose", ["o"], ["ot"], perm=[0, 2, 1, 3]), N("Reshape", ["ot", "merged"], ["om"]),
            N("MatMul", ["om", "Wo"], ["p"]), N("LogSoftmax", ["p"], ["y0"], axis=-1)]


def heads_ref(X, Wq, Wk, Wv, Wo, heads, merged):
    def split(t):
        return t.reshape(B, T, H, C // H).transpose(1, 2)
    a = torch.softmax(split(X @ Wq) @ split(X @ Wk).transpose(2, 3), -1)
    return torch.log_softmax((a @ split(X @ Wv)).transpose(1, 2).reshape(B, T, C) @ Wo, -1)


W = (C, C)
HEADS = {"heads": np.array([B, T, H, C // H], np.int64), "merged": np.array([B, T, C], np.int64)}
# each block as the graph writes it (--no-fuse-attention: MatMul, Softmax, MatMul) and with its attention
# fused (passes/fuse.c: one FusedAttention)
SCALARS = {"sqrt2": np.array(np.sqrt(2.0), np.float32), "one": np.array(1.0, np.float32),
           "half": np.array(0.5, np.float32)}
CASES = [GraphCase("gelu_erf_form", gelu_erf_nodes, {"X": (B, T, C), "W1": (C, 8)}, gelu_erf_ref, consts=SCALARS,
                   opset=17)]
CASES += [case for fuse, flags in (("", ["--no-fuse-attention"]), ("_fused", [])) for case in (
    GraphCase("attention_mlp" + fuse, mlp_nodes,
              {"X": (B, T, C), "Wq": W, "Wk": W, "Wv": W, "W1": (C, 8), "W2": (8, C)}, mlp_ref, opset=20, flags=flags),
    GraphCase("attention_heads" + fuse, heads_nodes, {"X": (B, T, C), "Wq": W, "Wk": W, "Wv": W, "Wo": W},
              heads_ref, consts=HEADS, opset=13, flags=flags),
)]

if __name__ == "__main__":
    sys.exit(oc.main(CASES))
