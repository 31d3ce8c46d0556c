"""The pool family (ir/ops/pool.c, runtime/*/pool.*): MaxPool, AveragePool, GlobalMaxPool, GlobalAveragePool.

Every attribute variant ONNX defines, by opset (MaxPool 1, 8 storage_order and Indices, 10 ceil_mode and
dilations, 11, 12; AveragePool 1, 7 count_include_pad, 10 ceil_mode, 11, 19 dilations), over 1-3
spatial dims, checked with tests/ops/op_check.py: forward against PyTorch float64, gradients against
PyTorch float64 autograd and central finite differences, the CUDA programs built by nvcc.

References: torch.nn.functional.max_pool{1,2,3}d / avg_pool{1,2,3}d where PyTorch has the form. Where it
has not (asymmetric or auto_pad pads, dilated averages, pads PyTorch refuses) the reference pads the
input explicitly (-inf for a max, 0 for a sum), pools with PyTorch (max_pool with dilation; a sum as a
depthwise conv3d with a ones kernel, dilated) and divides by the same pooling of the mask of the taps
the divisor counts (the input, or with count_include_pad the input and its declared pads). The output
count follows the ONNX spec: ceil or floor of (in + pads - dilation*(kernel-1) - 1) / stride, plus one,
less the ceil_mode window that would start in the end padding.
"""

import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import op_check as oc  # noqa: E402

MAX = [None, F.max_pool1d, F.max_pool2d, F.max_pool3d]
AVG = [None, F.avg_pool1d, F.avg_pool2d, F.avg_pool3d]


def out_size(n, k, s, d, pb, pe, ceil):
    """ONNX's output count along one dim (PyTorch's rule for ceil_mode's last window)."""
    span = n + pb + pe - d * (k - 1) - 1
    o = (math.ceil(span / s) if ceil else span // s) + 1
    if ceil and (o - 1) * s >= n + pb:
        o -= 1
    return o


def same_pads(n, k, s, d, lower):
    """auto_pad SAME_UPPER / SAME_LOWER: out = ceil(n / s), the odd pad at the end (UPPER) or begin."""
    total = max(0, (math.ceil(n / s) - 1) * s + d * (k - 1) + 1 - n)
    small, big = total // 2, total - total // 2
    return (big, small) if lower else (small, big)


def pool_ref(X, kind, k, s=None, d=None, pads=None, ceil=0, cip=0, auto_pad="NOTSET"):
    """Max or average pooling of X (N, C, D...) with explicit begin/end pads, by PyTorch ops."""
    nsp = X.dim() - 2
    s, d = s or [1] * nsp, d or [1] * nsp
    pads = pads or [0] * (2 * nsp)
    pb, pe = list(pads[:nsp]), list(pads[nsp:])
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        for i in range(nsp):
            pb[i], pe[i] = same_pads(X.shape[2 + i], k[i], s[i], d[i], auto_pad == "SAME_LOWER")
    outs = [out_size(X.shape[2 + i], k[i], s[i], d[i], pb[i], pe[i], ceil) for i in range(nsp)]
    # pad so that every window of the output count fits: the declared pads, then what ceil_mode needs
    extra = [max(0, (outs[i] - 1) * s[i] + d[i] * (k[i] - 1) + 1 - (X.shape[2 + i] + pb[i] + pe[i]))
             for i in range(nsp)]
    tp = []
    for i in reversed(range(nsp)):
        tp += [pb[i], pe[i] + extra[i]]
    crop = (slice(None), slice(None)) + tuple(slice(0, o) for o in outs)
    if kind == "max":
        y = MAX[nsp](F.pad(X, tp, value=-math.inf), k, s, 0, d)
        return y[crop]
    C = X.shape[1]
    X3 = X.reshape(X.shape[:2] + (1,) * (3 - nsp) + X.shape[2:])
    k3, s3, d3 = [1] * (3 - nsp) + list(k), [1] * (3 - nsp) + list(s), [1] * (3 - nsp) + list(d)
    tp3 = tp + [0, 0] * (3 - nsp)
    ones = torch.ones((C, 1) + tuple(k3), dtype=X.dtype)
    total = F.conv3d(F.pad(X3, tp3), ones, stride=s3, dilation=d3, groups=C)
    mask = torch.ones((1, C) + X3.shape[2:], dtype=X.dtype)
    if cip:  # the declared pads count, what ceil_mode adds past them does not
        mask = F.pad(mask, [v for i in reversed(range(nsp)) for v in (pb[i], pe[i])] + [0, 0] * (3 - nsp), value=1.0)
        mask = F.pad(mask, [v for i in reversed(range(nsp)) for v in (0, extra[i])] + [0, 0] * (3 - nsp))
    else:
        mask = F.pad(mask, tp3)
    count = F.conv3d(mask, ones, stride=s3, dilation=d3, groups=C)
    y = (total / count).reshape(total.shape[:2] + total.shape[2 + 3 - nsp:])
    return y[crop]


def onnx_indices(X, k, s, pads, storage_order):
    """ONNX MaxPool's Indices from torch's return_indices (a flat index in each plane, row-major)."""
    nsp = X.dim() - 2
    _, idx = MAX[nsp](X, k, s, pads[:nsp], return_indices=True)
    N, C, dims = X.shape[0], X.shape[1], X.shape[2:]
    S = int(np.prod(dims))
    if storage_order:  # column-major spatial offset: the first spatial dim fastest
        coords, rest = [], idx
        for n in reversed(dims):
            coords.insert(0, rest % n)
            rest = rest // n
        col, mul = torch.zeros_like(idx), 1
        for c, n in zip(coords, dims):
            col, mul = col + c * mul, mul * n
        idx = col
    return idx + (torch.arange(N * C).reshape(N, C, *([1] * nsp)) * S)


def mp(name, shape, opset=17, **a):
    """A MaxPool case; a: the ONNX attributes."""
    ref = lambda X: pool_ref(X, "max", a["kernel_shape"], a.get("strides"), a.get("dilations"), a.get("pads"),
                             a.get("ceil_mode", 0), 0, a.get("auto_pad", "NOTSET"))
    return oc.Case(name, "MaxPool", inputs={"X": shape}, attrs=a, opset=opset, ref=ref)


def ap(name, shape, opset=19, **a):
    """An AveragePool case; a: the ONNX attributes."""
    ref = lambda X: pool_ref(X, "avg", a["kernel_shape"], a.get("strides"), a.get("dilations"), a.get("pads"),
                             a.get("ceil_mode", 0), a.get("count_include_pad", 0), a.get("auto_pad", "NOTSET"))
    return oc.Case(name, "AveragePool", inputs={"X": shape}, attrs=a, opset=opset, ref=ref)


def ties(rng, shape):
    """Values from a few levels: windows hold equal maxima (PyTorch routes dY to the first)."""
    return rng.integers(-2, 3, size=shape).astype(np.float32)


CASES = [
    # ---- MaxPool against torch.nn.functional.max_pool{1,2,3}d
    oc.Case("maxpool3d_s3d_stem_opset17", "MaxPool", inputs={"X": (2, 3, 4, 9, 9)}, opset=17,
            attrs={"kernel_shape": [1, 3, 3], "strides": [1, 2, 2], "pads": [0, 1, 1, 0, 1, 1], "ceil_mode": 0},
            ref=lambda X: F.max_pool3d(X, (1, 3, 3), (1, 2, 2), (0, 1, 1))),
    oc.Case("maxpool1d_opset1", "MaxPool", inputs={"X": (2, 3, 11)}, opset=1, attrs={"kernel_shape": [3]},
            ref=lambda X: F.max_pool1d(X, 3, 1)),
    oc.Case("maxpool2d_strides_pads_opset8", "MaxPool", inputs={"X": (2, 3, 7, 8)}, opset=8,
            attrs={"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
            ref=lambda X: F.max_pool2d(X, 3, 2, 1)),
    oc.Case("maxpool2d_ceil_opset10", "MaxPool", inputs={"X": (2, 3, 8, 7)}, opset=10,
            attrs={"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1},
            ref=lambda X: F.max_pool2d(X, 3, 2, 1, ceil_mode=True)),
    # ceil_mode's last window would start in the end padding: PyTorch and ONNX drop it (3 outputs, not 4)
    oc.Case("maxpool1d_ceil_drops_window_in_pad", "MaxPool", inputs={"X": (2, 2, 5)}, opset=12,
            attrs={"kernel_shape": [2], "strides": [2], "pads": [1, 1], "ceil_mode": 1},
            ref=lambda X: F.max_pool1d(X, 2, 2, 1, ceil_mode=True)),
    oc.Case("maxpool2d_dilations_opset10", "MaxPool", inputs={"X": (2, 2, 9, 8)}, opset=10,
            attrs={"kernel_shape": [3, 2], "strides": [1, 2], "pads": [1, 1, 1, 1], "dilations": [2, 3]},
            ref=lambda X: F.max_pool2d(X, (3, 2), (1, 2), 1, (2, 3))),
    oc.Case("maxpool1d_dilations_ceil_opset11", "MaxPool", inputs={"X": (2, 3, 12)}, opset=11,
            attrs={"kernel_shape": [3], "strides": [2], "pads": [1, 1], "dilations": [2], "ceil_mode": 1},
            ref=lambda X: F.max_pool1d(X, 3, 2, 1, 2, ceil_mode=True)),
    oc.Case("maxpool3d_s3d_branch", "MaxPool", inputs={"X": (2, 2, 4, 5, 5)}, opset=17,
            attrs={"kernel_shape": [3, 3, 3], "strides": [1, 1, 1], "pads": [1, 1, 1, 1, 1, 1]},
            ref=lambda X: F.max_pool3d(X, 3, 1, 1)),
    oc.Case("maxpool3d_ceil", "MaxPool", inputs={"X": (2, 2, 5, 7, 6)}, opset=17,
            attrs={"kernel_shape": [3, 3, 3], "strides": [2, 2, 2], "pads": [1, 1, 1, 1, 1, 1], "ceil_mode": 1},
            ref=lambda X: F.max_pool3d(X, 3, 2, 1, ceil_mode=True)),
    oc.Case("maxpool3d_k2s2_ceil", "MaxPool", inputs={"X": (2, 3, 3, 5, 5)}, opset=12,
            attrs={"kernel_shape": [2, 2, 2], "strides": [2, 2, 2], "ceil_mode": 1},
            ref=lambda X: F.max_pool3d(X, 2, 2, 0, ceil_mode=True)),
    # equal maxima: dY goes to the first in window order, as PyTorch (finite differences are not defined
    # at a tie, so only autograd is compared)
    oc.Case("maxpool2d_ties_first_max", "MaxPool", inputs={"X": (2, 2, 6, 6)}, init={"X": ties}, fd_points=0,
            attrs={"kernel_shape": [3, 3], "strides": [1, 1], "pads": [1, 1, 1, 1]},
            ref=lambda X: F.max_pool2d(X, 3, 1, 1)),
    # rows wide enough for the C runtime's SIMD lanes (cpu/pool.h, vcc__pool_max_lanes: 256 windows at a
    # time, the border windows one by one): equal maxima, stride 1 and stride 2 along the row
    oc.Case("maxpool3d_wide_rows_ties", "MaxPool", inputs={"X": (1, 2, 3, 3, 300)}, init={"X": ties}, fd_points=0,
            attrs={"kernel_shape": [3, 3, 3], "strides": [1, 1, 1], "pads": [1, 1, 1, 1, 1, 1]},
            ref=lambda X: F.max_pool3d(X, 3, 1, 1)),
    oc.Case("maxpool3d_wide_rows_strided_ties", "MaxPool", inputs={"X": (1, 2, 2, 3, 601)}, init={"X": ties},
            fd_points=0, attrs={"kernel_shape": [1, 3, 3], "strides": [1, 2, 2], "pads": [0, 1, 1, 0, 1, 1]},
            ref=lambda X: F.max_pool3d(X, (1, 3, 3), (1, 2, 2), (0, 1, 1))),
    # the "same" geometry (stride 1, out = in along H and W): the C runtime runs each output plane's
    # inside rows as one flat run of lanes (cpu/pool.h, vcc__pool_same_planes), 256 at a time across row
    # ends, and redoes the edge windows; equal maxima, and asymmetric padding with a kernel of 2 and 4
    oc.Case("maxpool3d_same_planes_ties", "MaxPool", inputs={"X": (2, 2, 3, 20, 30)}, init={"X": ties}, fd_points=0,
            attrs={"kernel_shape": [3, 3, 3], "strides": [1, 1, 1], "pads": [1, 1, 1, 1, 1, 1]},
            ref=lambda X: F.max_pool3d(X, 3, 1, 1)),
    mp("maxpool3d_same_asymmetric_pads", (1, 2, 4, 9, 11), kernel_shape=[2, 2, 4], strides=[1, 1, 1],
       pads=[1, 0, 1, 1, 1, 2]),
    # ---- MaxPool forms PyTorch has no function for: explicit -inf padding, then max_pool
    mp("maxpool2d_asymmetric_pads", (2, 3, 7, 6), kernel_shape=[3, 2], strides=[2, 1], pads=[0, 1, 2, 0]),
    mp("maxpool2d_asymmetric_pads_ceil", (2, 2, 5, 7), kernel_shape=[2, 3], strides=[3, 2], pads=[0, 1, 2, 1],
       ceil_mode=1),
    mp("maxpool2d_auto_pad_same_upper", (2, 2, 6, 7), kernel_shape=[3, 2], strides=[2, 2], auto_pad="SAME_UPPER"),
    mp("maxpool2d_auto_pad_same_lower", (2, 2, 6, 7), kernel_shape=[3, 2], strides=[2, 2], auto_pad="SAME_LOWER"),
    mp("maxpool3d_auto_pad_valid", (2, 2, 5, 6, 7), opset=1, kernel_shape=[2, 3, 2], strides=[2, 2, 3],
       auto_pad="VALID"),
    mp("maxpool1d_pads_past_half_kernel", (2, 2, 6), kernel_shape=[3], pads=[2, 2], strides=[2]),
    # ---- MaxPool's Indices output (opset 8+): offsets in X, spatial part row-major or column-major
    oc.Case("maxpool2d_indices_row_major", "MaxPool", inputs={"X": (2, 3, 6, 5)}, opset=8, outputs=2,
            attrs={"kernel_shape": [2, 3], "strides": [2, 1], "pads": [1, 1, 1, 1], "storage_order": 0},
            ref=lambda X: (F.max_pool2d(X, (2, 3), (2, 1), 1), onnx_indices(X, (2, 3), (2, 1), [1, 1], 0))),
    oc.Case("maxpool2d_indices_column_major", "MaxPool", inputs={"X": (2, 3, 6, 5)}, opset=12, outputs=2,
            attrs={"kernel_shape": [2, 3], "strides": [2, 1], "pads": [1, 1, 1, 1], "storage_order": 1},
            ref=lambda X: (F.max_pool2d(X, (2, 3), (2, 1), 1), onnx_indices(X, (2, 3), (2, 1), [1, 1], 1))),
    oc.Case("maxpool3d_indices_column_major", "MaxPool", inputs={"X": (1, 2, 4, 5, 3)}, opset=12, outputs=2,
            attrs={"kernel_shape": [2, 2, 2], "strides": [1, 2, 1], "storage_order": 1},
            ref=lambda X: (F.max_pool3d(X, 2, (1, 2, 1)), onnx_indices(X, (2, 2, 2), (1, 2, 1), [0, 0, 0], 1))),
    # ---- GlobalMaxPool (torch adaptive_max_pool(x, 1), which exports to it)
    oc.Case("globalmaxpool3d", "GlobalMaxPool", inputs={"X": (2, 3, 3, 4, 5)},
            ref=lambda X: F.adaptive_max_pool3d(X, 1)),
    oc.Case("globalmaxpool2d", "GlobalMaxPool", inputs={"X": (2, 3, 4, 5)}, opset=1,
            ref=lambda X: F.adaptive_max_pool2d(X, 1)),
    oc.Case("globalmaxpool1d", "GlobalMaxPool", inputs={"X": (3, 2, 7)},
            ref=lambda X: F.adaptive_max_pool1d(X, 1)),
    # ---- AveragePool against torch.nn.functional.avg_pool{1,2,3}d
    oc.Case("avgpool1d_opset1", "AveragePool", inputs={"X": (2, 3, 9)}, opset=1,
            attrs={"kernel_shape": [2], "strides": [2]}, ref=lambda X: F.avg_pool1d(X, 2, 2)),
    oc.Case("avgpool2d_pads_exclude_pad_opset7", "AveragePool", inputs={"X": (2, 3, 7, 6)}, opset=7,
            attrs={"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "count_include_pad": 0},
            ref=lambda X: F.avg_pool2d(X, 3, 2, 1, count_include_pad=False)),
    oc.Case("avgpool2d_pads_include_pad_opset7", "AveragePool", inputs={"X": (2, 3, 7, 6)}, opset=7,
            attrs={"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "count_include_pad": 1},
            ref=lambda X: F.avg_pool2d(X, 3, 2, 1, count_include_pad=True)),
    # ceil_mode windows past the end padding: the divisor counts the padding only inside the declared pads
    oc.Case("avgpool2d_ceil_include_pad_opset10", "AveragePool", inputs={"X": (2, 2, 6, 8)}, opset=10,
            attrs={"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1,
                   "count_include_pad": 1},
            ref=lambda X: F.avg_pool2d(X, 3, 2, 1, ceil_mode=True, count_include_pad=True)),
    oc.Case("avgpool2d_ceil_exclude_pad_opset11", "AveragePool", inputs={"X": (2, 2, 6, 8)}, opset=11,
            attrs={"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1},
            ref=lambda X: F.avg_pool2d(X, 3, 2, 1, ceil_mode=True, count_include_pad=False)),
    oc.Case("avgpool1d_ceil_window_starts_in_pad", "AveragePool", inputs={"X": (2, 3, 4)}, opset=19,
            attrs={"kernel_shape": [3], "strides": [3], "pads": [1, 1], "ceil_mode": 1, "count_include_pad": 1},
            ref=lambda X: F.avg_pool1d(X, 3, 3, 1, ceil_mode=True, count_include_pad=True)),
    oc.Case("avgpool3d_s3d_head", "AveragePool", inputs={"X": (2, 3, 3, 7, 8)}, opset=17,
            attrs={"kernel_shape": [2, 7, 7], "strides": [1, 1, 1], "pads": [0, 0, 0, 0, 0, 0], "ceil_mode": 0,
                   "count_include_pad": 1},
            ref=lambda X: F.avg_pool3d(X, (2, 7, 7), 1)),
    oc.Case("avgpool3d_ceil_include_pad", "AveragePool", inputs={"X": (2, 2, 5, 6, 4)}, opset=19,
            attrs={"kernel_shape": [2, 3, 3], "strides": [2, 2, 2], "pads": [1, 1, 1, 1, 1, 1], "ceil_mode": 1,
                   "count_include_pad": 1},
            ref=lambda X: F.avg_pool3d(X, (2, 3, 3), 2, 1, ceil_mode=True, count_include_pad=True)),
    # ---- AveragePool forms PyTorch has no function for: explicit pads, a sum by conv, a divisor by conv
    ap("avgpool2d_dilations_opset19", (2, 2, 9, 8), kernel_shape=[3, 2], strides=[1, 2], dilations=[2, 3],
       pads=[1, 1, 1, 1], count_include_pad=0),
    ap("avgpool2d_dilations_ceil_include_pad", (2, 2, 8, 9), kernel_shape=[3, 3], strides=[2, 3], dilations=[2, 2],
       pads=[2, 1, 1, 2], ceil_mode=1, count_include_pad=1),
    ap("avgpool3d_dilations_ceil", (1, 2, 7, 8, 6), kernel_shape=[2, 3, 2], strides=[3, 2, 2], dilations=[2, 2, 3],
       ceil_mode=1),
    ap("avgpool2d_asymmetric_pads_exclude_pad", (2, 3, 7, 6), opset=11, kernel_shape=[3, 2], strides=[2, 1],
       pads=[0, 1, 2, 0]),
    ap("avgpool2d_asymmetric_pads_include_pad_ceil", (2, 2, 5, 7), opset=11, kernel_shape=[2, 3], strides=[3, 2],
       pads=[0, 1, 2, 1], ceil_mode=1, count_include_pad=1),
    ap("avgpool2d_auto_pad_same_upper_include_pad", (2, 2, 6, 7), opset=7, kernel_shape=[3, 2], strides=[2, 2],
       auto_pad="SAME_UPPER", count_include_pad=1),
    ap("avgpool2d_auto_pad_same_lower", (2, 2, 6, 7), opset=10, kernel_shape=[3, 2], strides=[2, 2],
       auto_pad="SAME_LOWER"),
    ap("avgpool1d_auto_pad_valid", (2, 2, 10), opset=1, kernel_shape=[3], strides=[2], auto_pad="VALID"),
    # ceil_mode where the kernel is longer than the padded input (C3D's pool5 at T=1): PyTorch keeps the one
    # window, which reaches stride-1 past the padding
    oc.Case("maxpool3d_ceil_kernel_past_input", "MaxPool", inputs={"X": (1, 2, 1, 3, 3)}, opset=12,
            attrs={"kernel_shape": [2, 2, 2], "strides": [2, 2, 2], "pads": [0, 1, 1, 0, 1, 1], "ceil_mode": 1},
            ref=lambda X: F.max_pool3d(X, 2, 2, padding=(0, 1, 1), ceil_mode=True)),
    # ---- GlobalAveragePool (kept): torch adaptive_avg_pool(x, 1)
    oc.Case("globalavgpool3d", "GlobalAveragePool", inputs={"X": (2, 3, 3, 4, 5)},
            ref=lambda X: F.adaptive_avg_pool3d(X, 1)),
]

if __name__ == "__main__":
    sys.exit(oc.main(CASES))
