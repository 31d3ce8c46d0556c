"""The layout family (ir/ops/layout.c): Concat, Split, Slice, Transpose, Squeeze, Unsqueeze, Expand, Tile,
Cast, Resize and Gather, one case per attribute variant and opset form, checked by tests/ops/op_check.py (forward
against PyTorch float64, gradients against PyTorch float64 autograd and central finite differences).

References: PyTorch's own ops where one computes the ONNX op (torch.cat, split, permute, squeeze,
unsqueeze, expand, repeat, index_select for Gather, F.interpolate for nearest/asymmetric/floor,
nearest-exact, bilinear, trilinear, bicubic, and antialiased bilinear and bicubic); elsewhere (Slice's index
sets, the nearest and linear Resize coordinate modes and roundings PyTorch has no mode for) the ONNX spec's
formulas written here in NumPy, applied in PyTorch (index_select, one interpolation matrix per axis:
autograd gives the adjoint); Resize's cubic, antialias and tf_crop_and_resize forms PyTorch lacks (other
coordinate modes, 1-D and 3-D cubic, ONNX's antialias, which reads the edge past it where PyTorch drops
those taps, crops and extrapolation) by ONNX's reference implementation in float64, taken as the affine
map it is (onnx_resize_ref). Those references are themselves checked first against
onnxruntime (or ONNX's reference implementation where onnxruntime lacks the form) on the case's values;
a reference that disagrees fails the run before any vcc figure counts.

Letter legend: N batch, C channels, T time, H height, W width.
"""

import math
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import helper, numpy_helper, TensorProto

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import op_check as oc  # noqa: E402

I64 = np.int64


def i64(*v):
    return np.array(v, dtype=I64)


def f32(*v):
    return np.array(v, dtype=np.float32)


# ---------------------------------------------------------------- Gather: index_select along the axis

def gather_ref(X, indices, axis=0):
    """ONNX Gather: out = X[:axis] + indices.shape + X[axis+1:], negative indices counting from the back."""
    a = axis % X.dim()
    idx = torch.as_tensor(indices).to(torch.int64)
    flat = torch.remainder(idx.reshape(-1), X.shape[a])
    return torch.index_select(X, a, flat).reshape(X.shape[:a] + idx.shape + X.shape[a + 1:])


# ---------------------------------------------------------------- Slice: the spec's index sets

def slice_ref(x, starts, ends, axes=None, steps=None):
    """ONNX Slice: per axis, negative starts/ends + dim, then clamped to [0, dim] (step > 0) or to
    [0, dim - 1] and [-1, dim - 1] (step < 0); the elements start, start + step, ... short of end."""
    starts, ends = [int(v) for v in starts], [int(v) for v in ends]
    axes = list(range(len(starts))) if axes is None else [int(a) % x.dim() for a in axes]
    steps = [1] * len(starts) if steps is None else [int(s) for s in steps]
    for s, e, a, p in zip(starts, ends, axes, steps):
        d = x.shape[a]
        s, e = s + d if s < 0 else s, e + d if e < 0 else e
        if p > 0:
            s, e = min(max(s, 0), d), min(max(e, 0), d)
            idx = list(range(s, e, p))
        else:
            s, e = min(max(s, 0), d - 1), min(max(e, -1), d - 1)
            idx = list(range(s, e, p))
        x = torch.index_select(x, a, torch.tensor(idx, dtype=torch.int64))
    return x


# ---------------------------------------------------------------- Resize: the spec's sampling

def resize_matrix(n_in, n_out, scale, ctm, mode, nearest, length):
    """(n_out, n_in) sampling matrix of one axis (ONNX Resize's formulas; length = scale * n_in)."""
    m = np.zeros((n_out, n_in))
    for o in range(n_out):
        if ctm == "half_pixel":
            x = (o + 0.5) / scale - 0.5
        elif ctm == "pytorch_half_pixel":
            x = (o + 0.5) / scale - 0.5 if n_out > 1 else 0.0
        elif ctm == "align_corners":
            x = o * (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
        elif ctm == "asymmetric":
            x = o / scale
        elif ctm == "tf_half_pixel_for_nearest":
            x = (o + 0.5) / scale
        elif ctm == "half_pixel_symmetric":
            x = n_in / 2 * (1 - n_out / length) + (o + 0.5) / scale - 0.5
        f = math.floor(x)
        r = x - f
        clamp = lambda i: min(max(i, 0), n_in - 1)  # noqa: E731
        if mode == "linear":
            m[o, clamp(f)] += 1 - r
            m[o, clamp(f + 1)] += r
        else:
            up = {"round_prefer_floor": r > 0.5, "round_prefer_ceil": r >= 0.5, "floor": False,
                  "ceil": r > 0}[nearest] and r > 0
            m[o, clamp(f + 1 if up else f)] = 1
    return m


def resize_plan(shape, scales=None, sizes=None, axes=None, policy="stretch"):
    """Per axis (scale, n_out, length) as ONNX Resize computes them from scales or sizes."""
    r = len(shape)
    axes = list(range(r)) if axes is None else [a % r for a in axes]
    scale, out = [1.0] * r, list(shape)
    if scales is not None:
        for a, s in zip(axes, scales):
            scale[a], out[a] = float(s), int(math.floor(float(s) * shape[a]))
    else:
        for a, z in zip(axes, sizes):
            scale[a], out[a] = int(z) / shape[a], int(z)
        if policy != "stretch":
            k = (min if policy == "not_larger" else max)(scale[a] for a in axes)
            for a in axes:
                scale[a], out[a] = k, int(k * shape[a] + 0.5)
    return [(scale[a], out[a], scale[a] * shape[a]) for a in range(r)]


def onnx_resize_ref(shape, attrs, given):
    """Resize by ONNX's reference implementation (onnx.reference, onnx/reference/ops/op_resize.py) in float64,
    as the affine map it is: y = M x + b along the resized axes, for every index of the others. M comes from
    the reference applied to every unit vector at once (one slice each, Resize-18's axes naming the
    resized axes: those of the case's axes, else those whose scale, size or crop is not the identity's),
    less b, the reference on zeros (tf_crop_and_resize's extrapolation value). Computed once, on the first
    call; autograd gives the adjoint M^T."""
    from onnx.reference import ReferenceEvaluator
    r = len(shape)
    attrs = dict(attrs)
    key = "scales" if "scales" in given else "sizes"
    whole = "axes" not in attrs and attrs.get("keep_aspect_ratio_policy", "stretch") == "stretch"
    axes = [a % r for a in attrs.pop("axes", range(r))]
    vals = dict(zip(axes, given[key]))
    roi = given.get("roi")
    crop = {a: (roi[i], roi[len(axes) + i]) for i, a in enumerate(axes)} if roi is not None else {}
    if whole:
        plan = resize_plan(list(shape), **{key: given[key]})
        axes = [a for a in range(r) if plan[a][0] != 1 or plan[a][1] != shape[a] or crop.get(a, (0, 1)) != (0, 1)]
    k = int(np.prod([shape[a] for a in axes]))
    consts = {key: np.array([vals[a] for a in axes], np.float32 if key == "scales" else I64)}
    if roi is not None:
        consts["roi"] = np.array([crop[a][0] for a in axes] + [crop[a][1] for a in axes], np.float32)
    names = ["X"] + [n if n in consts else "" for n in ("roi", "scales", "sizes")]
    node = helper.make_node("Resize", names, ["Y"], axes=list(range(1, len(axes) + 1)), **attrs)
    g = helper.make_graph([node], "ref", [helper.make_tensor_value_info("X", TensorProto.DOUBLE, None)],
                          [helper.make_value_info("Y", onnx.TypeProto())],
                          [numpy_helper.from_array(v, n) for n, v in consts.items()])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])
    cache = {}

    def ref(x):
        if not cache:
            run = ReferenceEvaluator(model)
            sub = [shape[a] for a in axes]
            y = run.run(None, {"X": np.eye(k).reshape([k] + sub)})[0]
            b = run.run(None, {"X": np.zeros([1] + sub)})[0].reshape(-1)
            cache["m"] = torch.tensor((y.reshape(k, -1) - b).T.copy())
            cache["b"] = torch.tensor(b)
            cache["out"] = list(y.shape[1:])
        rest = [a for a in range(r) if a not in axes]
        xm = x.permute(rest + axes).reshape(-1, k)
        y = (xm @ cache["m"].T + cache["b"]).reshape([x.shape[a] for a in rest] + cache["out"])
        inv = [0] * r
        for i, a in enumerate(rest + axes):
            inv[a] = i
        return y.permute(inv)
    return ref


def resize_ref(x, ctm="half_pixel", mode="nearest", nearest="round_prefer_floor", opset=19, **plan):
    """Resize of x by one matrix per axis (opset 10: asymmetric; nearest rounds up on a shrinking axis,
    down otherwise, as onnxruntime reads Resize-10)."""
    for a, (scale, n_out, length) in enumerate(resize_plan(list(x.shape), **plan)):
        rnd = nearest if opset >= 11 else ("ceil" if scale < 1 else "floor")
        m = torch.tensor(resize_matrix(x.shape[a], n_out, scale, ctm if opset >= 11 else "asymmetric", mode, rnd,
                                       length))
        x = torch.movedim(torch.tensordot(m, x, dims=([1], [a])), 0, a)
    return x


# ---------------------------------------------------------------- cases

X5 = (2, 3, 3, 4, 5)  # (N, C, T, H, W)

CASES = [
    # Concat: axis (default 1 in opset 1, required from 4), negative axis from 11; gradient: slices of dY
    oc.Case("concat_axis1_opset13", "Concat", inputs={"A": (2, 3, 4), "B": (2, 2, 4)}, attrs={"axis": 1},
            opset=13, ref=lambda A, B: torch.cat([A, B], 1)),
    oc.Case("concat_negative_axis_opset11", "Concat", inputs={"A": (2, 3, 1), "B": (2, 3, 4), "C": (2, 3, 2)},
            attrs={"axis": -1}, opset=11, ref=lambda A, B, C: torch.cat([A, B, C], -1)),
    oc.Case("concat_axis0_opset4", "Concat", inputs={"A": (1, 3), "B": (4, 3)}, attrs={"axis": 0}, opset=4,
            ref=lambda A, B: torch.cat([A, B], 0)),
    oc.Case("concat_default_axis_opset1", "Concat", inputs={"A": (2, 1, 3), "B": (2, 2, 3)}, opset=1,
            ref=lambda A, B: torch.cat([A, B], 1)),
    oc.Case("concat_same_input_twice", "Concat", inputs={"A": (2, 3)}, order=["A", "A"], attrs={"axis": 1},
            opset=13, ref=lambda A: torch.cat([A, A], 1)),
    oc.Case("concat_5d_channels", "Concat", inputs={"A": X5, "B": (2, 1, 3, 4, 5)}, attrs={"axis": 1},
            opset=17, ref=lambda A, B: torch.cat([A, B], 1)),
    # Split (the trainer's loss reads output 0: the other parts' gradients are zeros in dX)
    oc.Case("split_equal_opset13", "Split", inputs={"X": (2, 6, 3)}, attrs={"axis": 1}, outputs=3, opset=13,
            ref=lambda X: torch.split(X, 2, 1)),
    oc.Case("split_input_opset13", "Split", inputs={"X": (4, 6)}, consts={"split": i64(1, 5)}, attrs={"axis": 1},
            outputs=2, opset=13, ref=lambda X, split: torch.split(X, [1, 5], 1)),
    oc.Case("split_attr_negative_axis_opset11", "Split", inputs={"X": (2, 3, 7)}, attrs={"axis": -1, "split": [4, 3]},
            outputs=2, opset=11, ref=lambda X: torch.split(X, [4, 3], -1)),
    oc.Case("split_attr_opset2", "Split", inputs={"X": (5, 2)}, attrs={"split": [2, 3]}, outputs=2, opset=2,
            ref=lambda X: torch.split(X, [2, 3], 0)),
    oc.Case("split_input_opset1", "Split", inputs={"X": (3, 4)}, consts={"split": i64(3, 1)}, attrs={"axis": 1},
            outputs=2, opset=1, ref=lambda X, split: torch.split(X, [3, 1], 1)),
    oc.Case("split_num_outputs_uneven_opset18", "Split", inputs={"X": (7, 3)}, attrs={"num_outputs": 4}, outputs=4,
            opset=18, ref=lambda X: torch.split(X, 2, 0)),
    oc.Case("split_second_part_opset18", "Split", inputs={"X": (2, 8)}, consts={"split": i64(5, 3)},
            order=["X", "split"], attrs={"axis": 1}, outputs=2, opset=18,
            ref=lambda X, split: torch.split(X, [5, 3], 1)),
    # Gather with constant indices: default axis 0 (repeated indices sum in the gradient), a scalar index
    # (a class token, x[:, 0]), negative axis and indices (opset 11), int32 indices, the time axis
    oc.Case("gather_axis0_repeated_opset1", "Gather", inputs={"X": (5, 4)}, consts={"indices": i64(3, 0, 3)},
            opset=1, ref=lambda X, indices: gather_ref(X, indices)),
    oc.Case("gather_scalar_index_token_opset13", "Gather", inputs={"X": (2, 5, 3)},
            consts={"indices": np.array(0, dtype=I64)}, attrs={"axis": 1}, opset=13,
            ref=lambda X, indices: gather_ref(X, indices, 1)),
    oc.Case("gather_negative_opset11", "Gather", inputs={"X": (3, 4, 5)},
            consts={"indices": np.array([[-1, 0], [2, -4]], dtype=I64)}, attrs={"axis": -1}, opset=11,
            ref=lambda X, indices: gather_ref(X, indices, -1)),
    oc.Case("gather_int32_indices_opset13", "Gather", inputs={"X": (4, 6)},
            consts={"indices": np.array([5, 1, 1], dtype=np.int32)}, attrs={"axis": 1}, opset=13,
            ref=lambda X, indices: gather_ref(X, indices, 1)),
    oc.Case("gather_5d_time_opset13", "Gather", inputs={"X": X5}, consts={"indices": i64(0, 2, 2)},
            attrs={"axis": 2}, opset=13, ref=lambda X, indices: gather_ref(X, indices, 2)),
    # Slice: attributes (opset 1), constant inputs (10+), steps, negative steps, negative axes, clamping
    oc.Case("slice_attrs_opset1", "Slice", inputs={"X": (4, 6, 5)}, opset=1,
            attrs={"starts": [1, -4], "ends": [1000, -1], "axes": [0, 2]},
            ref=lambda X: slice_ref(X, [1, -4], [1000, -1], [0, 2])),
    oc.Case("slice_attrs_default_axes_opset9", "Slice", inputs={"X": (4, 6)}, opset=9,
            attrs={"starts": [0, 2], "ends": [3, 6]}, ref=lambda X: slice_ref(X, [0, 2], [3, 6])),
    oc.Case("slice_inputs_opset10", "Slice", inputs={"X": (5, 6, 4)}, opset=10,
            consts={"starts": i64(1, 0), "ends": i64(4, 5)},
            ref=lambda X, starts, ends: slice_ref(X, starts, ends)),
    oc.Case("slice_steps_opset13", "Slice", inputs={"X": (6, 7, 5)}, opset=13,
            consts={"starts": i64(0, 1, 4), "ends": i64(6, 7, 0), "axes": i64(0, 1, 2), "steps": i64(2, 3, -2)},
            ref=lambda X, starts, ends, axes, steps: slice_ref(X, starts, ends, axes, steps)),
    oc.Case("slice_negative_steps_opset13", "Slice", inputs={"X": (5, 6)}, opset=13,
            consts={"starts": i64(-1, 100), "ends": i64(-1000, 1), "axes": i64(0, 1), "steps": i64(-1, -2)},
            ref=lambda X, starts, ends, axes, steps: slice_ref(X, starts, ends, axes, steps)),
    oc.Case("slice_negative_axes_opset11", "Slice", inputs={"X": (3, 4, 5)}, opset=11,
            consts={"starts": i64(1, -3), "ends": i64(3, 9223372036854775807), "axes": i64(-1, -2)},
            ref=lambda X, starts, ends, axes: slice_ref(X, starts, ends, axes)),
    oc.Case("slice_clamped_bounds_opset13", "Slice", inputs={"X": (4, 5)}, opset=13,
            consts={"starts": i64(-9223372036854775808, 2), "ends": i64(9223372036854775807, 1000)},
            ref=lambda X, starts, ends: slice_ref(X, starts, ends)),
    oc.Case("slice_5d_time_opset13", "Slice", inputs={"X": X5}, opset=13,
            consts={"starts": i64(1), "ends": i64(3), "axes": i64(2)},
            ref=lambda X, starts, ends, axes: slice_ref(X, starts, ends, axes)),
    oc.Case("slice_empty_result_opset13", "Slice", inputs={"X": (4, 5)}, opset=13, grad=False,
            consts={"starts": i64(3), "ends": i64(1), "axes": i64(1)},
            ref=lambda X, starts, ends, axes: slice_ref(X, starts, ends, axes)),
    # Transpose: perm, default reversed; gradient: the inverse permutation
    oc.Case("transpose_perm_5d_opset13", "Transpose", inputs={"X": X5}, attrs={"perm": [0, 2, 1, 4, 3]}, opset=13,
            ref=lambda X: X.permute(0, 2, 1, 4, 3)),
    oc.Case("transpose_default_opset21", "Transpose", inputs={"X": (2, 3, 4)}, opset=21,
            ref=lambda X: X.permute(2, 1, 0)),
    oc.Case("transpose_cycle_opset1", "Transpose", inputs={"X": (2, 3, 4, 5)}, attrs={"perm": [3, 0, 1, 2]},
            opset=1, ref=lambda X: X.permute(3, 0, 1, 2)),
    # Squeeze / Unsqueeze: axes attribute before 13 (negative from 11), input from 13; views
    oc.Case("squeeze_attr_opset1", "Squeeze", inputs={"X": (1, 3, 1, 4)}, attrs={"axes": [0, 2]}, opset=1,
            ref=lambda X: X.reshape(3, 4)),
    oc.Case("squeeze_negative_attr_opset11", "Squeeze", inputs={"X": (3, 1, 4)}, attrs={"axes": [-2]}, opset=11,
            ref=lambda X: X.squeeze(1)),
    oc.Case("squeeze_input_opset13", "Squeeze", inputs={"X": (2, 1, 3, 1)}, consts={"axes": i64(-1)}, opset=13,
            ref=lambda X, axes: X.squeeze(3)),
    oc.Case("squeeze_all_ones_opset13", "Squeeze", inputs={"X": (1, 3, 1, 5)}, opset=13,
            ref=lambda X: X.reshape(3, 5)),
    oc.Case("squeeze_input_opset21", "Squeeze", inputs={"X": (2, 3, 1)}, consts={"axes": i64(2)}, opset=21,
            ref=lambda X, axes: X.squeeze(2)),
    oc.Case("unsqueeze_attr_opset1", "Unsqueeze", inputs={"X": (3, 4)}, attrs={"axes": [0, 3]}, opset=1,
            ref=lambda X: X.reshape(1, 3, 4, 1)),
    oc.Case("unsqueeze_negative_attr_opset11", "Unsqueeze", inputs={"X": (3, 4)}, attrs={"axes": [-1]}, opset=11,
            ref=lambda X: X.unsqueeze(-1)),
    oc.Case("unsqueeze_input_unsorted_opset13", "Unsqueeze", inputs={"X": (3, 4)}, consts={"axes": i64(3, 0)},
            opset=13, ref=lambda X, axes: X.reshape(1, 3, 4, 1)),
    oc.Case("unsqueeze_input_opset21", "Unsqueeze", inputs={"X": (2, 3)}, consts={"axes": i64(1)}, opset=21,
            ref=lambda X, axes: X.unsqueeze(1)),
    # Expand (shape input, numpy broadcasting either way); gradient: the sum over copies (sum_to_size)
    oc.Case("expand_new_dims_opset8", "Expand", inputs={"X": (3, 1)}, consts={"shape": i64(2, 1, 6)}, opset=8,
            ref=lambda X, shape: X.expand(2, 3, 6)),
    oc.Case("expand_bias_5d_opset13", "Expand", inputs={"X": (1, 3, 1, 1, 1)}, consts={"shape": i64(*X5)},
            opset=13, ref=lambda X, shape: X.expand(*X5)),
    oc.Case("expand_shorter_shape_opset13", "Expand", inputs={"X": (2, 1, 3)}, consts={"shape": i64(4, 1)},
            opset=13, ref=lambda X, shape: X.expand(2, 4, 3)),
    # Tile: repeats (6+), tiles and axis (1); gradient: the sum over the repeats
    oc.Case("tile_opset6", "Tile", inputs={"X": (2, 3)}, consts={"repeats": i64(3, 2)}, opset=6,
            ref=lambda X, repeats: X.repeat(3, 2)),
    oc.Case("tile_5d_opset13", "Tile", inputs={"X": (1, 2, 2, 3, 1)}, consts={"repeats": i64(2, 1, 3, 1, 4)},
            opset=13, ref=lambda X, repeats: X.repeat(2, 1, 3, 1, 4)),
    oc.Case("tile_tiles_axis_opset1", "Tile", inputs={"X": (2, 3)},
            consts={"tiles": np.array(3, dtype=I64), "axis": np.array(1, dtype=I64)}, opset=1,
            ref=lambda X, tiles, axis: X.repeat(1, 3)),
    # Cast to the input's own type: a view (float to float; to as a string in opset 1)
    oc.Case("cast_float_opset13", "Cast", inputs={"X": (3, 4)}, attrs={"to": TensorProto.FLOAT}, opset=13,
            ref=lambda X: X),
    oc.Case("cast_float_string_opset1", "Cast", inputs={"X": (3, 4)}, attrs={"to": "FLOAT"}, opset=1,
            ref=lambda X: X),
    # Cast between float and int64 at run time (no gradient: integers do not require one); INT32 is
    # kept as int64, its values wrapped to 32 bits
    oc.Case("cast_to_int64_opset13", "Cast", inputs={"X": (3, 4)}, attrs={"to": TensorProto.INT64}, opset=13,
            lo=-1e3, hi=1e3, grad=False, ref=lambda X: torch.trunc(X).to(torch.int64)),
    oc.Case("cast_to_int64_string_opset1", "Cast", inputs={"X": (5,)}, attrs={"to": "INT64"}, opset=1,
            lo=-9.0, hi=9.0, grad=False, ref=lambda X: torch.trunc(X).to(torch.int64)),
    oc.Case("cast_float_saturate_opset19", "Cast", inputs={"X": (2, 5)}, attrs={"to": TensorProto.FLOAT, "saturate": 1},
            opset=19, ref=lambda X: X),
]

# Resize: (name, opset, attrs, scales or sizes and a roi, reference); all constants (roi empty unless given)
RESIZE = [
    # the UNet's form: nearest, asymmetric, floor (PyTorch's F.interpolate(scale_factor=2, mode="nearest"))
    ("resize_nearest_asymmetric_floor_5d_opset13", 13, X5,
     {"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"},
     {"scales": (1, 1, 2, 2, 2)}, lambda X: F.interpolate(X, scale_factor=2, mode="nearest")),
    ("resize_nearest_half_pixel_round_prefer_ceil_opset13", 13, (2, 3, 5, 4),
     {"mode": "nearest", "nearest_mode": "round_prefer_ceil"},
     {"sizes": (2, 3, 8, 7)}, lambda X: F.interpolate(X, size=(8, 7), mode="nearest-exact")),
    ("resize_linear_half_pixel_4d_opset13", 13, (2, 3, 4, 5), {"mode": "linear"},
     {"scales": (1, 1, 2, 3)}, lambda X: F.interpolate(X, scale_factor=(2, 3), mode="bilinear", align_corners=False)),
    ("resize_linear_pytorch_half_pixel_5d_opset11", 11, X5,
     {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"},
     {"scales": (1, 1, 2, 1.5, 0.8)},
     lambda X: F.interpolate(X, scale_factor=(2, 1.5, 0.8), mode="trilinear", align_corners=False)),
    ("resize_linear_align_corners_opset13", 13, (2, 3, 4, 5),
     {"mode": "linear", "coordinate_transformation_mode": "align_corners"},
     {"sizes": (2, 3, 7, 3)}, lambda X: F.interpolate(X, size=(7, 3), mode="bilinear", align_corners=True)),
    ("resize_linear_asymmetric_opset18", 18, (2, 3, 4, 5),
     {"mode": "linear", "coordinate_transformation_mode": "asymmetric"}, {"scales": (1, 1, 1.5, 2.5)}, None),
    ("resize_linear_downsample_half_pixel_opset19", 19, (2, 2, 6, 7), {"mode": "linear"},
     {"scales": (1, 1, 0.5, 0.6)}, None),
    ("resize_nearest_round_prefer_floor_downsample_opset13", 13, (2, 2, 7, 9), {"mode": "nearest"},
     {"scales": (1, 1, 0.6, 0.5)}, None),
    ("resize_nearest_ceil_align_corners_opset13", 13, (2, 2, 4, 5),
     {"mode": "nearest", "coordinate_transformation_mode": "align_corners", "nearest_mode": "ceil"},
     {"sizes": (2, 2, 9, 8)}, None),
    ("resize_nearest_floor_half_pixel_opset11", 11, (2, 2, 4, 5),
     {"mode": "nearest", "nearest_mode": "floor"}, {"scales": (1, 1, 2.5, 1.5)}, None),
    ("resize_nearest_pytorch_half_pixel_opset13", 13, (2, 2, 4, 5),
     {"mode": "nearest", "coordinate_transformation_mode": "pytorch_half_pixel"}, {"sizes": (2, 2, 1, 9)}, None),
    ("resize_nearest_tf_half_pixel_for_nearest_opset11", 11, (2, 2, 4, 5),
     {"mode": "nearest", "coordinate_transformation_mode": "tf_half_pixel_for_nearest"},
     {"scales": (1, 1, 2, 1.5)}, None),
    ("resize_linear_half_pixel_symmetric_opset19", 19, (2, 2, 3, 4),
     {"mode": "linear", "coordinate_transformation_mode": "half_pixel_symmetric"}, {"scales": (1, 1, 2.3, 1.7)},
     None),
    ("resize_nearest_axes_opset18", 18, X5, {"mode": "nearest", "axes": [4, 2]}, {"scales": (2, 0.7)}, None),
    ("resize_linear_axes_not_larger_opset18", 18, (2, 2, 4, 6),
     {"mode": "linear", "axes": [2, 3], "keep_aspect_ratio_policy": "not_larger"}, {"sizes": (7, 9)}, None),
    ("resize_nearest_axes_not_smaller_opset19", 19, (2, 2, 4, 6),
     {"mode": "nearest", "axes": [-2, -1], "keep_aspect_ratio_policy": "not_smaller"}, {"sizes": (7, 9)}, None),
    ("resize_nearest_opset10", 10, (2, 2, 4, 6), {"mode": "nearest"}, {"scales": (1, 1, 2.5, 0.7)}, None),
    ("resize_linear_opset10", 10, (2, 2, 4, 6), {"mode": "linear"}, {"scales": (1, 1, 1.5, 0.5)}, None),
    # cubic (opset 11+): PyTorch's bicubic (a = -0.75, taps past the edge read the edge) is ONNX's cubic with
    # half_pixel and align_corners
    ("resize_cubic_half_pixel_opset11", 11, (2, 3, 4, 5), {"mode": "cubic"}, {"scales": (1, 1, 2, 2)},
     lambda X: F.interpolate(X, scale_factor=2, mode="bicubic", align_corners=False)),
    ("resize_cubic_half_pixel_down_sizes_opset13", 13, (2, 2, 7, 9), {"mode": "cubic"}, {"sizes": (2, 2, 4, 5)},
     lambda X: F.interpolate(X, size=(4, 5), mode="bicubic", align_corners=False)),
    ("resize_cubic_align_corners_opset13", 13, (2, 3, 4, 5),
     {"mode": "cubic", "coordinate_transformation_mode": "align_corners"}, {"sizes": (2, 3, 7, 3)},
     lambda X: F.interpolate(X, size=(7, 3), mode="bicubic", align_corners=True)),
    ("resize_cubic_align_corners_scales_opset19", 19, (1, 2, 3, 4),
     {"mode": "cubic", "coordinate_transformation_mode": "align_corners"}, {"scales": (1, 1, 2, 3)},
     lambda X: F.interpolate(X, size=(6, 12), mode="bicubic", align_corners=True)),
    # the other coordinate modes, cubic_coeff_a, exclude_outside, 1-D and 3-D (PyTorch has no tricubic):
    # ONNX's reference implementation
    ("resize_cubic_asymmetric_opset11", 11, (2, 2, 4, 5),
     {"mode": "cubic", "coordinate_transformation_mode": "asymmetric"}, {"scales": (1, 1, 1.5, 2.5)}, None),
    ("resize_cubic_pytorch_half_pixel_opset13", 13, (2, 2, 4, 5),
     {"mode": "cubic", "coordinate_transformation_mode": "pytorch_half_pixel"}, {"sizes": (2, 2, 7, 3)}, None),
    ("resize_cubic_half_pixel_symmetric_opset19", 19, (2, 2, 3, 4),
     {"mode": "cubic", "coordinate_transformation_mode": "half_pixel_symmetric"}, {"scales": (1, 1, 2.3, 1.7)},
     None),
    ("resize_cubic_a05_exclude_outside_opset13", 13, (2, 2, 5, 4),
     {"mode": "cubic", "cubic_coeff_a": -0.5, "exclude_outside": 1}, {"scales": (1, 1, 1.6, 0.75)}, None),
    ("resize_cubic_1d_opset18", 18, (2, 3, 6), {"mode": "cubic"}, {"sizes": (2, 3, 11)}, None),
    ("resize_cubic_3d_half_pixel_opset13", 13, (1, 2, 3, 4, 5), {"mode": "cubic"},
     {"scales": (1, 1, 2, 1.5, 0.8)}, None),
    ("resize_cubic_3d_align_corners_axes_opset18", 18, (1, 2, 3, 4, 4),
     {"mode": "cubic", "coordinate_transformation_mode": "align_corners", "axes": [2, 3, 4]},
     {"sizes": (5, 3, 6)}, None),
    ("resize_cubic_axes_not_smaller_opset18", 18, (2, 2, 5, 7),
     {"mode": "cubic", "axes": [3, 2], "keep_aspect_ratio_policy": "not_smaller"}, {"sizes": (4, 3)}, None),
    # antialias (opset 18): PyTorch's antialias=True is ONNX's with exclude_outside=1 (the filter's taps past
    # the edge dropped, the rest renormalized; PyTorch's antialiased bicubic takes a = -0.5)
    ("resize_linear_antialias_exclude_outside_opset18", 18, (2, 2, 9, 11),
     {"mode": "linear", "antialias": 1, "exclude_outside": 1}, {"sizes": (2, 2, 4, 5)},
     lambda X: F.interpolate(X, size=(4, 5), mode="bilinear", antialias=True, align_corners=False)),
    ("resize_cubic_antialias_a05_exclude_outside_opset18", 18, (2, 2, 9, 11),
     {"mode": "cubic", "antialias": 1, "exclude_outside": 1, "cubic_coeff_a": -0.5}, {"sizes": (2, 2, 4, 5)},
     lambda X: F.interpolate(X, size=(4, 5), mode="bicubic", antialias=True, align_corners=False)),
    # ONNX's own antialias (taps past the edge read the edge) differs from PyTorch's: its reference
    ("resize_linear_antialias_opset18", 18, (2, 2, 8, 9), {"mode": "linear", "antialias": 1},
     {"scales": (1, 1, 0.6, 0.45)}, None),
    ("resize_cubic_antialias_opset19", 19, (2, 2, 8, 5), {"mode": "cubic", "antialias": 1},
     {"scales": (1, 1, 0.5, 1.5)}, None),
    ("resize_cubic_antialias_to_one_opset18", 18, (2, 2, 5, 12), {"mode": "cubic", "antialias": 1},
     {"sizes": (2, 2, 7, 1)}, None),  # a window wider than the axis, reaching past both edges
    ("resize_linear_antialias_3d_axes_opset19", 19, (1, 2, 6, 5, 7),
     {"mode": "linear", "antialias": 1, "axes": [2, 3, 4], "coordinate_transformation_mode": "asymmetric"},
     {"sizes": (3, 2, 4)}, None),
    # tf_crop_and_resize (roi: the starts, then the ends, of the resized axes), extrapolation_value outside
    ("resize_tf_crop_linear_opset11", 11, (2, 2, 5, 6),
     {"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize"},
     {"roi": (0, 0, 0.2, 0.1, 1, 1, 0.8, 0.7), "sizes": (2, 2, 4, 5)}, None),
    ("resize_tf_crop_cubic_extrapolation_opset13", 13, (2, 2, 5, 6),
     {"mode": "cubic", "coordinate_transformation_mode": "tf_crop_and_resize", "extrapolation_value": 2.5},
     {"roi": (0, 0, -0.2, 0.3, 1, 1, 1.1, 1.4), "sizes": (2, 2, 6, 5)}, None),
    ("resize_tf_crop_nearest_axes_opset18", 18, (2, 2, 5, 6),
     {"mode": "nearest", "coordinate_transformation_mode": "tf_crop_and_resize", "axes": [3, 2],
      "extrapolation_value": -1.0}, {"roi": (0.15, 0.3, 1.2, 0.9), "sizes": (7, 3)}, None),
    ("resize_tf_crop_scales_opset19", 19, (2, 2, 4, 6),
     {"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize"},
     {"roi": (0, 0, 0, 0, 1, 1, 1, 1), "scales": (1, 1, 1.5, 0.5)}, None),
    ("resize_tf_crop_cubic_antialias_opset18", 18, (2, 2, 9, 8),
     {"mode": "cubic", "coordinate_transformation_mode": "tf_crop_and_resize", "antialias": 1},
     {"roi": (0, 0, 0.1, 0.2, 1, 1, 0.9, 1.0), "sizes": (2, 2, 3, 4)}, None),
]


def resize_case(name, opset, shape, attrs, given, torch_ref):
    key = "scales" if "scales" in given else "sizes"
    vals = given[key]
    const = f32(*vals) if key == "scales" else i64(*vals)
    roi = f32(*given.get("roi", ()))
    ctm = attrs.get("coordinate_transformation_mode", "half_pixel")
    plan = {key: vals, "axes": attrs.get("axes"), "policy": attrs.get("keep_aspect_ratio_policy", "stretch")}
    if torch_ref:
        ref = torch_ref
    elif attrs.get("mode") == "cubic" or attrs.get("antialias") or ctm == "tf_crop_and_resize":
        ref = onnx_resize_ref(shape, attrs, given)
    else:
        ref = (lambda X, **c: resize_ref(X, ctm, attrs.get("mode", "nearest"),
                                         attrs.get("nearest_mode", "round_prefer_floor"), opset, **plan))
    if opset == 10:
        consts, order = {"scales": const}, ["X", "scales"]
    elif key == "scales":
        consts, order = {"roi": roi, "scales": const}, ["X", "roi", "scales"]
    else:
        consts, order = {"roi": roi, "scales": f32(), "sizes": const}, ["X", "roi", "scales", "sizes"]
    return oc.Case(name, "Resize", inputs={"X": shape}, consts=consts, order=order, attrs=attrs, opset=opset,
                   ref=lambda X, **c: ref(X))


CASES += [resize_case(*r) for r in RESIZE]


# ---------------------------------------------------------------- the references against onnxruntime

def _independent(case, vals):
    """The case's node on its values by onnxruntime (or, for forms onnxruntime lacks, ONNX's reference
    implementation). Resize's cubic, antialias and tf_crop_and_resize forms go to ONNX's reference first:
    onnxruntime computes their weights in float32 (about 1e-6 off) and leaves tf_crop_and_resize's crop out
    on an axis whose length does not change."""
    import onnxruntime as ort
    from onnx.reference import ReferenceEvaluator
    outs = ["y%d" % i for i in range(case.outputs)]
    attrs = dict(case.attrs)
    if case.op == "Resize" and "axes" in attrs:  # onnxruntime 1.20 crashes on negative axes: the same axes counted
        r = len(next(iter(vals.values())).shape)  # from the front
        attrs["axes"] = [a % r for a in attrs["axes"]]
    # an empty roi is an absent one (ONNX's reference would read its first value)
    order = ["" if case.op == "Resize" and n == "roi" and case.consts[n].size == 0 else n for n in case.order]
    node = helper.make_node(case.op, order, outs, **attrs)
    inits = [numpy_helper.from_array(np.asarray(c), n) for n, c in case.consts.items()
             if n in order or case.op != "Resize"]
    g = helper.make_graph([node], case.name, [helper.make_tensor_value_info(n, TensorProto.FLOAT, v.shape)
                                              for n, v in vals.items()],
                          [helper.make_value_info(o, onnx.TypeProto()) for o in outs], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", case.opset)])
    m.ir_version = 8
    so = ort.SessionOptions()
    so.log_severity_level = 4
    if case.op == "Resize" and (attrs.get("mode") == "cubic" or attrs.get("antialias") or
                                attrs.get("coordinate_transformation_mode") == "tf_crop_and_resize"):
        return ReferenceEvaluator(m).run(None, vals)
    try:
        return ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, vals)
    except Exception:  # a form onnxruntime does not implement (tf_half_pixel_for_nearest, opset 1 Split, ...)
        pass
    try:
        return ReferenceEvaluator(m).run(None, vals)
    except Exception:  # neither has it (Concat-1's default axis): the PyTorch reference stands alone
        return None


def check_references(cases):
    """Each case's reference against onnxruntime on the case's values; returns the failures."""
    bad = []
    for c in cases:
        vals = c.values()
        want = _independent(c, vals)
        if want is None:
            print("%-40s reference: no independent runtime has this form; the reference stands alone" % c.name)
            continue
        got = oc._ref_outputs(c, vals)
        e = max(oc._err(g.detach().numpy(), w) for g, w in zip(got, want))
        if e > 1e-6:
            bad.append("%s: the reference differs from onnxruntime by %.1e" % (c.name, e))
    return bad


if __name__ == "__main__":
    sys.exit(oc.main(CASES, references=check_references))
