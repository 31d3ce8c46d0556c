"""The compile-time evaluator (ir/ops/fold.c) op by op, against onnxruntime, and its refusals.

    check_fold.py --vcc BUILD/vcc --work DIR [--only NAME] [--cuda]

Each case is a small ONNX graph made with onnx.helper. vcc compiles it with --forward-only and
--dump-ir=shape; the dump must hold exactly the run-time nodes the case names (everything else folded
and removed, dead code and its constants included); the program is built and run on the case's inputs
and every output must have onnxruntime's dtype and shape and its values (integers and bools exactly,
floats within 1e-6 relative to max(|want|, 1)). Cases whose opset onnxruntime does not run (the legacy
broadcast of opset 6) compare with numpy instead, said in the case. Refusal cases check that vcc exits
1 and that its message names the file, the node, the op and the reason.

torch cases export small modules with torch.onnx.export (training mode, opset 17, no constant folding,
a symbolic batch dim bound with --shape batch=N): x.view(x.size(0), -1), x.flatten(2), expand,
torch.arange, and a fixed-timestep sinusoidal embedding whose buffers are Constants (the form of
models/export_video_nets.py); their outputs are compared with the module's (float32 PyTorch) and the
dump shows which nodes remain.

--cuda also builds the forward programs of the all-dtypes case and of one torch export as CUDA with
nvcc and requires no diagnostics (exits 77 without nvcc). Prints one line per case with its figure.
"""

import argparse
import math
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

I64, I32, F32, F64 = np.int64, np.int32, np.float32, np.float64
QUIET = ort.SessionOptions()
QUIET.log_severity_level = 3  # onnxruntime's notes on its own constant folding are not this test's output
ONNX_TYPE = {np.dtype(F32): TP.FLOAT, np.dtype(F64): TP.DOUBLE, np.dtype(I64): TP.INT64, np.dtype(I32): TP.INT32,
             np.dtype(np.bool_): TP.BOOL}


def c(name, value):
    """A Constant node holding value (its dtype as given)."""
    return helper.make_node("Constant", [], [name], name="c_" + name, value=numpy_helper.from_array(np.asarray(value), name))


def n(op, ins, outs, **attrs):
    outs = [outs] if isinstance(outs, str) else outs
    return helper.make_node(op, ins, outs, name=outs[0] + "_node", **attrs)


class Case:
    """nodes over graph inputs `inputs` (name -> array), outputs `outputs` (names); `keep`: the ops of the
    nodes left after folding, in order; `want`: expected outputs when onnxruntime cannot run the opset."""

    def __init__(self, name, nodes, outputs, inputs=None, opset=17, keep=(), want=None):
        self.name, self.nodes, self.outputs, self.inputs = name, nodes, outputs, dict(inputs or {})
        self.opset, self.keep, self.want = opset, list(keep), want


class Refusal:
    """A graph vcc must refuse: exit 1, every line naming the file, containing each of `says`."""

    def __init__(self, name, nodes, outputs, inputs=None, says=(), opset=17, out_types=None, args=()):
        self.name, self.nodes, self.outputs, self.inputs = name, nodes, outputs, dict(inputs or {})
        self.says, self.opset, self.out_types, self.args = list(says), opset, out_types, list(args)


def model(nodes, inputs, outputs, opset, out_types=None):
    g_in = [helper.make_tensor_value_info(k, ONNX_TYPE[v.dtype], list(v.shape)) for k, v in inputs.items()]
    g_out = [helper.make_tensor_value_info(o, (out_types or {}).get(o, 0), None) for o in outputs]
    m = helper.make_model(helper.make_graph(nodes, "g", g_in, g_out), opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def typed(m):
    """The model with its outputs' element types from ONNX shape inference (vcc checks declared types)."""
    inf = onnx.shape_inference.infer_shapes(m, data_prop=True)
    types = {v.name: v.type.tensor_type.elem_type for v in list(inf.graph.value_info) + list(inf.graph.output)}
    for o in m.graph.output:
        o.type.tensor_type.elem_type = types.get(o.name, 0)
    return m


def run(cmd, cwd, **kw):
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, **kw)


def compile_forward(vcc, path, d, extra=()):
    p = run([vcc, path, "--forward-only", "--dump-ir=shape", "-o", "fwd.c"] + list(extra), d)
    if p.returncode:
        raise RuntimeError("vcc exited %d: %s" % (p.returncode, p.stderr.strip()[:600]))
    dump, build = p.stdout.rsplit("\n", 2)[0], p.stdout.strip().splitlines()[-1]
    ops = re.findall(r"^node \d+ forward (\S+) ", dump, re.M)
    b = run(build.replace("-O2 -march=native", "-O0"), d, shell=True)
    if b.returncode:
        raise RuntimeError("build failed: %s" % b.stderr[:600])
    return ops, dump


def run_forward(d, inputs, nout):
    ins = []
    for k, v in inputs.items():
        ins.append(k + ".npy")
        np.save(os.path.join(d, ins[-1]), v)
    outs = ["out%d.npy" % i for i in range(nout)]
    p = run(["./fwd"] + ins + ["-o"] + outs, d)
    if p.returncode:
        raise RuntimeError("the program exited %d: %s" % (p.returncode, p.stderr.strip()[:400]))
    return [np.load(os.path.join(d, o)) for o in outs]


def compare(got, want):
    """The largest error of got against want (inf on a dtype or shape difference); floats relative to
    max(|want|, 1), integers and bools exact (any difference is inf)."""
    worst = 0.0
    for g, w in zip(got, want):
        w = np.asarray(w)
        if g.dtype != w.dtype or g.shape != w.shape:
            return float("inf"), "got %s %s, want %s %s" % (g.dtype, g.shape, w.dtype, w.shape)
        if w.dtype.kind == "f":
            e = float(np.abs(g.astype(F64) - w.astype(F64)).max() / max(np.abs(w).max(), 1.0)) if w.size else 0.0
            nan_ok = np.array_equal(np.isnan(g), np.isnan(w))
            e = e if nan_ok and not np.isnan(e) else float("inf")
        else:
            e = 0.0 if np.array_equal(g, w) else float("inf")
        worst = max(worst, e)
    return worst, ""


def check_case(case, vcc, work):
    d = os.path.join(work, case.name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    m = typed(model(case.nodes, case.inputs, case.outputs, case.opset))
    onnx.save(m, os.path.join(d, "m.onnx"))
    if case.want is None:
        sess = ort.InferenceSession(os.path.join(d, "m.onnx"), QUIET, providers=["CPUExecutionProvider"])
        want = sess.run(case.outputs, case.inputs)
        ref = "onnxruntime"
    else:
        want, ref = case.want, "numpy"
    ops, _ = compile_forward(vcc, "m.onnx", d)
    if ops != case.keep:
        return float("inf"), False, "nodes left after folding: %s, expected %s" % (ops, case.keep)
    got = run_forward(d, case.inputs, len(case.outputs))
    e, why = compare(got, want)
    return e, e <= 1e-6, why or "vs %s; nodes left: %s" % (ref, " ".join(ops) or "none")


def check_refusal(case, vcc, work):
    d = os.path.join(work, case.name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    m = model(case.nodes, case.inputs, case.outputs, case.opset, case.out_types)
    onnx.save(m, os.path.join(d, "m.onnx"))
    p = run([vcc, "m.onnx", "--forward-only", "-o", "fwd.c"] + case.args, d)
    lines = p.stderr.strip().splitlines()
    clean = p.returncode == 1 and lines and all(l.startswith("m.onnx") or l.startswith("  ") for l in lines)
    missing = [s for s in case.says if s not in p.stderr]
    left = os.path.exists(os.path.join(d, "fwd.c"))
    ok = clean and not missing and not left
    note = p.stderr.strip().replace("\n", " | ")[:300]
    if missing:
        note = "lacks %s: %s" % (missing, note)
    return 0.0 if ok else float("inf"), ok, note


# ---------------------------------------------------------------------------------------------------- cases

rng = np.random.default_rng(0)
X234 = rng.standard_normal((2, 3, 4)).astype(F32)
INT_A = np.array([[7, -7, 5], [-9, 0, 13]], I64)
INT_B = np.array([2, -3, 4], I64)


def arith_int(dt):
    a, b = INT_A.astype(dt), INT_B.astype(dt)
    ops = ["Add", "Sub", "Mul", "Div", "Max", "Min"]
    nodes = [c("a", a), c("b", b)] + [n(o, ["a", "b"], o.lower()) for o in ops]
    nodes += [n("Mod", ["a", "b"], "mod"), n("Mod", ["a", "b"], "fmod", fmod=1), n("Neg", ["a"], "neg"),
              n("Abs", ["a"], "abs"), n("Sign", ["a"], "sign"), c("e", np.array([0, 1, 3], dt)),
              n("Pow", ["b", "e"], "pow")]
    outs = [o.lower() for o in ops] + ["mod", "fmod", "neg", "abs", "sign", "pow"]
    if dt == I32:  # onnxruntime has no int64 Relu
        nodes.append(n("Relu", ["a"], "relu"))
        outs.append("relu")
    return nodes, outs


MATH_X = np.array([[-2.5, -0.7, 0.5, 1.5, 2.5, 3.7]])
MATH_P = np.array([0.25, 0.5, 1.0, 1.5, 2.0, 3.0])
UNARY = {"Sin": np.sin, "Cos": np.cos, "Tan": np.tan, "Atan": np.arctan, "Sinh": np.sinh, "Cosh": np.cosh,
         "Tanh": np.tanh, "Exp": np.exp, "Erf": np.vectorize(math.erf), "Sigmoid": lambda v: 1 / (1 + np.exp(-v)),
         "Floor": np.floor, "Ceil": np.ceil, "Round": np.round, "Neg": np.negative, "Abs": np.abs, "Sign": np.sign,
         "Relu": lambda v: np.maximum(v, 0), "Reciprocal": lambda v: 1 / v}
UNARY_SMALL = {"Sqrt": np.sqrt, "Log": np.log, "Asin": np.arcsin, "Acos": np.arccos}


def math_float(dt):
    """Arithmetic and unary math on float constants; also the numpy float64 values of the same functions
    (on the constants rounded to dt), the reference for float64, whose trigonometry onnxruntime lacks."""
    x, p = MATH_X.astype(dt), MATH_P.astype(dt)
    small = (p / 4).astype(dt)
    nodes = [c("x", x), c("p", p), n("Div", ["p", "x"], "q"), n("Pow", ["p", "x"], "pw"), n("Mul", ["x", "p"], "prod"),
             n("Sub", ["x", "p"], "diff"), n("Mod", ["x", "p"], "fm", fmod=1), n("Max", ["x", "p"], "mx"),
             n("Sum", ["x", "p", "x"], "sum")]
    nodes += [n(o, ["x"], o.lower()) for o in UNARY]
    nodes += [c("small", small)] + [n(o, ["small"], o.lower()) for o in UNARY_SMALL]
    outs = ["q", "pw", "prod", "diff", "fm", "mx", "sum"] + [o.lower() for o in list(UNARY) + list(UNARY_SMALL)]
    want = [p / x, p ** x, x * p, x - p, np.fmod(x, p), np.maximum(x, p), x + p + x]
    want += [f(x) for f in UNARY.values()] + [f(small) for f in UNARY_SMALL.values()]
    return nodes, outs, [np.asarray(w, dt) for w in want]


def compare_logic():
    fa, fb = np.array([1.0, np.nan, 2.0, -0.0], F32), np.array([1.0, np.nan, 3.0, 0.0], F32)
    ia, ib = np.array([[1], [5]], I32), np.array([1, 5, 9], I32)
    ba, bb = np.array([True, False, True, False]), np.array([True, True, False, False])
    nodes = [c("fa", fa), c("fb", fb), c("ia", ia), c("ib", ib), c("ba", ba), c("bb", bb)]
    outs = []
    for o in ["Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"]:
        nodes += [n(o, ["fa", "fb"], o + "_f"), n(o, ["ia", "ib"], o + "_i")]
        outs += [o + "_f", o + "_i"]
    nodes += [n("Equal", ["ba", "bb"], "eq_b"), n("And", ["ba", "bb"], "and"), n("Or", ["ba", "bb"], "or"),
              n("Xor", ["ba", "bb"], "xor"), n("Not", ["ba"], "not"),
              c("cond", np.array([[True], [False]])), c("wx", np.arange(3, dtype=F64)), c("wy", np.array([[-1.0]], F64)),
              n("Where", ["cond", "wx", "wy"], "where")]
    return nodes, outs + ["eq_b", "and", "or", "xor", "not", "where"]


def casts():
    f = np.array([-2.7, -0.5, 0.0, 0.5, 2.7, 1e9], F32)
    nodes = [c("f", f), c("i", np.array([-3, 0, 2**40], I64)), c("b", np.array([True, False])),
             c("d", np.array([1.0 / 3.0, -1e-300], F64)), c("i32", np.array([-5, 70000], I32))]
    casts = [("f", TP.INT32, "f2i32"), ("f", TP.INT64, "f2i64"), ("f", TP.BOOL, "f2b"), ("f", TP.DOUBLE, "f2d"),
             ("i", TP.FLOAT, "i2f"), ("i", TP.INT32, "i2i32"), ("i", TP.BOOL, "i2b"), ("b", TP.FLOAT, "b2f"),
             ("b", TP.INT64, "b2i"), ("d", TP.FLOAT, "d2f"), ("i32", TP.INT64, "i32_2i")]
    nodes += [n("Cast", [s], o, to=t) for s, t, o in casts]
    nodes += [n("CastLike", ["i32", "d"], "castlike")]
    return nodes, [o for _, _, o in casts] + ["castlike"]


def ranges():
    nodes = [c("s0", np.array(1.0, F32)), c("l0", np.array(3.2, F32)), c("d0", np.array(0.5, F32)),
             n("Range", ["s0", "l0", "d0"], "rf"),
             c("s1", np.array(10, I32)), c("l1", np.array(-3, I32)), c("d1", np.array(-4, I32)),
             n("Range", ["s1", "l1", "d1"], "ri32"),
             c("s2", np.array(5, I64)), c("l2", np.array(2, I64)), c("d2", np.array(1, I64)),
             n("Range", ["s2", "l2", "d2"], "rempty"),
             c("s3", np.array(0.0, F64)), c("l3", np.array(1.0, F64)), c("d3", np.array(0.1, F64)),
             n("Range", ["s3", "l3", "d3"], "rf64")]
    return nodes, ["rf", "ri32", "rempty", "rf64"]


def range_extremes():
    """int64 Range over the whole int64 span: limit - start and i * delta do not fit in int64, the elements
    do (onnxruntime 1.20 gives no element and numpy 1.24 two for the first, not the three of ONNX's
    ceil((limit - start) / delta); Python's range is exact)."""
    lo, hi = -2**63, 2**63 - 1
    nodes = [c("s", np.array(lo, I64)), c("l", np.array(hi, I64)), c("d", np.array(hi, I64)),
             n("Range", ["s", "l", "d"], "up"),
             c("s2", np.array(hi, I64)), c("l2", np.array(lo, I64)), c("d2", np.array(lo + 1, I64)),
             n("Range", ["s2", "l2", "d2"], "down")]
    want = [np.array(list(range(lo, hi, hi)), I64), np.array(list(range(hi, lo, lo + 1)), I64)]
    return nodes, ["up", "down"], want


def constant_of_shape():
    v = lambda a: numpy_helper.from_array(np.array([a]), "value")
    nodes = [c("sh", np.array([2, 3], I64)), c("sh0", np.array([2, 0], I64)), c("e", np.zeros([0], I64)),
             n("ConstantOfShape", ["sh"], "zeros"), n("ConstantOfShape", ["sh"], "i32s", value=v(I32(-4))),
             n("ConstantOfShape", ["sh"], "bools", value=v(True)), n("ConstantOfShape", ["sh0"], "empty"),
             n("ConstantOfShape", ["e"], "scalar", value=v(F64(2.5)))]
    return nodes, ["zeros", "i32s", "bools", "empty", "scalar"]


def gathers():
    data = np.arange(24, dtype=F32).reshape(2, 3, 4)
    nodes = [c("data", data), c("i1", np.array([[2, -1], [0, 1]], I64)), c("i0", np.array(-2, I32)),
             n("Gather", ["data", "i1"], "g_axis1", axis=1), n("Gather", ["data", "i0"], "g_scalar"),
             c("i2", np.array([-4, 3], I64)), n("Gather", ["data", "i2"], "g_axis_neg", axis=-1)]
    return nodes, ["g_axis1", "g_scalar", "g_axis_neg"]


def slices_etc():
    data = np.arange(60, dtype=I64).reshape(3, 4, 5)
    nodes = [c("data", data),
             c("st", np.array([-1, 10], I64)), c("en", np.array([-100, -3], I64)), c("ax", np.array([0, -1], I64)),
             c("sp", np.array([-2, -1], I64)), n("Slice", ["data", "st", "en", "ax", "sp"], "s_neg"),
             c("st2", np.array([1], I64)), c("en2", np.array([1000], I64)), n("Slice", ["data", "st2", "en2"], "s_clamp"),
             c("ax3", np.array([2, 0], I64)), n("Unsqueeze", ["data", "ax3"], "unsq"),
             n("Squeeze", ["unsq"], "sq_all"), n("Flatten", ["data"], "flat", axis=2),
             n("Transpose", ["data"], "tr_default"), n("Transpose", ["data"], "tr_perm", perm=[1, 0, 2]),
             c("rep", np.array([1, 2, 1], I64)), n("Tile", ["data", "rep"], "tile"),
             c("row", np.array([[1.5], [2.5]], F32)), c("esh", np.array([3, 1, 4], I64)),
             n("Expand", ["row", "esh"], "expand"), n("Identity", ["data"], "ident"),
             c("rsh", np.array([0, -1], I64)), n("Reshape", ["data", "rsh"], "reshape0"),
             n("Concat", ["data", "data"], "cat_neg", axis=-2),
             c("spl", np.array([1, 3], I64)), n("Split", ["data", "spl"], ["split_a", "split_b"], axis=1),
             n("Split", ["data"], ["split_%d" % i for i in range(5)], axis=-1)]
    return nodes, ["s_neg", "s_clamp", "unsq", "sq_all", "flat", "tr_default", "tr_perm", "tile", "expand", "ident",
                   "reshape0", "cat_neg", "split_a", "split_b"] + ["split_%d" % i for i in range(5)]


def reductions():
    x = np.array([[[1.5, -2.0, 3.0], [4.0, 0.5, -6.0]]], F32)
    xi = np.array([[3, -1], [2, 5]], I64)
    nodes = [c("x", x), c("xi", xi), c("ax", np.array([-1], I64)), c("none", np.zeros([0], I64)),
             n("ReduceSum", ["x", "ax"], "sum_k0", keepdims=0), n("ReduceSum", ["x"], "sum_all"),
             n("ReduceSum", ["x", "none"], "sum_noop", noop_with_empty_axes=1),
             n("ReduceProd", ["x", "ax"], "prod"), n("ReduceMax", ["xi"], "max_i", keepdims=0),
             n("ReduceMin", ["x", "ax"], "min"), n("ReduceMean", ["x"], "mean", keepdims=1)]
    return nodes, ["sum_k0", "sum_all", "sum_noop", "prod", "max_i", "min", "mean"]


def reductions_opset13():
    x = np.array([[1.0, 2.0], [3.0, 4.0]], F32)
    nodes = [c("x", x), n("ReduceProd", ["x"], "prod_attr", axes=[0], keepdims=0),
             n("ReduceMax", ["x"], "max_attr", axes=[-1]), c("ax", np.array([1], I64)),
             n("ReduceSum", ["x", "ax"], "sum_input")]
    return nodes, ["prod_attr", "max_attr", "sum_input"]


def shapes():
    x = rng.standard_normal((2, 3, 4, 5)).astype(F32)
    nodes = [n("Shape", ["x"], "all"), n("Shape", ["x"], "tail", start=-2), n("Shape", ["x"], "mid", start=1, end=-1),
             n("Shape", ["x"], "clip", start=-10, end=10), n("Size", ["x"], "size")]
    return nodes, ["all", "tail", "mid", "clip", "size"], {"x": x}


def view_chain():
    nodes = [n("Shape", ["x"], "s"), c("i0", np.array(0, I64)), n("Gather", ["s", "i0"], "nb", axis=0),
             c("a0", np.array([0], I64)), n("Unsqueeze", ["nb", "a0"], "nb1"), c("m1", np.array([-1], I64)),
             n("Concat", ["nb1", "m1"], "shp", axis=0), n("Relu", ["x"], "r"), n("Reshape", ["r", "shp"], "y")]
    return nodes, ["y"], {"x": X234}


def dead_code():
    """An unused branch (a Relu nobody reads, a constant chain nobody reads) and a folded constant output."""
    nodes = [n("Relu", ["x"], "unused_relu"), c("k", np.array([1, 2], I64)), n("Add", ["k", "k"], "unused_sum"),
             n("Shape", ["x"], "s"), n("Identity", ["x"], "y")]
    return nodes, ["y", "s"], {"x": X234}


def legacy_broadcast():
    """Opset 6: Add/Equal broadcast only with broadcast=1, B aligned at axis (numpy reference)."""
    a = np.arange(24, dtype=F32).reshape(2, 3, 4)
    b = np.array([10.0, 20.0, 30.0], F32)
    ia = np.array([[1, 2], [3, 2]], I64)
    nodes = [c("a", a), c("b", b), n("Add", ["a", "b"], "add_axis1", broadcast=1, axis=1),
             c("b4", np.arange(4, dtype=F32)), n("Sub", ["a", "b4"], "sub_suffix", broadcast=1),
             c("ia", ia), c("ib", np.array([2], I64)), n("Equal", ["ia", "ib"], "eq_bcast", broadcast=1)]
    want = [a + b[None, :, None], a - np.arange(4, dtype=F32), ia == 2]
    return nodes, ["add_axis1", "sub_suffix", "eq_bcast"], want


CASES = []
for dt, tag in ((I64, "i64"), (I32, "i32")):
    nd, outs = arith_int(dt)
    CASES.append(Case("arith_" + tag, nd, outs))
nd, outs, _ = math_float(F32)
CASES.append(Case("math_f32", nd, outs))
nd, outs, want = math_float(F64)
CASES.append(Case("math_f64", nd, outs, want=want))
for name, fn in (("compare_logic_where", compare_logic), ("cast", casts), ("range", ranges),
                 ("constant_of_shape", constant_of_shape), ("gather", gathers), ("slice_layout", slices_etc)):
    nd, outs = fn()
    CASES.append(Case(name, nd, outs))
nd, outs = reductions()
CASES.append(Case("reduce_opset18_inputs", nd, outs, opset=18))
nd, outs = reductions_opset13()
CASES.append(Case("reduce_opset13_attrs", nd, outs, opset=13))
nd, outs, ins = shapes()
CASES.append(Case("shape_start_end_size", nd, outs, inputs=ins))
nd, outs, ins = view_chain()
CASES.append(Case("view_chain", nd, outs, inputs=ins, keep=["Relu", "Reshape"]))
nd, outs, ins = dead_code()
CASES.append(Case("dead_code", nd, outs, inputs=ins, keep=["Identity"]))
nd, outs, want = legacy_broadcast()
CASES.append(Case("legacy_broadcast_opset6", nd, outs, opset=6, want=want))
nd, outs, want = range_extremes()
CASES.append(Case("range_int64_extremes", nd, outs, want=want))
CASES.append(Case("constant_only", [c("k", np.array([[1, 2, 3]], I32))], ["k"]))
# a ConstantOfShape over the compile-time size limit (2^20 elements): a float32 fill at run time, added to
# an input so the program computes with it
CASES.append(Case("constant_of_shape_runtime",
                  [c("big", np.array([3, 1 << 19], I64)),
                   n("ConstantOfShape", ["big"], "fill", value=numpy_helper.from_array(np.array([0.75], F32), "value")),
                   n("Add", ["fill", "x"], "y")], ["y"],
                  inputs={"x": rng.standard_normal((3, 1 << 19)).astype(F32)}, keep=["ConstantOfShape", "Add"]))

# comparisons and Where on run-time data are not folded but run (the compare family): the nodes stay
XM = {"x": np.array([1.0, 0.5, 1.0, -2.0], F32)}
CASES.append(Case("equal_runtime", [c("k", np.ones((4,), F32)), n("Equal", ["x", "k"], "e")], ["e"], inputs=XM,
                  keep=["Equal"]))
CASES.append(Case("where_from_runtime_chain", [n("Relu", ["x"], "r"), c("k", np.ones((4,), F32)),
                                               c("k2", np.full((4,), 2.0, F32)), n("Less", ["k", "r"], "lt"),
                                               n("Where", ["lt", "k", "k2"], "w")], ["w"], inputs=XM,
                  keep=["Relu", "Less", "Where"]))

X4 = {"x": np.ones((4,), F32)}
REFUSALS = [
    Refusal("range_runtime_limit", [c("z", np.array(0, I64)), c("one", np.array(1, I64)),
                                    n("Range", ["z", "lim", "one"], "r")], ["r"],
            inputs={"lim": np.array(3, I64)},
            says=["node 'r_node' (Range): input 1 'lim' is not known while compiling (it comes from graph input 'lim')"]),
    Refusal("gather_out_of_range", [c("d", np.arange(3, dtype=I64)), c("i", np.array([5], I64)),
                                    n("Gather", ["d", "i"], "g")], ["g"],
            says=["node 'g_node' (Gather): index 5 is out of range for axis 0 of size 3"]),
    Refusal("int_division_by_zero", [c("a", np.array([4], I64)), c("b", np.array([0], I64)), n("Div", ["a", "b"], "q")],
            ["q"], says=["node 'q_node' (Div): integer division by zero"]),
    # too large to fold, and not float32, which a run-time fill would make
    Refusal("constant_of_shape_too_large", [c("sh", np.array([2048, 1024], I64)),
                                            n("ConstantOfShape", ["sh"], "z",
                                              value=numpy_helper.from_array(np.array([3], I64), "value"))],
            ["z"], says=["node 'z_node' (ConstantOfShape): vcc evaluates ConstantOfShape only while compiling"]),
    Refusal("cast_to_float16", [c("a", np.array([1.0], F32)), n("Cast", ["a"], "h", to=TP.FLOAT16)], ["h"],
            says=["Cast attribute 'to':", "'h_node' (vcc's tensors are FLOAT, INT64"]),
    Refusal("constant_sparse", [helper.make_node(
        "Constant", [], ["sp"], name="/sparse",
        sparse_value=helper.make_sparse_tensor(numpy_helper.from_array(np.array([1.0], F32), "v"),
                                               numpy_helper.from_array(np.array([0], I64), "i"), [4])),
        n("Add", ["x", "sp"], "y")], ["y"], inputs=X4,
        says=["Constant attribute 'sparse_value':", "'/sparse' (sparse tensors are not supported)"]),
    Refusal("constant_value_ints_opset11", [helper.make_node("Constant", [], ["k"], name="/k", value_ints=[1, 2]),
                                            n("Reshape", ["x", "k"], "y")], ["y"], inputs=X4, opset=11,
            says=["Constant attribute 'value_ints':", "'/k' (exists from opset 12; the model imports opset 11)"]),
    Refusal("ceil_of_input", [n("Ceil", ["x"], "y")], ["y"], inputs=X4, says=["unsupported ops:", "Ceil: 'y_node'"]),
    Refusal("shape_attr_before_opset15", [n("Shape", ["x"], "s", start=1)], ["s"], inputs=X4, opset=13,
            says=["Shape attribute 'start':", "exists from opset 15; the model imports opset 13"]),
    Refusal("declared_type_mismatch", [n("Shape", ["x"], "s")], ["s"], inputs=X4, out_types={"s": TP.INT32},
            says=["graph output 's' is declared INT32 (any shape), but the graph computes i64[1]"]),
]


# ---------------------------------------------------------------------------------------------------- torch


def torch_cases():
    import torch
    from torch import nn

    torch.manual_seed(0)

    class View(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(24, 5)

        def forward(self, x):
            return self.fc(torch.relu(x).view(x.size(0), -1))

    class Flatten2(nn.Module):
        def forward(self, x):
            return torch.relu(x).flatten(2)

    class Expand(nn.Module):
        def forward(self, x):
            c = torch.ones(1, x.size(1)) * 2.0
            return x + c.expand(x.size(0), -1)

    class Arange(nn.Module):
        def forward(self, x):
            return x + torch.arange(x.numel(), dtype=torch.float32).reshape(x.shape)

    class TimeEmbedding(nn.Module):
        """The fixed-timestep embedding of a video-diffusion UNet: buffers exported as Constants."""

        def __init__(self, n=2, dim=8):
            super().__init__()
            half = dim // 2
            self.register_buffer("timesteps", torch.tensor([50.0, 950.0])[:n])
            self.register_buffer("freqs", torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32) / half))

        def forward(self, x):
            arg = self.timesteps[:, None] * self.freqs[None, :]
            return x + torch.cat([torch.sin(arg), torch.cos(arg)], dim=1)

    # (name, module, input, dynamic batch, nodes that must remain)
    return [("torch_view_size0", View(), torch.randn(3, 2, 3, 4), True, ["Relu", "Reshape", "Gemm"]),
            ("torch_flatten2", Flatten2(), torch.randn(2, 3, 4, 5), True, ["Relu", "Reshape"]),
            ("torch_expand", Expand(), torch.randn(3, 4), True, ["Add"]),
            ("torch_arange", Arange(), torch.randn(2, 6), True, ["Add"]),
            ("torch_timestep_embedding", TimeEmbedding(), torch.randn(2, 8), False, ["Add"])]


def buffers_to_constants(m, names):
    """Initializers `names` become Constant nodes of the same output names (constants, not parameters)."""
    keep, consts = [], []
    for t in m.graph.initializer:
        if t.name in names:
            consts.append(helper.make_node("Constant", [], [t.name], name="/" + t.name, value=t))
        else:
            keep.append(t)
    del m.graph.initializer[:]
    m.graph.initializer.extend(keep)
    nodes = consts + list(m.graph.node)
    del m.graph.node[:]
    m.graph.node.extend(nodes)


def check_torch(name, module, x, dynamic, keep, vcc, work):
    import torch

    d = os.path.join(work, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    path = os.path.join(d, "m.onnx")
    torch.onnx.export(module, (x,), path, opset_version=17, training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}} if dynamic else None)
    m = onnx.load(path)
    exported = [nd.op_type for nd in m.graph.node]
    if not dynamic:
        buffers_to_constants(m, {"timesteps", "freqs"})
        onnx.save(m, path)
    folded = sorted(set(exported) - set(keep) - {"Constant"})
    extra = ["--shape", "batch=%d" % x.shape[0]] if dynamic else []
    ops, _ = compile_forward(vcc, "m.onnx", d, extra)
    if ops != keep:
        return float("inf"), False, "exported %s; left %s, expected %s" % (exported, ops, keep)
    got = run_forward(d, {"x": x.numpy()}, 1)
    with torch.no_grad():
        want = module(x).numpy()
    e_torch, why = compare(got, [want])
    sess = ort.InferenceSession(path, QUIET, providers=["CPUExecutionProvider"])
    e_ort, why2 = compare(got, sess.run(None, {"x": x.numpy()}))
    e = max(e_torch, e_ort)
    return e, e <= 1e-5, why or why2 or "vs torch %.1e, onnxruntime %.1e; folded %s; left %s" % (
        e_torch, e_ort, " ".join(folded), " ".join(ops))


def cuda_build(vcc, work, name, path, extra):
    d = os.path.join(work, "cuda_" + name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    shutil.copy(path, os.path.join(d, "m.onnx"))
    p = run([vcc, "m.onnx", "--forward-only", "-o", "fwd.cu"] + extra, d)
    if p.returncode:
        return False, p.stderr.strip()[:300]
    b = run(p.stdout.strip().splitlines()[-1], d, shell=True)
    out = (b.stdout + b.stderr).strip()
    return b.returncode == 0 and not out, out[:300] or "nvcc, no diagnostics"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vcc", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--only", default="")
    ap.add_argument("--cuda", action="store_true")
    args = ap.parse_args()
    vcc, work = os.path.abspath(args.vcc), os.path.abspath(args.work)
    os.makedirs(work, exist_ok=True)
    failed, total = [], 0

    def report(name, kind, fig, ok, note):
        nonlocal total
        total += 1
        print("%-34s %-8s %9.2e %s  %s" % (name, kind, fig, "ok  " if ok else "FAIL", note))
        if not ok:
            failed.append(name)

    if args.cuda:
        if shutil.which("nvcc") is None:
            print("skip: nvcc not found")
            return 77
        for name in ("cast", "constant_of_shape", "view_chain"):  # every dtype as an output; a run-time node
            case = [x for x in CASES if x.name == name][0]
            check_case(case, vcc, work)
            ok, note = cuda_build(vcc, work, name, os.path.join(work, name, "m.onnx"), [])
            report(name, "cuda", 0.0 if ok else float("inf"), ok, note)
        print("%d checks, %d failed" % (total, len(failed)))
        return 1 if failed else 0
    for case in CASES:
        if args.only in case.name:
            try:
                report(case.name, "forward", *check_case(case, vcc, work))
            except Exception as x:  # a crash of vcc or of the program is a failed case
                report(case.name, "forward", float("inf"), False, str(x)[:400])
    for case in REFUSALS:
        if args.only in case.name:
            report(case.name, "refusal", *check_refusal(case, vcc, work))
    for name, module, x, dynamic, keep in torch_cases():
        if args.only in name:
            try:
                report(name, "torch", *check_torch(name, module, x, dynamic, keep, vcc, work))
            except Exception as x:
                report(name, "torch", float("inf"), False, str(x)[:400])
    print("%d checks, %d failed%s" % (total, len(failed), (": " + ", ".join(failed)) if failed else ""))
    return 1 if failed or not total else 0


if __name__ == "__main__":
    sys.exit(main())
