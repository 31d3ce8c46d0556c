"""The dropout family's random ops (ir/ops/dropout.c, runtime/elem/dropout.h vcc_random_value):
RandomUniformLike and RandomNormalLike, and Floor's zero gradient in the stochastic depth they serve,
checked by property (vcc draws from Philox4x32-10, PyTorch from its own generator: no values to compare).

    test_random.py --vcc BUILD/vcc --work DIR [--cuda]

  uniform        RandomUniformLike(low -2, high 3) over 262144 elements of a --forward-only program:
                 every value in [low, high); the Kolmogorov-Smirnov distance to the uniform law below
                 1.95 / sqrt(n) (a 0.1% false alarm); the mean within 5 standard deviations
  normal         RandomNormalLike(mean 1, scale 2): the Kolmogorov-Smirnov distance to N(1, 4) below
                 1.95 / sqrt(n); the mean and the standard deviation within 5 of their standard errors
  seeds          the same --seed draws the same values, another seed other ones; two nodes of one graph
                 draw different values; a node's ONNX seed attribute keys its draws whatever --seed
  dtype          dtype 1 (FLOAT) on an int64 input's shape is drawn; another dtype is refused, naming the
                 node, the op and the attribute
  stochastic     a trainer of loss = mean((W * Floor(RandomUniformLike(W) + keep) / keep)^2), keep 0.7,
                 --loss graph, one step with --save-grads: every dW is 0 or 2 W / (keep^2 n) (Floor passes
                 no gradient, the mask 0 or 1), and the kept fraction is within 5 standard deviations of
                 keep
  cuda           (--cuda, or whenever nvcc is found) the forward and trainer .cu programs build with nvcc
                 with no warnings

Prints one line per check with its figure; exits 1 if any failed.
"""

import argparse
import math
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from safetensors.numpy import load_file

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import op_check as oc  # noqa: E402

F32 = np.float32
SHAPE = (64, 4096)
FAILED = []


def row(name, what, value, ok, note=""):
    print("%-12s %-52s %10.3g %s  %s" % (name, what, value, "ok" if ok else "FAIL", note))
    if not ok:
        FAILED.append("%s: %s" % (name, what))


def model(path, nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "random", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.save(m, path)


def fvi(name, shape, t=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, t, list(shape))


def forward(vcc, d, nodes, outs, seed=None, build=True, x_type=TensorProto.FLOAT):
    """Build (once) and run a --forward-only program of nodes on input X of SHAPE; returns its outputs."""
    if build:
        model(os.path.join(d, "fwd.onnx"), nodes, [fvi("X", SHAPE, x_type)], [fvi(o, SHAPE) for o in outs])
        oc._build(vcc, "fwd.onnx", "fwd.c", d, ["--forward-only"])
    x = np.zeros(SHAPE, np.int64 if x_type == TensorProto.INT64 else F32)
    np.save(os.path.join(d, "x.npy"), x)
    oc._run(["./fwd", "x.npy", "-o"] + [o + ".npy" for o in outs] + (["--seed", str(seed)] if seed is not None else []),
            d)
    return [np.load(os.path.join(d, o + ".npy")) for o in outs]


def ks_uniform(v, lo, hi):
    s = np.sort(v.astype(np.float64).ravel())
    n = s.size
    f = (s - lo) / (hi - lo)
    return max(float(np.max(np.arange(1, n + 1) / n - f)), float(np.max(f - np.arange(n) / n)))


def ks_normal(v, mean, std):
    s = np.sort(v.astype(np.float64).ravel())
    n = s.size
    f = 0.5 * (1.0 + np.vectorize(math.erf)((s - mean) / (std * math.sqrt(2.0))))
    return max(float(np.max(np.arange(1, n + 1) / n - f)), float(np.max(f - np.arange(n) / n)))


def uniform(vcc, d):
    (y,) = forward(vcc, d, [helper.make_node("RandomUniformLike", ["X"], ["Y"], low=-2.0, high=3.0)], ["Y"])
    n = y.size
    row("uniform", "values outside [-2, 3)", float(((y < -2) | (y >= 3)).sum()), bool(((y >= -2) & (y < 3)).all()))
    ks = ks_uniform(y, -2.0, 3.0)
    row("uniform", "KS distance to U(-2, 3) (limit %.2e)" % (1.95 / math.sqrt(n)), ks, ks < 1.95 / math.sqrt(n))
    z = abs(float(y.astype(np.float64).mean()) - 0.5) / (5.0 / math.sqrt(12.0 * n))
    row("uniform", "|mean - 0.5| in standard errors", z, z < 5)


def normal(vcc, d):
    (y,) = forward(vcc, d, [helper.make_node("RandomNormalLike", ["X"], ["Y"], mean=1.0, scale=2.0)], ["Y"])
    n = y.size
    ks = ks_normal(y, 1.0, 2.0)
    row("normal", "KS distance to N(1, 4) (limit %.2e)" % (1.95 / math.sqrt(n)), ks, ks < 1.95 / math.sqrt(n))
    z = abs(float(y.astype(np.float64).mean()) - 1.0) / (2.0 / math.sqrt(n))
    row("normal", "|mean - 1| in standard errors", z, z < 5)
    z = abs(float(y.astype(np.float64).std()) - 2.0) / (2.0 / math.sqrt(2.0 * n))
    row("normal", "|std - 2| in standard errors", z, z < 5)


def seeds(vcc, d):
    nodes = [helper.make_node("RandomUniformLike", ["X"], ["A"]), helper.make_node("RandomUniformLike", ["X"], ["B"]),
             helper.make_node("RandomNormalLike", ["X"], ["C"], seed=11.0)]
    a0, b0, c0 = forward(vcc, d, nodes, ["A", "B", "C"], seed=3)
    a1, _, c1 = forward(vcc, d, nodes, ["A", "B", "C"], seed=3, build=False)
    a2, _, c2 = forward(vcc, d, nodes, ["A", "B", "C"], seed=4, build=False)
    row("seeds", "same --seed: values that differ", float((a0 != a1).sum() + (c0 != c1).sum()),
        bool((a0 == a1).all() and (c0 == c1).all()))
    row("seeds", "another --seed: fraction of equal values", float((a0 == a2).mean()), float((a0 == a2).mean()) < 1e-3)
    row("seeds", "two nodes, one seed: fraction of equal values", float((a0 == b0).mean()), float((a0 == b0).mean()) < 1e-3)
    row("seeds", "seed attribute: values another --seed changes", float((c0 != c2).sum()), bool((c0 == c2).all()))


def dtypes(vcc, d):
    (y,) = forward(vcc, d, [helper.make_node("RandomUniformLike", ["X"], ["Y"], dtype=1)], ["Y"], x_type=TensorProto.INT64)
    row("dtype", "FLOAT draws on an int64 input's shape: outside [0, 1)", float(((y < 0) | (y >= 1)).sum()),
        y.dtype == F32 and y.shape == SHAPE and bool(((y >= 0) & (y < 1)).all()))
    path = os.path.join(d, "bad.onnx")
    model(path, [helper.make_node("RandomUniformLike", ["X"], ["Y"], dtype=11, name="draw")], [fvi("X", SHAPE)],
          [fvi("Y", SHAPE, TensorProto.DOUBLE)])
    p = subprocess.run([vcc, path, "--forward-only", "-o", os.path.join(d, "bad.c")], capture_output=True, text=True)
    ok = p.returncode == 1 and all(w in p.stderr for w in ("'draw'", "RandomUniformLike", "dtype")) and \
        not os.path.exists(os.path.join(d, "bad.c"))
    row("dtype", "dtype DOUBLE refused cleanly", float(p.returncode), ok, p.stderr.strip().splitlines()[-1][:120]
        if p.stderr.strip() else "")


def sd_model(path, shape, keep):
    nodes = [helper.make_node("RandomUniformLike", ["W"], ["U"]), helper.make_node("Add", ["U", "keep"], ["S"]),
             helper.make_node("Floor", ["S"], ["M"]), helper.make_node("Mul", ["W", "M"], ["WM"]),
             helper.make_node("Div", ["WM", "keep"], ["Y"]), helper.make_node("Mul", ["Y", "Y"], ["Y2"]),
             helper.make_node("ReduceMean", ["Y2"], ["L"], keepdims=0)]
    w = np.random.default_rng(5).uniform(0.5, 1.5, shape).astype(F32)
    inits = [numpy_helper.from_array(w, "W")]
    keep_c = helper.make_node("Constant", [], ["keep"], value=numpy_helper.from_array(np.array(keep, F32)))
    model(path, [keep_c] + nodes, [fvi("data", (1,))], [fvi("L", ())], inits)
    return w


def stochastic(vcc, d, cuda):
    keep, shape = 0.7, (16, 1024)
    w = sd_model(os.path.join(d, "sd.onnx"), shape, keep)
    train = oc._build(vcc, "sd.onnx", "sd.c", d, ["--loss", "graph", "--keep-grads"])
    np.save(os.path.join(d, "data.npy"), np.zeros((1,), F32))
    oc._run([train, "--data", "data.npy", "--lr", "0", "--save-grads", "g.safetensors", "--seed", "2"], d)
    g = load_file(os.path.join(d, "g.safetensors"))["W"].astype(np.float64)
    full = 2.0 * w.astype(np.float64) / (keep * keep * w.size)
    kept = np.abs(g - full) <= 1e-5 * np.abs(full)
    zero = g == 0
    row("stochastic", "dW neither 0 nor 2W/(keep^2 n) (count)", float((~(kept | zero)).sum()), bool((kept | zero).all()))
    z = abs(float(kept.mean()) - keep) / math.sqrt(keep * (1 - keep) / w.size)
    row("stochastic", "kept fraction %.4f, |f - keep| in std errors" % kept.mean(), z, z < 5)
    if cuda:
        for what, out, extra in (("the stochastic-depth trainer", "sd.cu", ["--loss", "graph"]),
                                 ("its forward program", "sd_fwd.cu", ["--forward-only"])):
            try:
                oc._build(vcc, "sd.onnx", out, d, extra, fast=False)
                row("cuda", "nvcc build of " + what, 0.0, True, "no warnings")
            except RuntimeError as e:
                row("cuda", "nvcc build of " + what, float("inf"), False, str(e)[:300])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vcc", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--cuda", action="store_true")
    args = ap.parse_args()
    vcc, work = os.path.abspath(args.vcc), os.path.abspath(args.work)
    for step in (uniform, normal, seeds, dtypes):
        d = os.path.join(work, step.__name__)
        os.makedirs(d, exist_ok=True)
        try:
            step(vcc, d)
        except Exception as e:  # a crash of vcc or of a program is a failed check
            row(step.__name__, "run", float("inf"), False, str(e)[:600])
    d = os.path.join(work, "stochastic")
    os.makedirs(d, exist_ok=True)
    try:
        stochastic(vcc, d, args.cuda or shutil.which("nvcc") is not None)
    except Exception as e:
        row("stochastic", "run", float("inf"), False, str(e)[:600])
    print("%d failed%s" % (len(FAILED), (": " + "; ".join(FAILED)) if FAILED else ""))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
