"""The pad family (ir/ops/pad.c, runtime/*/pad.*): Pad of every opset form and mode.

Opsets 1 (paddings, value attributes), 2 (pads attribute), 11 and 13 (pads and constant_value inputs,
negative pads), 18 (axes input), 19 (mode wrap); modes constant, reflect, edge, wrap; checked with
tests/ops/op_check.py: forward against PyTorch float64, gradients (the sum of the contributions back into
the input) against PyTorch float64 autograd and central finite differences, the CUDA programs built by
nvcc.

Reference: torch.nn.functional.pad (constant, reflect, replicate = ONNX edge, circular = ONNX wrap);
negative pads crop first (x[a:b], as onnxruntime), then F.pad pads what is kept. F.pad's non-constant
modes pad the trailing 1-3 dims of an (N, C, ...) tensor, which the cases follow.
"""

import os
import sys

import numpy as np
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import op_check as oc  # noqa: E402

I64 = np.int64
TORCH_MODE = {"constant": "constant", "reflect": "reflect", "edge": "replicate", "wrap": "circular"}


def pad_ref(X, pads, mode="constant", value=0.0):
    """ONNX Pad by PyTorch: pads = every begin, then every end (one pair per dim of X)."""
    r = X.dim()
    X = X[tuple(slice(max(-pads[i], 0), X.shape[i] - max(-pads[r + i], 0)) for i in range(r))]
    tp = [v for i in reversed(range(r)) for v in (max(pads[i], 0), max(pads[r + i], 0))]
    if mode == "constant":
        return F.pad(X, tp, value=value)
    assert not any(tp[2 * (r - 2):]), "PyTorch pads the trailing dims of (N, C, ...) only"
    return F.pad(X, tp[:2 * (r - 2)], mode=TORCH_MODE[mode])


def full_pads(rank, axes, pads):
    """The pads of every dim from the pads of the given axes (negative ones count from the end)."""
    out, k = [0] * (2 * rank), len(axes)
    for i, a in enumerate(axes):
        a = a % rank
        out[a], out[rank + a] = pads[i], pads[k + i]
    return out


def pad_attr(name, shape, opset, pads, mode=None, value=None):
    """Pad of opsets 1-10: pads (paddings in opset 1), value and mode as attributes."""
    attrs = {"paddings" if opset < 2 else "pads": pads}
    if mode:
        attrs["mode"] = mode
    if value is not None:
        attrs["value"] = value
    return oc.Case(name, "Pad", inputs={"X": shape}, attrs=attrs, opset=opset,
                   ref=lambda X: pad_ref(X, pads, mode or "constant", value or 0.0))


def pad_input(name, shape, opset, pads, mode=None, value=None, axes=None):
    """Pad of opsets 11+: pads, constant_value and axes as constant inputs."""
    consts, order = {"pads": np.array(pads, I64)}, ["X", "pads"]
    if value is not None:
        consts["value"] = np.array(value, np.float32)
        order.append("value")
    if axes is not None:
        consts["axes"] = np.array(axes, I64)
        order += ([] if value is not None else [""]) + ["axes"]
    full = full_pads(len(shape), axes, pads) if axes is not None else pads
    return oc.Case(name, "Pad", inputs={"X": shape}, consts=consts, order=order, attrs={"mode": mode} if mode else {},
                   opset=opset, ref=lambda X, **c: pad_ref(X, full, mode or "constant", value or 0.0))


CASES = [
    pad_input("pad11_constant_value", (2, 3, 4, 5), 11, [0, 1, 2, 1, 1, 0, 1, 2], value=1.5),
    pad_attr("pad1_paddings_value", (2, 3, 4), 1, [0, 1, 2, 1, 0, 1], value=-2.0),
    pad_attr("pad2_pads_default_value", (2, 3, 4), 2, [1, 0, 1, 0, 2, 2]),
    pad_attr("pad2_reflect", (2, 3, 5, 6), 2, [0, 0, 2, 1, 0, 0, 1, 5], mode="reflect"),
    pad_attr("pad2_edge", (2, 2, 3, 4, 2), 2, [0, 0, 1, 2, 3, 0, 0, 2, 0, 1], mode="edge"),
    pad_input("pad11_no_constant_value", (2, 3, 4), 11, [1, 0, 2, 0, 3, 1]),
    pad_input("pad11_negative_crop", (2, 3, 5, 6), 11, [0, 1, -1, 2, -1, 0, 2, -3], value=0.5),
    pad_input("pad13_reflect", (2, 3, 4, 5), 13, [0, 0, 3, 4, 0, 0, 2, 1], mode="reflect"),
    pad_input("pad13_reflect_negative", (2, 3, 6, 5), 13, [0, 0, -1, 2, 0, 0, 3, -2], mode="reflect"),
    pad_input("pad13_edge_past_size", (2, 2, 3, 2), 13, [0, 0, 5, 1, 0, 0, 2, 4], mode="edge"),
    pad_input("pad13_edge_negative", (2, 2, 5, 4), 13, [0, 0, -2, 1, 0, 0, 2, -1], mode="edge"),
    pad_input("pad18_axes", (2, 3, 4, 5), 18, [1, 2, 2, 0], value=0.25, axes=[1, 3]),
    pad_input("pad18_negative_axes", (2, 3, 4, 5), 18, [2, 1, 0, 3], axes=[-1, -2]),
    pad_input("pad18_axes_reflect", (2, 3, 5, 4), 18, [2, 1, 3, 0], mode="reflect", axes=[-2, 3]),
    pad_input("pad19_wrap", (2, 3, 4, 5), 19, [0, 0, 3, 1, 0, 0, 2, 5], mode="wrap"),
    pad_input("pad19_wrap_3d_negative", (2, 2, 3, 4, 5), 19, [0, 0, 1, -1, 2, 0, 0, 3, 2, -2], mode="wrap"),
    pad_input("pad19_wrap_axes", (2, 3, 4, 5), 19, [4, 3], mode="wrap", axes=[2]),
    # s3d's head: a Pad of zeros before the AveragePool (count_include_pad exported as a Pad)
    pad_input("pad17_s3d_zero_pads", (2, 3, 2, 3, 3), 17, [0] * 10),
    pad_input("pad21_reflect_1d", (2, 3, 7), 21, [0, 0, 6, 0, 0, 2], mode="reflect"),
]

if __name__ == "__main__":
    sys.exit(oc.main(CASES))
