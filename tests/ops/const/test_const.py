"""The const family in the graphs that use it: shapes, index lists and constants computed by ops that vcc
evaluates while compiling (ir/ops/fold.c), read by an op that runs (Reshape, Add, ...).

Each case is an op_check Case (tests/ops/op_check.py: forward against PyTorch float64, gradients against
autograd and central finite differences through `vcc --loss mse --save-grads`, CUDA builds) whose node
reads a value that the case's `pre` nodes compute from constants and from the static shape of its
input: x.view(x.size(0), -1) and x.flatten(2) as torch exports them (Shape, Gather, Unsqueeze, Slice,
Concat), in the opset forms ONNX defines (Unsqueeze/Squeeze axes as attribute before 13 and as input from
13, Slice attributes before 10, Shape start/end from 15); torch's expand (ConstantOfShape, Equal, Where,
Expand); torch.arange (Range, Cast), expanded, tiled and sliced backwards by constant shape, repeats and
steps that become attributes before the arange folds; a fixed-timestep sinusoidal embedding (Mul, Sin, Cos, Concat of
Constants). For the trainer the float input X is a parameter, so Shape reads a parameter's shape there.
The PyTorch reference computes the same function of X directly (x.reshape, x + c): vcc's figures come
from its programs, whose constants it folded.
"""

import math
import os
import sys

import numpy as np
import torch
from onnx import helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import op_check as oc  # noqa: E402

I64 = np.int64


class ChainCase(oc.Case):
    """A Case whose node reads values (named in `order`) that the nodes `pre` compute; `pre` may read the
    node's inputs (their shapes, through Shape or Size) and Constants."""

    def __init__(self, name, op, pre, **kw):
        super().__init__(name, op, **kw)
        self.pre = pre


_case_model = oc._model


def _chain_model(case, vals, out_shapes, trainable, out_types=None):
    m = _case_model(case, vals, out_shapes, trainable, out_types=out_types)
    if isinstance(case, ChainCase):
        nodes = list(case.pre) + list(m.graph.node)
        del m.graph.node[:]
        m.graph.node.extend(nodes)
    return m


oc._model = _chain_model


def const(name, value):
    """A Constant node (a compile-time value to vcc) named name."""
    return helper.make_node("Constant", [], [name], name="c_" + name, value=numpy_helper.from_array(np.asarray(value), name))


def view_batch(opset):
    """x.view(x.size(0), -1): Shape -> Gather(0) -> Unsqueeze -> Concat([-1])."""
    unsq = (helper.make_node("Unsqueeze", ["n", "axes0"], ["n1"], name="unsq") if opset >= 13 else
            helper.make_node("Unsqueeze", ["n"], ["n1"], name="unsq", axes=[0]))
    return [helper.make_node("Shape", ["X"], ["s"], name="shape"), const("i0", np.array(0, I64)),
            helper.make_node("Gather", ["s", "i0"], ["n"], name="gather", axis=0), const("axes0", np.array([0], I64)),
            unsq, const("m1", np.array([-1], I64)), helper.make_node("Concat", ["n1", "m1"], ["shp"], name="cat", axis=0)]


def flatten_from(k, opset):
    """x.flatten(k): Shape -> Slice([0, k)) -> Concat([-1])."""
    sl = (helper.make_node("Slice", ["s", "st", "en"], ["head"], name="slice") if opset >= 10 else
          helper.make_node("Slice", ["s"], ["head"], name="slice", starts=[0], ends=[k]))
    return [helper.make_node("Shape", ["X"], ["s"], name="shape"), const("st", np.array([0], I64)),
            const("en", np.array([k], I64)), sl, const("m1", np.array([-1], I64)),
            helper.make_node("Concat", ["head", "m1"], ["shp"], name="cat", axis=0)]


def squeeze_chain(opset):
    """(N, 1, W) -> the shape without its 1: Shape -> Unsqueeze(0) -> Squeeze(0) (a round trip) -> Gather
    of dims 0 and 2 -> Reshape to (N, W)."""
    if opset >= 13:
        un = helper.make_node("Unsqueeze", ["s", "ax"], ["s2"], name="unsq")
        sq = helper.make_node("Squeeze", ["s2", "ax"], ["s3"], name="sq")
    else:
        un = helper.make_node("Unsqueeze", ["s"], ["s2"], name="unsq", axes=[0])
        sq = helper.make_node("Squeeze", ["s2"], ["s3"], name="sq", axes=[0])
    return [helper.make_node("Shape", ["X"], ["s"], name="shape"), const("ax", np.array([0], I64)), un, sq,
            const("idx", np.array([0, -1], I64)), helper.make_node("Gather", ["s3", "idx"], ["shp"], name="gather")]


def expand_ones(cols):
    """torch's c.expand(x.size(0), -1) for c (1, cols): the -1 resolved by Equal/Where against
    ConstantOfShape, then Expand; X + that."""
    return [helper.make_node("Shape", ["X"], ["s"], name="shape"), const("i0", np.array([0], I64)),
            helper.make_node("Gather", ["s", "i0"], ["n"], name="gather", axis=0),
            const("m1", np.array([-1], I64)), helper.make_node("Concat", ["n", "m1"], ["want"], name="cat", axis=0),
            const("two", np.array([2], I64)),
            helper.make_node("ConstantOfShape", ["two"], ["ones"], name="cos",
                             value=numpy_helper.from_array(np.array([1], I64), "value")),
            const("neg", np.array(-1, I64)), helper.make_node("Mul", ["ones", "neg"], ["negs"], name="mul"),
            helper.make_node("Equal", ["want", "negs"], ["is_neg"], name="eq"),
            helper.make_node("Where", ["is_neg", "ones", "want"], ["shape_e"], name="where"),
            const("c", np.full((1, cols), 2.0, np.float32)),
            helper.make_node("Expand", ["c", "shape_e"], ["C"], name="expand")]


def arange_row(opset):
    """torch.arange(x.size(1), dtype=float)[None]: Shape -> Gather(1) -> Range(0, n, 1) -> Cast -> Unsqueeze."""
    unsq = (helper.make_node("Unsqueeze", ["r", "ax"], ["R"], name="unsq") if opset >= 13 else
            helper.make_node("Unsqueeze", ["r"], ["R"], name="unsq", axes=[0]))
    return [helper.make_node("Shape", ["X"], ["s"], name="shape"), const("i1", np.array(1, I64)),
            helper.make_node("Gather", ["s", "i1"], ["n"], name="gather"), const("z", np.array(0, I64)),
            const("one", np.array(1, I64)), helper.make_node("Range", ["z", "n", "one"], ["ri"], name="range"),
            helper.make_node("Cast", ["ri"], ["r"], name="cast", to=1), const("ax", np.array([0], I64)), unsq]


def arange_expand_tile_slice():
    """Expand, Tile and a reversed Slice of torch.arange(x.size(1))[None], their shape, repeats and steps
    Constants: the canonical form makes those attributes before the Range folds (it reads Shape), so they
    fold from their attributes: E = float(expand(a, (3, n))) + float(tile(a, (3, 1))[2::-1]) = 2 arange."""
    return [helper.make_node("Shape", ["X"], ["s"], name="shape"), const("i1", np.array(1, I64)),
            helper.make_node("Gather", ["s", "i1"], ["n"], name="gather"), const("z", np.array(0, I64)),
            const("one", np.array(1, I64)), helper.make_node("Range", ["z", "n", "one"], ["r"], name="range"),
            const("row", np.array([1, -1], I64)), helper.make_node("Reshape", ["r", "row"], ["a"], name="reshape"),
            const("full", np.array([3, 4], I64)), helper.make_node("Expand", ["a", "full"], ["e"], name="expand"),
            const("rep", np.array([3, 1], I64)), helper.make_node("Tile", ["a", "rep"], ["t"], name="tile"),
            const("st", np.array([2], I64)), const("en", np.array([-7], I64)), const("ax0", np.array([0], I64)),
            const("back", np.array([-1], I64)),
            helper.make_node("Slice", ["t", "st", "en", "ax0", "back"], ["ts"], name="slice"),
            helper.make_node("Cast", ["e"], ["ef"], name="cast_e", to=1),
            helper.make_node("Cast", ["ts"], ["tf"], name="cast_t", to=1),
            helper.make_node("Add", ["ef", "tf"], ["E"], name="sum")]


T_STEPS = np.array([50.0, 950.0], np.float32)
FREQS = np.exp(-math.log(10000.0) * np.arange(4, dtype=np.float32) / 4).astype(np.float32)


def timestep_embedding():
    """A diffusion UNet's embedding of fixed timesteps t (N,) with frequencies f (D/2,), both Constants:
    cat(sin(t[:, None] * f[None]), cos(...)), (N, D)."""
    return [const("t", T_STEPS), const("f", FREQS), const("a1", np.array([1], I64)), const("a0", np.array([0], I64)),
            helper.make_node("Unsqueeze", ["t", "a1"], ["tc"], name="t_col"),
            helper.make_node("Unsqueeze", ["f", "a0"], ["fr"], name="f_row"),
            helper.make_node("Mul", ["tc", "fr"], ["arg"], name="mul"),
            helper.make_node("Sin", ["arg"], ["sin"], name="sin"), helper.make_node("Cos", ["arg"], ["cos"], name="cos"),
            helper.make_node("Concat", ["sin", "cos"], ["E"], name="cat", axis=1)]


def embedding_ref():
    """The embedding in float64 from the float32 product (ONNX's Mul of float tensors is float32)."""
    arg = torch.tensor((T_STEPS[:, None] * FREQS[None, :]).astype(np.float64))
    return torch.cat([torch.sin(arg), torch.cos(arg)], dim=1)


def size_halves():
    """x.view(-1, x.numel() // 2): Size -> Div -> Unsqueeze -> Concat([-1, numel / 2])."""
    return [helper.make_node("Size", ["X"], ["n"], name="size"), const("two", np.array(2, I64)),
            helper.make_node("Div", ["n", "two"], ["h"], name="div"), const("ax", np.array([0], I64)),
            helper.make_node("Unsqueeze", ["h", "ax"], ["h1"], name="unsq"), const("m1", np.array([-1], I64)),
            helper.make_node("Concat", ["m1", "h1"], ["shp"], name="cat", axis=0)]


def shape_tail():
    """Shape(start=1) (opset 15): x.view(x.shape[1:]) of a (1, ...) tensor."""
    return [helper.make_node("Shape", ["X"], ["shp"], name="shape", start=1)]


CASES = [
    ChainCase("view_batch_opset13", "Reshape", view_batch(13), inputs={"X": (2, 3, 4)}, order=["X", "shp"],
              opset=13, ref=lambda X: X.reshape(2, -1)),
    ChainCase("view_batch_opset11", "Reshape", view_batch(11), inputs={"X": (3, 2, 2, 2)}, order=["X", "shp"],
              opset=11, ref=lambda X: X.reshape(3, -1)),
    ChainCase("flatten2_slice_inputs", "Reshape", flatten_from(2, 13), inputs={"X": (2, 3, 4, 5)},
              order=["X", "shp"], opset=13, ref=lambda X: X.reshape(2, 3, -1)),
    ChainCase("flatten1_slice_attrs_opset9", "Reshape", flatten_from(1, 9), inputs={"X": (2, 3, 2)},
              order=["X", "shp"], opset=9, ref=lambda X: X.reshape(2, -1)),
    ChainCase("squeeze_round_trip_opset13", "Reshape", squeeze_chain(13), inputs={"X": (3, 1, 4)},
              order=["X", "shp"], opset=13, ref=lambda X: X.reshape(3, 4)),
    ChainCase("squeeze_round_trip_opset11", "Reshape", squeeze_chain(11), inputs={"X": (2, 1, 5)},
              order=["X", "shp"], opset=11, ref=lambda X: X.reshape(2, 5)),
    ChainCase("size_div", "Reshape", size_halves(), inputs={"X": (2, 3, 4)}, order=["X", "shp"], opset=13,
              ref=lambda X: X.reshape(-1, 12)),
    ChainCase("shape_start_opset15", "Reshape", shape_tail(), inputs={"X": (1, 3, 4)}, order=["X", "shp"],
              opset=15, ref=lambda X: X.reshape(3, 4)),
    ChainCase("expand_where_equal", "Add", expand_ones(4), inputs={"X": (3, 4)}, order=["X", "C"], opset=13,
              ref=lambda X: X + 2.0),
    ChainCase("arange_row_opset13", "Add", arange_row(13), inputs={"X": (1, 6)}, order=["X", "R"], opset=13,
              ref=lambda X: X + torch.arange(6.0)[None]),
    ChainCase("arange_row_opset11", "Add", arange_row(11), inputs={"X": (1, 5)}, order=["X", "R"], opset=11,
              ref=lambda X: X + torch.arange(5.0)[None]),
    ChainCase("expand_tile_slice_late", "Add", arange_expand_tile_slice(), inputs={"X": (3, 4)}, order=["X", "E"],
              opset=13, ref=lambda X: X + 2 * torch.arange(4.0)[None]),
    ChainCase("timestep_embedding", "Add", timestep_embedding(), inputs={"X": (2, 8)}, order=["X", "E"], opset=13,
              ref=lambda X: X + embedding_ref()),
]

if __name__ == "__main__":
    sys.exit(oc.main(CASES))
