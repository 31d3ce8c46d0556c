"""The compare family on run-time data (ir/ops/compare.c, runtime/elem/compare.h): comparisons, logic ops,
Not and Where whose inputs are not known while compiling, so that they run as kernels instead of folding.

    test_compare.py --vcc BUILD/vcc --work DIR [--only NAME] [--cuda] [--cuda-one]

  <type>         one --forward-only program per element type (float32, float64, int8, int16, int32,
                 int64, uint8, uint16, uint32, uint64) with A (2, 3, 4) and B (3, 1) drawn from values
                 that repeat (so that ties occur) and the type's extremes (floats: +-inf, -0.0 and NaN):
                 Equal, Less, LessOrEqual, Greater, GreaterOrEqual against numpy, and Where(A < B, A, B)
                 on that type; every element equal
  nan            float32 comparisons of NaN with NaN, with numbers and with infinities, written out:
                 NaN == NaN false, NaN < x false, Not(NaN == NaN) true
  bool           Equal, And, Or, Xor (broadcast) and Not on bool data against numpy
  legacy_opset6  Less with broadcast=1, axis=1 (opset 6: B (3) aligned at A's dim 1) against numpy
  where_<type>   Where with three-way broadcasting, cond (2, 1, 4), X (3, 1), Y (4): float32 and int64,
                 and a float32 Where with a scalar Y (torch.where(m, x, 0.))
  where_grad_*   op_check.py cases of Where alone: forward against torch.where in float64, the gradients
                 of X and Y (broadcast, summed back) against PyTorch float64 autograd and central finite
                 differences in double of a mean squared error
  graph_loss     a trainer with --loss graph of L = mean(Where(X > t, W * X, 0.1 * V)^2)
                 + mean(Where(X > 0, W * X, 0.1 * W * X)^2), X the data, W (6) and V (4, 1) parameters:
                 dW and dV after one step (--lr 0 --save-grads) against PyTorch float64 autograd and
                 central finite differences of L in double
  refusals       Less of bool data, Equal of float32 and int64, And of float32, Where with a float
                 condition, Where of shapes that do not broadcast: each exits 1 naming the node
  cuda           (--cuda, or whenever nvcc is found) the graph_loss trainer and the float32 program build
                 with nvcc with no warnings; --cuda-one does only this (exit 77 without nvcc)

Prints one line per check with its figure; exits 1 if any failed.
"""

import argparse
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper
from safetensors.numpy import load_file

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import op_check as oc  # noqa: E402

FAILED = []
TYPES = [np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
CMP = {"Equal": np.equal, "Less": np.less, "LessOrEqual": np.less_equal, "Greater": np.greater,
       "GreaterOrEqual": np.greater_equal}


def row(name, what, fig, ok, note=""):
    print("%-16s %-52s %9.2e %s  %s" % (name, what, fig, "ok  " if ok else "FAIL", note))
    if not ok:
        FAILED.append("%s: %s" % (name, what))


def onnx_type(t):
    return helper.np_dtype_to_tensor_dtype(np.dtype(t))


def vi(name, t, shape):
    return helper.make_tensor_value_info(name, onnx_type(t), list(shape))


def save_model(path, nodes, inputs, outputs, inits=(), opset=17):
    m = helper.make_model(helper.make_graph(nodes, "compare", inputs, outputs, list(inits)),
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.save(m, path)


def forward(vcc, d, name, nodes, ins, refs, opset=17, target="c"):
    """Build and run a --forward-only program: ins [(name, array)], refs {output: reference array}; returns
    the outputs in refs' order (None for a CUDA build)."""
    os.makedirs(d, exist_ok=True)
    save_model(os.path.join(d, name + ".onnx"), nodes, [vi(n, a.dtype, a.shape) for n, a in ins],
               [vi(n, r.dtype, r.shape) for n, r in refs.items()], opset=opset)
    exe = oc._build(vcc, name + ".onnx", name + "." + target, d, ["--forward-only"], fast=target == "c")
    if target == "cu":
        return None
    for n, a in ins:
        np.save(os.path.join(d, n + ".npy"), a)
    oc._run([exe] + [n + ".npy" for n, _ in ins] + ["-o"] + [n + ".npy" for n in refs], d)
    return [np.load(os.path.join(d, n + ".npy")) for n in refs]


def differ(got, want):
    """How many elements differ (NaN equal to NaN), or the whole count on a dtype or shape difference."""
    if got.dtype != want.dtype or got.shape != want.shape:
        return want.size or 1, "got %s %s, want %s %s" % (got.dtype, got.shape, want.dtype, want.shape)
    if np.issubdtype(want.dtype, np.floating):
        same = (got == want) | (np.isnan(got) & np.isnan(want))
    else:
        same = got == want
    return int((~same).sum()), "%d of %d differ" % (int((~same).sum()), want.size)


def check_outputs(name, got, refs):
    for (n, want), g in zip(refs.items(), got):
        bad, note = differ(g, want)
        row(name, n, float(bad), bad == 0, note)


def draw(t, shape, rng):
    """Values of type t that repeat, with the type's extremes (floats: +-inf, -0.0, NaN)."""
    if np.issubdtype(t, np.floating):
        pool = np.array([-np.inf, -2.5, -1.0, -0.0, 0.0, 1.0, 2.5, np.inf, np.nan, np.finfo(t).max, np.finfo(t).tiny], t)
    else:
        info = np.iinfo(t)
        pool = np.array(sorted({int(info.min), int(info.min) + 1, 0, 1, 2, int(info.max) - 1, int(info.max)} |
                               ({-1} if info.min < 0 else {int(info.max) // 2 + 1})), dtype=t)
    return rng.choice(pool, size=shape).astype(t)


def cmp_nodes(a, b, suffix=""):
    return [helper.make_node(op, [a, b], [op.lower() + suffix], name=op + suffix) for op in CMP]


def check_types(vcc, work, rng, only):
    for t in TYPES:
        name = np.dtype(t).name
        if only and only not in name:
            continue
        a, b = draw(t, (2, 3, 4), rng), draw(t, (3, 1), rng)
        nodes = cmp_nodes("A", "B") + [helper.make_node("Where", ["less", "A", "B"], ["where"], name="Where")]
        refs = {op.lower(): f(a, b) for op, f in CMP.items()}
        refs["where"] = np.where(a < b, a, b).astype(t)
        try:
            check_outputs(name, forward(vcc, os.path.join(work, name), name, nodes, [("A", a), ("B", b)], refs), refs)
        except RuntimeError as e:
            row(name, "build and run", float("inf"), False, str(e)[:400])


def check_nan(vcc, work):
    nan, inf = np.nan, np.inf
    a = np.array([nan, nan, 1.0, nan, -inf, inf, nan, 0.0], np.float32)
    b = np.array([nan, 1.0, nan, inf, -inf, nan, -inf, -0.0], np.float32)
    nodes = cmp_nodes("A", "B") + [helper.make_node("Not", ["equal"], ["not_equal"], name="Not")]
    refs = {"equal": np.array([0, 0, 0, 0, 1, 0, 0, 1], bool), "less": np.array([0, 0, 0, 0, 0, 0, 0, 0], bool),
            "lessorequal": np.array([0, 0, 0, 0, 1, 0, 0, 1], bool), "greater": np.zeros(8, bool),
            "greaterorequal": np.array([0, 0, 0, 0, 1, 0, 0, 1], bool),
            "not_equal": np.array([1, 1, 1, 1, 0, 1, 1, 0], bool)}
    for op, f in CMP.items():  # the written-out expectations are numpy's
        assert np.array_equal(refs[op.lower()], f(a, b)), op
    check_outputs("nan", forward(vcc, os.path.join(work, "nan"), "nan", nodes, [("A", a), ("B", b)], refs), refs)


def check_bool(vcc, work, rng):
    a, b = rng.integers(0, 2, (2, 3, 4)).astype(bool), rng.integers(0, 2, (3, 1)).astype(bool)
    ops = {"Equal": np.equal, "And": np.logical_and, "Or": np.logical_or, "Xor": np.logical_xor}
    nodes = [helper.make_node(op, ["A", "B"], [op.lower()], name=op) for op in ops]
    nodes.append(helper.make_node("Not", ["A"], ["not"], name="Not"))
    refs = {op.lower(): f(a, b) for op, f in ops.items()}
    refs["not"] = ~a
    check_outputs("bool", forward(vcc, os.path.join(work, "bool"), "bool", nodes, [("A", a), ("B", b)], refs), refs)


def check_legacy(vcc, work, rng):
    a = rng.integers(-2, 3, (2, 3, 4)).astype(np.float32)
    b = rng.integers(-2, 3, (3,)).astype(np.float32)
    nodes = [helper.make_node("Less", ["A", "B"], ["less"], name="Less", broadcast=1, axis=1)]
    refs = {"less": a < b.reshape(1, 3, 1)}
    got = forward(vcc, os.path.join(work, "legacy_opset6"), "legacy", nodes, [("A", a), ("B", b)], refs, opset=6)
    check_outputs("legacy_opset6", got, refs)


def where_program(t, rng):
    cond = rng.integers(0, 2, (2, 1, 4)).astype(bool)
    x = (rng.standard_normal((3, 1)) * 100).astype(t)
    y = (rng.standard_normal((4,)) * 100).astype(t)
    nodes = [helper.make_node("Where", ["C", "X", "Y"], ["out"], name="Where")]
    return nodes, [("C", cond), ("X", x), ("Y", y)], {"out": np.where(cond, x, y)}


def check_where(vcc, work, rng):
    for t in (np.float32, np.int64):
        name = "where_" + np.dtype(t).name
        nodes, ins, refs = where_program(t, rng)
        check_outputs(name, forward(vcc, os.path.join(work, name), name, nodes, ins, refs), refs)
    # torch.where(x > 0, x, 0.): a scalar Y, the mask computed in the program
    x = rng.standard_normal((3, 5)).astype(np.float32)
    nodes = [helper.make_node("Constant", [], ["zero"], value=numpy_helper.from_array(np.array(0.0, np.float32))),
             helper.make_node("Greater", ["X", "zero"], ["m"], name="gt"),
             helper.make_node("Where", ["m", "X", "zero"], ["out"], name="Where")]
    refs = {"out": np.where(x > 0, x, np.float32(0))}
    check_outputs("where_scalar", forward(vcc, os.path.join(work, "where_scalar"), "ws", nodes, [("X", x)], refs), refs)


# Where alone, float32 X and Y trained, cond a bool constant: op_check.py's forward, autograd and finite
# difference checks (the sums of broadcast operands' gradients included)
_rng = np.random.default_rng(3)
GRAD_CASES = [
    oc.Case("where_grad_bcast", "Where", inputs={"X": (2, 3, 4), "Y": (3, 1)},
            consts={"cond": _rng.integers(0, 2, (2, 1, 4)).astype(bool)}, order=["cond", "X", "Y"],
            ref=lambda X, Y, cond: torch.where(cond, X, Y)),
    oc.Case("where_grad_same_shape", "Where", inputs={"X": (3, 5), "Y": (3, 5)},
            consts={"cond": _rng.integers(0, 2, (3, 5)).astype(bool)}, order=["cond", "X", "Y"],
            ref=lambda X, Y, cond: torch.where(cond, X, Y)),
    oc.Case("where_grad_scalar_y", "Where", inputs={"X": (4, 3), "Y": ()},
            consts={"cond": _rng.integers(0, 2, (1, 3)).astype(bool)}, order=["cond", "X", "Y"],
            ref=lambda X, Y, cond: torch.where(cond, X, Y)),
]


def check_grad_cases(vcc, work, only):
    for c in GRAD_CASES:
        if only and only not in c.name:
            continue
        try:
            rows = oc.check_case(c, vcc, work)
        except Exception as e:  # a crash of vcc or of a program is a failed check
            rows = [("run", float("inf"), False, str(e)[:600])]
        for check, fig, ok, note in rows:
            row(c.name, check, fig, ok, note)


# ---- graph_loss: L = mean(Where(X > t, W * X, s * V)^2) + mean(Where(X > 0, W * X, s * W * X)^2)

S = np.float32(0.1)


def graph_loss_model(path, rng):
    x = rng.standard_normal((4, 6)).astype(np.float32)
    thr = rng.uniform(-0.5, 0.5, (6,)).astype(np.float32)
    w = rng.uniform(0.5, 1.5, (6,)).astype(np.float32)
    v = rng.standard_normal((4, 1)).astype(np.float32)
    c = lambda n, a: helper.make_node("Constant", [], [n], value=numpy_helper.from_array(np.asarray(a), n))  # noqa: E731
    mk = helper.make_node
    nodes = [c("thr", thr), c("s", np.array(S)), c("zero", np.array(0.0, np.float32)),
             mk("Greater", ["X", "thr"], ["m"], name="gt_thr"), mk("Mul", ["W", "X"], ["wx"], name="wx"),
             mk("Mul", ["V", "s"], ["sv"], name="sv"), mk("Where", ["m", "wx", "sv"], ["y"], name="where_wv"),
             mk("Mul", ["y", "y"], ["y2"], name="y2"), mk("ReduceMean", ["y2"], ["l1"], keepdims=0, name="l1"),
             mk("Greater", ["X", "zero"], ["p"], name="gt_zero"), mk("Mul", ["wx", "s"], ["swx"], name="swx"),
             mk("Where", ["p", "wx", "swx"], ["z"], name="where_leaky"), mk("Mul", ["z", "z"], ["z2"], name="z2"),
             mk("ReduceMean", ["z2"], ["l2"], keepdims=0, name="l2"), mk("Add", ["l1", "l2"], ["L"], name="L")]
    save_model(path, nodes, [vi("X", np.float32, x.shape)], [vi("L", np.float32, ())],
               [numpy_helper.from_array(w, "W"), numpy_helper.from_array(v, "V")])
    return x, thr, w, v


def graph_loss_ref(x, thr, w, v):
    """L in float64 (torch), with the same float32 inputs."""
    s = float(S)
    y = torch.where(x > thr, w * x, s * v)
    z = torch.where(x > 0, w * x, (w * x) * s)
    return (y * y).mean() + (z * z).mean()


def check_graph_loss(vcc, work, rng, cuda):
    d = os.path.join(work, "graph_loss")
    os.makedirs(d, exist_ok=True)
    x, thr, w, v = graph_loss_model(os.path.join(d, "gl.onnx"), rng)
    train = oc._build(vcc, "gl.onnx", "gl.c", d, ["--loss", "graph", "--keep-grads"])
    np.save(os.path.join(d, "x.npy"), x)
    oc._run([train, "--data", "x.npy", "--lr", "0", "--save-grads", "g.safetensors"], d)
    got = load_file(os.path.join(d, "g.safetensors"))
    t = {k: torch.tensor(a.astype(np.float64), requires_grad=k in ("w", "v"))
         for k, a in (("x", x), ("thr", thr), ("w", w), ("v", v))}
    graph_loss_ref(**t).backward()
    auto = {"W": t["w"].grad.numpy(), "V": t["v"].grad.numpy()}
    base = {"W": w.astype(np.float64), "V": v.astype(np.float64)}
    for name in ("W", "V"):
        fd = np.empty(base[name].size)
        for i in range(fd.size):
            h = 1e-6 * max(1.0, abs(base[name].flat[i]))
            vals = []
            for sign in (1, -1):
                p = {k: a.copy() for k, a in base.items()}
                p[name].flat[i] += sign * h
                with torch.no_grad():
                    vals.append(graph_loss_ref(torch.tensor(x.astype(np.float64)), torch.tensor(thr.astype(np.float64)),
                                               torch.tensor(p["W"]), torch.tensor(p["V"])).item())
            fd[i] = (vals[0] - vals[1]) / (2 * h)
        g = got.get(name)
        if g is None:
            row("graph_loss", "d" + name, float("inf"), False, "vcc computed no gradient")
            continue
        e_auto, e_fd = oc._err(g, auto[name]), oc._err(g.reshape(-1), fd)
        e_ref = oc._err(auto[name].reshape(-1), fd)
        row("graph_loss", "d" + name + " vs autograd and finite differences", max(e_auto, e_fd),
            e_auto <= 1e-5 and e_fd <= 1e-5, "autograd %.1e, fd %.1e (autograd vs fd %.1e)" % (e_auto, e_fd, e_ref))
    if cuda:
        check_cuda(vcc, work, rng)


def check_cuda(vcc, work, rng):
    d = os.path.join(work, "graph_loss")
    os.makedirs(d, exist_ok=True)
    if not os.path.exists(os.path.join(d, "gl.onnx")):
        graph_loss_model(os.path.join(d, "gl.onnx"), rng)
    builds = [("the graph_loss trainer (Greater, Where, WhereGrad)", lambda: oc._build(
        vcc, "gl.onnx", "gl.cu", d, ["--loss", "graph"], fast=False))]
    t = np.float32
    a, b = draw(t, (2, 3, 4), rng), draw(t, (3, 1), rng)
    nodes = cmp_nodes("A", "B") + [helper.make_node("Not", ["less"], ["nl"], name="Not"),
                                   helper.make_node("Xor", ["less", "equal"], ["x"], name="Xor"),
                                   helper.make_node("Where", ["nl", "A", "B"], ["w"], name="Where")]
    refs = {op.lower(): f(a, b) for op, f in CMP.items()}
    refs.update({"nl": ~(a < b), "x": (a < b) ^ (a == b), "w": np.where(~(a < b), a, b)})
    builds.append(("a float32 program of every forward kernel", lambda: forward(
        vcc, os.path.join(work, "cuda_fwd"), "cf", nodes, [("A", a), ("B", b)], refs, target="cu")))
    for what, build in builds:
        try:
            build()
            row("cuda", "nvcc build of " + what, 0.0, True, "no warnings")
        except RuntimeError as e:
            row("cuda", "nvcc build of " + what, float("inf"), False, str(e)[:400])


def check_refusals(vcc, work):
    d = os.path.join(work, "refusals")
    os.makedirs(d, exist_ok=True)
    mk = helper.make_node
    f32, i64, b8 = np.float32, np.int64, np.bool_
    cases = [
        ("less_of_bool", [mk("Less", ["A", "B"], ["y"], name="lt_bool")], [vi("A", b8, [3]), vi("B", b8, [3])],
         vi("y", b8, [3]), "lt_bool", "expected a number type"),
        ("equal_mixed_types", [mk("Equal", ["A", "B"], ["y"], name="eq_mixed")], [vi("A", f32, [3]), vi("B", i64, [3])],
         vi("y", b8, [3]), "eq_mixed", "expected input 0's"),
        ("and_of_float", [mk("And", ["A", "B"], ["y"], name="and_f")], [vi("A", f32, [3]), vi("B", f32, [3])],
         vi("y", b8, [3]), "and_f", "expected bool"),
        ("where_float_cond", [mk("Where", ["A", "B", "B"], ["y"], name="where_f")],
         [vi("A", f32, [3]), vi("B", f32, [3])], vi("y", f32, [3]), "where_f", "expected bool"),
        ("where_no_broadcast", [mk("Where", ["C", "A", "B"], ["y"], name="where_bc")],
         [vi("C", b8, [2, 3]), vi("A", f32, [2, 3]), vi("B", f32, [4])], vi("y", f32, [2, 3]), "where_bc",
         "cannot broadcast"),
    ]
    for name, nodes, ins, out, node, why in cases:
        path = os.path.join(d, name + ".onnx")
        save_model(path, nodes, ins, [out])
        c_out = os.path.join(d, name + ".c")
        p = subprocess.run([vcc, path, "--forward-only", "-o", c_out], capture_output=True, text=True)
        ok = p.returncode == 1 and "'%s'" % node in p.stderr and why in p.stderr and not os.path.exists(c_out)
        row("refusals", name, float(p.returncode), ok,
            p.stderr.strip().splitlines()[0][-150:] if p.stderr.strip() else "no message")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vcc", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--only", default="")
    ap.add_argument("--cuda", action="store_true")
    ap.add_argument("--cuda-one", action="store_true")
    args = ap.parse_args()
    np.seterr(all="ignore")  # comparisons with NaN
    vcc, work = os.path.abspath(args.vcc), os.path.abspath(args.work)
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(11)
    have_nvcc = shutil.which("nvcc") is not None
    if args.cuda_one:
        if not have_nvcc:
            print("skip: nvcc not found")
            return 77
        check_cuda(vcc, work, rng)
    else:
        steps = [("types", lambda: check_types(vcc, work, rng, args.only)),
                 ("nan", lambda: check_nan(vcc, work)), ("bool", lambda: check_bool(vcc, work, rng)),
                 ("legacy_opset6", lambda: check_legacy(vcc, work, rng)),
                 ("where", lambda: check_where(vcc, work, rng)),
                 ("where_grad", lambda: check_grad_cases(vcc, work, args.only)),
                 ("graph_loss", lambda: check_graph_loss(vcc, work, rng, args.cuda or have_nvcc)),
                 ("refusals", lambda: check_refusals(vcc, work))]
        for name, step in steps:
            if args.only and name != "types" and args.only not in name and name not in args.only:
                continue
            try:
                step()
            except Exception as e:  # a crash of vcc or of a program is a failed check
                row(name, "run", float("inf"), False, str(e)[:600])
    print("%d failed%s" % (len(FAILED), (": " + "; ".join(FAILED)) if FAILED else ""))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
