"""The typed kernels (runtime/elem/typed.h): Add, Sub, Mul, Div, Pow, Clip, MaxPool and Pad on data that are
not float32, in --forward-only programs, against references computed here with Python integers (exact,
then wrapped to the type's bits, as numpy's integer arithmetic wraps) and numpy float64.

    test_typed.py --vcc BUILD/vcc --work DIR [--cuda] [--cuda-one]

  <type>      one program per element type (int8, int16, int32, int64, uint8, uint16, uint32, uint64,
              float64) with X (2, 3, 4) and Y (3, 1) drawn over the type's whole range:
                Add, Sub, Mul, Div (broadcast; Div truncates toward zero, as ONNX's reference), Pow by a
                small exponent, Clip between two constant bounds of the type, MaxPool 2-D (3x3, stride 2,
                pads 1, ceil_mode) and Pad (constant -5 or 5, reflect, edge, wrap);
              every output equal to the reference, bit for bit
  pow_mixed   Pow with another exponent type (ONNX Pow-12+, T and T1): float32 ** int32, int32 ** float32
              (truncated toward zero), int64 ** int64
  nan         float64 MaxPool keeps a NaN (PyTorch's rule), float64 Clip passes one through
  refusals    Add of int8 and int16, Clip of int16 data with float bounds, MaxPool of int8 data with the
              Indices output: each refused with exit 1 and an error naming the node
  cuda        (--cuda, or whenever nvcc is found) a program using every typed kernel builds with nvcc with
              no warnings; --cuda-one does only this (exit 77 without nvcc)

Prints one line per check; exits 1 if any failed.
"""

import argparse
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import op_check as oc  # noqa: E402

FAILED = []
TYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.float64]


def row(name, what, ok, note=""):
    print("%-10s %-60s %s  %s" % (name, what, "ok" if ok else "FAIL", note))
    if not ok:
        FAILED.append("%s: %s" % (name, what))


def onnx_type(t):
    return helper.np_dtype_to_tensor_dtype(np.dtype(t))


def save_model(path, nodes, inputs, outputs, inits=(), opset=19):
    g = helper.make_graph(nodes, "typed", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 9
    onnx.checker.check_model(m)
    onnx.save(m, path)


def wrap(v, t):
    """Python integer v as type t's value (two's complement bits)."""
    info = np.iinfo(t)
    bits = info.bits
    v %= 1 << bits
    if info.min < 0 and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def ref_binary(op, a, b, t):
    """op over the broadcast of a (2, 3, 4) and b (3, 1) in type t, element by element."""
    a, b = np.broadcast_arrays(a, b)
    out = np.empty(a.shape, t)
    for idx in np.ndindex(a.shape):
        x, z = a[idx], b[idx]
        if np.issubdtype(t, np.floating):
            x, z = np.float64(x), np.float64(z)  # numpy's pow: NaN for a negative base to a fraction
            r = {"Add": lambda: x + z, "Sub": lambda: x - z, "Mul": lambda: x * z, "Div": lambda: x / z,
                 "Pow": lambda: x ** z}[op]()
        else:
            x, z = int(x), int(z)
            if op == "Div":
                q = abs(x) // abs(z)
                r = q if (x < 0) == (z < 0) else -q
            else:
                r = {"Add": lambda: x + z, "Sub": lambda: x - z, "Mul": lambda: x * z, "Pow": lambda: x ** z}[op]()
            r = wrap(r, t)
        out[idx] = r
    return out


def ref_maxpool(x, k=3, s=2, p=1):
    """MaxPool 2-D, kernel k, stride s, pads p, ceil_mode 1, over x (N, C, H, W): windows starting in the
    end padding dropped (ONNX and PyTorch); NaN wins."""
    N, C, H, W = x.shape
    def out_len(n):
        o = -(-(n + 2 * p - k) // s) + 1
        return o - 1 if (o - 1) * s >= n + p else o
    OH, OW = out_len(H), out_len(W)
    y = np.empty((N, C, OH, OW), x.dtype)
    for n, c, i, j in np.ndindex(N, C, OH, OW):
        best = None
        for a in range(k):
            for b in range(k):
                h, w = i * s - p + a, j * s - p + b
                if 0 <= h < H and 0 <= w < W:
                    v = x[n, c, h, w]
                    if best is None or v > best or v != v:
                        best = v
        y[n, c, i, j] = best
    return y


def ref_pad(x, pads, mode, value):
    np_mode = {"constant": "constant", "reflect": "reflect", "edge": "edge", "wrap": "wrap"}[mode]
    width = [(pads[i], pads[i + x.ndim]) for i in range(x.ndim)]
    if mode == "constant":
        return np.pad(x, width, mode="constant", constant_values=value)
    return np.pad(x, width, mode=np_mode)


def draw(t, shape, rng, nonzero=False):
    if np.issubdtype(t, np.floating):
        v = rng.standard_normal(shape) * 10
    else:
        info = np.iinfo(t)
        v = rng.integers(int(info.min), int(info.max), size=shape, dtype=t, endpoint=True)
        v.flat[0], v.flat[1] = info.min, info.max  # the extremes, where wrapping shows
    if nonzero:
        v[v == 0] = 1
    return v.astype(t)


def run_forward(vcc, d, name, nodes, ins, outs, inits=(), target="c"):
    """Compile and run a forward-only program: ins [(name, array)], outs [(name, dtype, shape)]."""
    path = os.path.join(d, name + ".onnx")
    save_model(path, nodes, [helper.make_tensor_value_info(n, onnx_type(a.dtype), a.shape) for n, a in ins],
               [helper.make_tensor_value_info(n, onnx_type(t), s) for n, t, s in outs], inits)
    exe = oc._build(vcc, name + ".onnx", name + "." + target, d, ["--forward-only"], fast=False)
    if target == "cu":
        return None
    for n, a in ins:
        np.save(os.path.join(d, n + ".npy"), a)
    oc._run([exe] + [n + ".npy" for n, _ in ins] + ["-o"] + [n + ".npy" for n, _, _ in outs], d)
    return [np.load(os.path.join(d, n + ".npy")) for n, _, _ in outs]


def const(name, v):
    return helper.make_node("Constant", [], [name], name="c_" + name, value=numpy_helper.from_array(v, name))


def type_program(t, rng):
    """The nodes, inputs, outputs and references of one type's program."""
    x = draw(t, (2, 3, 4), rng)
    y = draw(t, (3, 1), rng, nonzero=True)
    info = None if np.issubdtype(t, np.floating) else np.iinfo(t)
    e = np.array([0, 1, 3] if info is not None else [2.0, 0.5, -1.5], t).reshape(3, 1)
    lo, hi = (np.array(-3.5, t), np.array(7.25, t)) if info is None else (
        np.array(info.min // 3 if info.min < 0 else info.max // 5, t), np.array(info.max // 2, t))
    img = draw(t, (1, 2, 5, 6), rng)
    cval = np.array(-5 if (info is None or info.min < 0) else 5, t)
    pads = [0, 0, 1, 2, 0, 0, 2, 1]
    nodes = [helper.make_node(op, ["X", "Y"], [op.lower()], name=op) for op in ("Add", "Sub", "Mul", "Div")]
    nodes += [helper.make_node("Pow", ["X", "E"], ["pow"], name="Pow"),
              const("lo", lo), const("hi", hi), helper.make_node("Clip", ["X", "lo", "hi"], ["clip"], name="Clip"),
              helper.make_node("MaxPool", ["I"], ["maxpool"], name="MaxPool", kernel_shape=[3, 3], strides=[2, 2],
                               pads=[1, 1, 1, 1], ceil_mode=1),
              const("pads", np.array(pads, np.int64)), const("cval", cval)]
    nodes += [helper.make_node("Pad", ["I", "pads"] + (["cval"] if m == "constant" else []), ["pad_" + m],
                               name="Pad_" + m, mode=m) for m in ("constant", "reflect", "edge", "wrap")]
    refs = {op.lower(): ref_binary(op, x, y, t) for op in ("Add", "Sub", "Mul", "Div")}
    refs["pow"] = ref_binary("Pow", x, e, t)
    refs["clip"] = np.minimum(np.maximum(x, lo), hi).astype(t)
    refs["maxpool"] = ref_maxpool(img)
    for m in ("constant", "reflect", "edge", "wrap"):
        refs["pad_" + m] = ref_pad(img, pads, m, cval)
    ins = [("X", x), ("Y", y), ("E", e), ("I", img)]
    outs = [(n, t, r.shape) for n, r in refs.items()]
    return nodes, ins, outs, refs


def same(got, want):
    if got.dtype != want.dtype or got.shape != want.shape:
        return False, "got %s %s, want %s %s" % (got.dtype, got.shape, want.dtype, want.shape)
    if np.issubdtype(want.dtype, np.floating):
        ok = np.array_equal(got, want, equal_nan=True)
        err = np.nanmax(np.abs(got - want)) if got.size else 0.0
        return ok, "max |diff| %.3g" % err
    bad = int((got != want).sum())
    return bad == 0, "%d of %d differ" % (bad, want.size)


def check_types(vcc, work, rng):
    for t in TYPES:
        name = np.dtype(t).name
        d = os.path.join(work, name)
        os.makedirs(d, exist_ok=True)
        nodes, ins, outs, refs = type_program(t, rng)
        try:
            got = run_forward(vcc, d, name, nodes, ins, outs)
        except RuntimeError as e:
            row(name, "build and run", False, str(e)[:400])
            continue
        for (n, _, _), g in zip(outs, got):
            ok, note = same(g, refs[n])
            row(name, n, ok, note)


def check_pow_mixed(vcc, work, rng):
    d = os.path.join(work, "pow_mixed")
    os.makedirs(d, exist_ok=True)
    a32 = (rng.standard_normal((3, 4)) * 3).astype(np.float32)
    i32 = rng.integers(-3, 4, (3, 4)).astype(np.int32)
    b32 = rng.integers(1, 9, (3, 4)).astype(np.int32)
    f32 = rng.uniform(0.0, 2.5, (3, 4)).astype(np.float32)
    i64 = rng.integers(-6, 7, (3, 4)).astype(np.int64)
    e64 = rng.integers(0, 40, (3, 4)).astype(np.int64)
    nodes = [helper.make_node("Pow", ["A", "IE"], ["f_i"], name="Pow_f_i"),
             helper.make_node("Pow", ["B", "FE"], ["i_f"], name="Pow_i_f"),
             helper.make_node("Pow", ["L", "LE"], ["l_l"], name="Pow_l_l")]
    refs = {"f_i": (a32.astype(np.float64) ** i32.astype(np.float64)).astype(np.float32),
            "i_f": np.trunc(b32.astype(np.float64) ** f32.astype(np.float64)).astype(np.int32),
            "l_l": np.array([wrap(int(b) ** int(x), np.int64) for b, x in zip(i64.flat, e64.flat)],
                            np.int64).reshape(3, 4)}
    ins = [("A", a32), ("IE", i32), ("B", b32), ("FE", f32), ("L", i64), ("LE", e64)]
    got = run_forward(vcc, d, "pow_mixed", nodes, ins, [(n, r.dtype, r.shape) for n, r in refs.items()])
    for n, g in zip(refs, got):
        ok, note = same(g, refs[n])
        row("pow_mixed", n, ok, note)


def check_nan(vcc, work):
    d = os.path.join(work, "nan")
    os.makedirs(d, exist_ok=True)
    img = np.arange(24, dtype=np.float64).reshape(1, 1, 4, 6)
    img[0, 0, 1, 1] = np.nan
    x = np.array([1.0, np.nan, -9.0, 9.0])
    nodes = [helper.make_node("MaxPool", ["I"], ["mp"], name="MaxPool", kernel_shape=[2, 2], strides=[2, 2]),
             const("lo", np.array(-2.0)), const("hi", np.array(2.0)),
             helper.make_node("Clip", ["X", "lo", "hi"], ["clip"], name="Clip")]
    refs = {"mp": ref_maxpool_plain(img), "clip": np.array([1.0, np.nan, -2.0, 2.0])}
    got = run_forward(vcc, d, "nan", nodes, [("I", img), ("X", x)], [(n, r.dtype, r.shape) for n, r in refs.items()])
    for n, g in zip(refs, got):
        ok, note = same(g, refs[n])
        row("nan", n, ok, note)


def ref_maxpool_plain(x):
    """2x2 stride 2 max, NaN winning."""
    N, C, H, W = x.shape
    y = np.empty((N, C, H // 2, W // 2), x.dtype)
    for n, c, i, j in np.ndindex(*y.shape):
        w = x[n, c, 2 * i:2 * i + 2, 2 * j:2 * j + 2]
        y[n, c, i, j] = np.nan if np.isnan(w).any() else w.max()
    return y


def check_refusals(vcc, work):
    d = os.path.join(work, "refusals")
    os.makedirs(d, exist_ok=True)
    vi = helper.make_tensor_value_info
    cases = [
        ("add_int8_int16", [helper.make_node("Add", ["A", "B"], ["y"], name="add_mixed")],
         [vi("A", TensorProto.INT8, [3]), vi("B", TensorProto.INT16, [3])], vi("y", TensorProto.INT8, [3]), "add_mixed"),
        ("clip_float_bounds", [const("lo", np.array(-1.0, np.float32)),
                               helper.make_node("Clip", ["A", "lo"], ["y"], name="clip_int")],
         [vi("A", TensorProto.INT16, [3])], vi("y", TensorProto.INT16, [3]), "clip_int"),
        ("maxpool_indices", [helper.make_node("MaxPool", ["A"], ["y", "idx"], name="mp_idx", kernel_shape=[2])],
         [vi("A", TensorProto.INT8, [1, 1, 4])], vi("y", TensorProto.INT8, [1, 1, 3]), "mp_idx"),
    ]
    for name, nodes, ins, out, node in cases:
        path = os.path.join(d, name + ".onnx")
        outs = [out] + ([vi("idx", TensorProto.INT64, [1, 1, 3])] if name == "maxpool_indices" else [])
        g = helper.make_graph(nodes, name, ins, outs)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])
        m.ir_version = 9
        onnx.save(m, path)
        p = subprocess.run([vcc, path, "--forward-only", "-o", os.path.join(d, name + ".c")], capture_output=True,
                           text=True)
        ok = p.returncode == 1 and node in p.stderr and path in p.stderr and not os.path.exists(
            os.path.join(d, name + ".c"))
        row("refusals", name, ok, p.stderr.strip().splitlines()[0][-150:] if p.stderr.strip() else "no message")


def check_cuda(vcc, work, rng):
    d = os.path.join(work, "cuda")
    os.makedirs(d, exist_ok=True)
    nodes, ins, outs, _ = type_program(np.int16, rng)
    try:
        run_forward(vcc, d, "typed", nodes, ins, outs, target="cu")
        row("cuda", "nvcc build of every typed kernel (int16 program)", True, "no warnings")
    except RuntimeError as e:
        row("cuda", "nvcc build of every typed kernel (int16 program)", False, str(e)[:400])


def main():
    np.seterr(all="ignore")  # the float64 references divide and raise to powers as C does
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vcc", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--cuda", action="store_true")
    ap.add_argument("--cuda-one", action="store_true")
    args = ap.parse_args()
    vcc, work = os.path.abspath(args.vcc), os.path.abspath(args.work)
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(7)
    have_nvcc = shutil.which("nvcc") is not None
    if args.cuda_one:
        if not have_nvcc:
            print("skip: nvcc not found")
            return 77
        check_cuda(vcc, work, rng)
    else:
        for step in (check_types, check_pow_mixed, check_nan, check_refusals):
            try:
                step(vcc, work, rng) if step in (check_types, check_pow_mixed) else step(vcc, work)
            except Exception as e:  # a crash of vcc or of a program is a failed check
                row(step.__name__, "run", False, str(e)[:600])
        if args.cuda or have_nvcc:
            check_cuda(vcc, work, rng)
    print("%d failed%s" % (len(FAILED), (": " + "; ".join(FAILED)) if FAILED else ""))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
