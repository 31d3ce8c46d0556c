"""The layout family in small graphs, where one node is not enough (tests/ops/op_check.py checks each):

  split_all_parts       every part of a Split reaches the loss (in another order): dX is the Concat of them all
  split_unused_part     a part no one reads: its slice of dX is zeros
  layout_chain          Transpose -> Resize -> Slice -> Unsqueeze -> Expand -> Squeeze -> Tile -> Concat, trained
  resize_filters        Resize cubic with tf_crop_and_resize (a roi, extrapolation) -> Resize linear antialiased,
                        trained (references: ONNX's reference implementation, then PyTorch's antialiased bilinear)
  cast_int_roundtrip    float -> INT64 -> FLOAT and float -> INT32 -> FLOAT at run time (forward: truncation)
  int64_movement        int64 values moved by Transpose, Slice (negative step), Concat, Tile, Expand,
                        Unsqueeze, Split at run time, then cast back to float (forward)
  cast_const_folded     Cast of an int64 Constant: no Cast node is left after canonical (checked in the dump:
                        the Add reads a constant), the value is a constant added to the input

Each is checked like an op_check case (forward against PyTorch float64; gradients against PyTorch autograd
and central finite differences), the graph's first output being the trained one. Every dump of
layout_chain and resize_filters after each pass must read back and print identically (print(parse(x)) ==
x), and the dumps must pass vcc's type check of every node (`vcc dump.vir`).
"""

import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F
from onnx import helper, numpy_helper, TensorProto

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import op_check as oc  # noqa: E402
from test_layout import onnx_resize_ref  # noqa: E402

I64 = np.int64


class GraphCase(oc.Case):
    """A case whose model is several nodes: nodes(), the ONNX nodes reading the float inputs and the
    constants by name and writing y0, y1, ...; y0 is the output the trainer's loss reads."""

    def __init__(self, name, nodes, inputs, ref, **kw):
        super().__init__(name, "Graph", inputs, ref, **kw)
        self.nodes = nodes

    def model(self, vals, out_shapes, trainable, out_types=None):
        inits = [numpy_helper.from_array(np.asarray(c), n) for n, c in self.consts.items()]
        if trainable:
            inits += [numpy_helper.from_array(v, n) for n, v in vals.items()]
            g_in = [helper.make_tensor_value_info("data", TensorProto.FLOAT, [max(1, out_shapes[0][0])])]
        else:
            g_in = [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(v.shape)) for n, v in vals.items()]
        types = out_types or [TensorProto.FLOAT] * len(out_shapes)
        outs = [helper.make_tensor_value_info("y%d" % i, t, list(s)) for i, (t, s) in enumerate(zip(types, out_shapes))]
        graph = helper.make_graph(self.nodes(), self.name, g_in, outs[:1] if trainable else outs, initializer=inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)], producer_name="op_check")
        m.ir_version = 8
        return m


_single_node_model = oc._model


def _model(case, vals, out_shapes, trainable, **kw):
    """op_check's model builder, with GraphCase's graphs."""
    if isinstance(case, GraphCase):
        return case.model(vals, out_shapes, trainable, **kw)
    return _single_node_model(case, vals, out_shapes, trainable, **kw)


oc._model = _model
N = helper.make_node


def split_all_nodes():
    return [N("Split", ["X", "split"], ["a", "b", "c"], axis=1),
            N("Concat", ["c", "a", "b"], ["y0"], axis=1)]


def split_unused_nodes():
    return [N("Split", ["X"], ["a", "b", "c"], axis=0), N("Concat", ["c", "b"], ["y0"], axis=1)]


def chain_nodes():
    return [N("Transpose", ["X"], ["t"], perm=[0, 1, 3, 2]),                              # (2, 3, 5, 4)
            N("Resize", ["t", "", "scales"], ["r"], mode="linear"),                     # (2, 3, 10, 6)
            N("Slice", ["r", "starts", "ends", "axes", "steps"], ["s"]),                # (2, 3, 4, 6)
            N("Unsqueeze", ["s", "ax2"], ["u"]),                                        # (2, 3, 1, 4, 6)
            N("Expand", ["u", "shape"], ["e"]),                                         # (2, 3, 2, 4, 6)
            N("Squeeze", ["B", "ax0"], ["b"]),                                          # (3, 1, 1, 1)
            N("Tile", ["b", "reps"], ["bt"]),                                           # (3, 2, 4, 6)
            N("Unsqueeze", ["bt", "ax0"], ["bu"]),                                      # (1, 3, 2, 4, 6)
            N("Expand", ["bu", "shape"], ["be"]),                                       # (2, 3, 2, 4, 6)
            N("Concat", ["e", "be"], ["y0"], axis=1)]                                   # (2, 6, 2, 4, 6)


def chain_ref(X, B, **c):
    t = X.permute(0, 1, 3, 2)
    r = F.interpolate(t, scale_factor=(2, 1.5), mode="bilinear", align_corners=False)
    s = torch.index_select(r, 2, torch.tensor([8, 6, 4, 2]))
    e = s.unsqueeze(2).expand(2, 3, 2, 4, 6)
    be = B.squeeze(0).repeat(1, 2, 4, 6).unsqueeze(0).expand(2, 3, 2, 4, 6)
    return torch.cat([e, be], 1)


CROP = {"mode": "cubic", "coordinate_transformation_mode": "tf_crop_and_resize", "extrapolation_value": 0.5}
CROP_GIVEN = {"roi": (0, 0, 0.1, -0.1, 1, 1, 0.9, 1.2), "sizes": (2, 2, 8, 9)}


def filters_nodes():
    return [N("Resize", ["X", "roi", "", "sizes"], ["r"], **CROP),                        # (2, 2, 8, 9)
            N("Resize", ["r", "", "", "sizes2"], ["y0"], mode="linear", antialias=1,    # (2, 2, 3, 4)
              exclude_outside=1)]


def filters_ref(X, **c):
    r = filters_ref.crop(X)
    return F.interpolate(r, size=(3, 4), mode="bilinear", antialias=True, align_corners=False)


filters_ref.crop = onnx_resize_ref((2, 2, 6, 7), CROP, CROP_GIVEN)


def cast_int_nodes():
    return [N("Cast", ["X"], ["i"], to=TensorProto.INT64), N("Cast", ["i"], ["y0"], to=TensorProto.FLOAT),
            N("Cast", ["X"], ["j"], to=TensorProto.INT32), N("Cast", ["j"], ["y1"], to=TensorProto.FLOAT)]


def int64_nodes():
    return [N("Cast", ["X"], ["i"], to=TensorProto.INT64),                                 # (2, 3, 4)
            N("Transpose", ["i"], ["t"], perm=[2, 0, 1]),                                  # (4, 2, 3)
            N("Slice", ["t", "starts", "ends", "axes", "steps"], ["s"]),                   # (4, 2, 2)
            N("Concat", ["s", "t"], ["c"], axis=2),                                        # (4, 2, 5)
            N("Tile", ["c", "reps"], ["tl"]),                                              # (4, 4, 5)
            N("Unsqueeze", ["tl", "ax0"], ["u"]),                                          # (1, 4, 4, 5)
            N("Expand", ["u", "shape"], ["e"]),                                            # (2, 4, 4, 5)
            N("Split", ["e"], ["p", "q"], axis=1),                                         # (2, 2, 4, 5) x 2
            N("Cast", ["q"], ["y0"], to=TensorProto.FLOAT), N("Cast", ["p"], ["y1"], to=TensorProto.FLOAT)]


def int64_ref(X, **c):
    i = torch.trunc(X)
    t = i.permute(2, 0, 1)
    s = torch.index_select(t, 2, torch.tensor([2, 1]))
    cat = torch.cat([s, t], 2).repeat(1, 2, 1)
    e = cat.unsqueeze(0).expand(2, 4, 4, 5)
    return e[:, 2:], e[:, :2]


def cast_const_nodes():
    c = numpy_helper.from_array(np.arange(6, dtype=I64).reshape(2, 3) - 2, "c")
    return [N("Constant", [], ["k"], value=c), N("Cast", ["k"], ["kf"], to=TensorProto.FLOAT),
            N("Add", ["X", "kf"], ["y0"])]


CASES = [
    GraphCase("split_all_parts", split_all_nodes, inputs={"X": (2, 6, 3)}, consts={"split": np.array([1, 2, 3], I64)},
              opset=13, ref=lambda X, split: torch.cat([X[:, 3:], X[:, :1], X[:, 1:3]], 1)),
    GraphCase("split_unused_part", split_unused_nodes, inputs={"X": (6, 2)}, opset=13,
              ref=lambda X: torch.cat([X[4:], X[2:4]], 1)),
    GraphCase("layout_chain", chain_nodes, inputs={"X": (2, 3, 4, 5), "B": (1, 3, 1, 1, 1)}, opset=17,
              consts={"scales": np.array([1, 1, 2, 1.5], np.float32), "starts": np.array([8], I64),
                      "ends": np.array([0], I64), "axes": np.array([2], I64), "steps": np.array([-2], I64),
                      "ax2": np.array([2], I64), "ax0": np.array([0], I64),
                      "shape": np.array([2, 3, 2, 4, 6], I64), "reps": np.array([1, 2, 4, 6], I64)},
              ref=chain_ref),
    GraphCase("resize_filters", filters_nodes, inputs={"X": (2, 2, 6, 7)}, opset=18,
              consts={"roi": np.array(CROP_GIVEN["roi"], np.float32), "sizes": np.array(CROP_GIVEN["sizes"], I64),
                      "sizes2": np.array([2, 2, 3, 4], I64)}, ref=filters_ref),
    GraphCase("cast_int_roundtrip", cast_int_nodes, inputs={"X": (3, 4)}, outputs=2, opset=13, grad=False,
              lo=-50.0, hi=50.0, ref=lambda X: (torch.trunc(X), torch.trunc(X))),
    GraphCase("int64_movement", int64_nodes, inputs={"X": (2, 3, 4)}, outputs=2, opset=13, grad=False,
              lo=-1e6, hi=1e6,
              consts={"starts": np.array([2], I64), "ends": np.array([0], I64), "axes": np.array([2], I64),
                      "steps": np.array([-1], I64), "reps": np.array([1, 2, 1], I64),
                      "ax0": np.array([0], I64), "shape": np.array([2, 1, 1, 1], I64)},
              ref=int64_ref),
    GraphCase("cast_const_folded", cast_const_nodes, inputs={"X": (2, 3)}, opset=13,
              ref=lambda X: X + torch.arange(6.0).reshape(2, 3) - 2),
]


def check_dumps(vcc, work):
    """layout_chain's and resize_filters' trainer dumps after every pass: read back, printed identically,
    type-checked; and cast_const_folded has no Cast left after canonical. Returns the failures."""
    bad = []
    d = os.path.join(work, "dumps")
    os.makedirs(d, exist_ok=True)
    import onnx
    for name in ("layout_chain", "resize_filters"):
        case = next(c for c in CASES if c.name == name)
        vals = case.values()
        shapes = [tuple(r.shape) for r in oc._ref_outputs(case, vals)]
        onnx.save(case.model(vals, shapes, trainable=True), os.path.join(d, name + ".onnx"))
        for p in ("canonical", "shape", "autodiff", "memplan"):
            a = subprocess.run([vcc, name + ".onnx", "--loss", "mse", "--dump-ir=" + p], cwd=d, capture_output=True,
                               text=True)
            vir = "%s_%s.vir" % (name, p)
            with open(os.path.join(d, vir), "w") as f:
                f.write(a.stdout)
            b = subprocess.run([vcc, vir, "--loss", "mse", "--dump-ir=" + p], cwd=d, capture_output=True, text=True)
            ok = a.returncode == 0 and b.returncode == 0 and a.stdout == b.stdout
            print("%-40s %-22s %s" % (name, "dump " + p, "ok" if ok else "FAIL " + (a.stderr + b.stderr)[:300]))
            if not ok:
                bad.append("%s: dump %s" % (name, p))
    case = next(c for c in CASES if c.name == "cast_const_folded")
    vals = case.values()
    onnx.save(case.model(vals, [(2, 3)], trainable=False), os.path.join(d, "castc.onnx"))
    a = subprocess.run([vcc, "castc.onnx", "--forward-only", "--dump-ir=canonical"], cwd=d, capture_output=True,
                       text=True)
    nodes = [l.split()[3] for l in a.stdout.splitlines() if l.startswith("node ")]
    ok = a.returncode == 0 and "Cast" not in nodes and "Add" in nodes
    print("%-40s %-22s %s" % ("cast_const_folded", "no Cast after canon", "ok" if ok else "FAIL %s" % nodes))
    if not ok:
        bad.append("cast_const_folded: a Cast is left")
    return bad


if __name__ == "__main__":
    args = sys.argv[1:]
    vcc = os.path.abspath(args[args.index("--vcc") + 1])
    work = os.path.abspath(args[args.index("--work") + 1])
    rc = oc.main(CASES)
    if "--cuda-one" in args:
        sys.exit(rc)
    bad = check_dumps(vcc, work)
    print("%d dump checks failed" % len(bad))
    sys.exit(1 if bad else rc)
