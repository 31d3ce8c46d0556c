"""Empty tensors (a dim of 0) in --forward-only programs, which ONNX lets a graph hold: what vcc computes
it checks against onnxruntime; what ONNX leaves undefined, or what vcc's kernels do not take, is refused
with an error naming the node.

    test_empty_tensors.py --vcc BUILD/vcc --work DIR

  concat_empty     Concat of (2, 0, 3) and (2, 4, 3) along axis 1
  sum_empty        ReduceSum of (2, 0, 3) over axis 1: zeros (ONNX: the sum of an empty set is 0)
  max_empty18      ReduceMax (opset 18) of (2, 0, 3), every axis: -inf (ONNX's operator text; computed here)
  relu_empty       Relu of (2, 0, 3): an empty output, nothing to compute
  split_empty      Split of (4, 0) into (2, 0) and (2, 0)
  reshape_scalar   Reshape of (1, 1) by the empty shape () into a scalar: an empty constant input is no
                   empty data
  refused          ReduceMax before opset 18 and ReduceMean of an empty set (undefined in ONNX), MatMul of
                   (2, 0) by (0, 3), Pad of an empty input: exit 1, the node named, no output file
A trainer still needs every input dim to be at least 1. Prints one line per check; exits 1 if any failed.
"""

import argparse
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

FAILED = []


def row(name, ok, note):
    print("%-14s %s  %s" % (name, "ok" if ok else "FAIL", note))
    if not ok:
        FAILED.append(name)


def model(d, name, nodes, ins, outs, opset):
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in ins],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outs])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    path = os.path.join(d, name + ".onnx")
    onnx.save(m, path)
    return path


def compile_run(vcc, d, name, path, ins, outs, rng):
    p = subprocess.run([vcc, path, "--forward-only", "-o", os.path.join(d, name + ".c")], capture_output=True,
                       text=True, cwd=d)
    if p.returncode:
        return None, p
    subprocess.run(p.stdout.strip().splitlines()[-1], shell=True, check=True, cwd=d, capture_output=True)
    feeds = {}
    for n, s in ins:
        feeds[n] = rng.standard_normal(s).astype(np.float32)
        np.save(os.path.join(d, n + ".npy"), feeds[n])
    subprocess.run([os.path.join(d, name)] + [n + ".npy" for n, _ in ins] + ["-o"] + [o + ".npy" for o in outs],
                   check=True, cwd=d, capture_output=True)
    return [np.load(os.path.join(d, o + ".npy")) for o in outs], feeds


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vcc", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    vcc, d = os.path.abspath(a.vcc), os.path.abspath(a.work)
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(3)
    N = helper.make_node
    computed = [
        ("concat_empty", [N("Concat", ["a", "b"], ["y"], axis=1)], [("a", [2, 0, 3]), ("b", [2, 4, 3])], ["y"], 17, None),
        ("sum_empty", [N("ReduceSum", ["a"], ["y"])], [("a", [2, 0, 3])], ["y"], 11, None),
        ("max_empty18", [N("ReduceMax", ["a"], ["y"])], [("a", [2, 0, 3])], ["y"], 18,
         [np.full((1, 1, 1), -np.inf, np.float32)]),
        ("relu_empty", [N("Relu", ["a"], ["y"])], [("a", [2, 0, 3])], ["y"], 17, None),
        ("split_empty", [N("Split", ["a"], ["y", "z"], axis=0)], [("a", [4, 0])], ["y", "z"], 17, None),
        ("reshape_scalar", [N("Constant", [], ["s"], value=helper.make_tensor("s", TensorProto.INT64, [0], [])),
                            N("Relu", ["a"], ["r"]), N("Reshape", ["r", "s"], ["y"])], [("a", [1, 1])], ["y"], 17,
         None),
    ]
    for name, nodes, ins, outs, opset, want in computed:
        try:
            path = model(d, name, nodes, ins, outs, opset)
            got, feeds = compile_run(vcc, d, name, path, ins, outs, rng)
            if got is None:
                row(name, False, "refused: " + feeds.stderr.strip()[:200])
                continue
            if want is None:
                want = ort.InferenceSession(path).run(None, feeds)
            ok = all(g.shape == w.shape and np.array_equal(g, w) for g, w in zip(got, want))
            row(name, ok, "shapes %s, want %s" % ([g.shape for g in got], [w.shape for w in want]))
        except Exception as e:  # a crash of vcc or of a program is a failed check
            row(name, False, str(e)[:300])
    refused = [
        ("max_empty17", [N("ReduceMax", ["a"], ["y"], axes=[1])], [("a", [2, 0, 3])], 17, "ReduceMax_0"),
        ("mean_empty", [N("ReduceMean", ["a"], ["y"], axes=[1], name="mean")], [("a", [2, 0, 3])], 17, "mean"),
        ("matmul_empty", [N("MatMul", ["a", "b"], ["y"], name="mm")], [("a", [2, 0]), ("b", [0, 3])], 17, "mm"),
        ("pad_empty", [N("Pad", ["a"], ["y"], pads=[0, 1, 0, 1], name="pad")], [("a", [2, 0])], 10, "pad"),
    ]
    for name, nodes, ins, opset, node in refused:
        for n in nodes:
            n.name = n.name or node
        path = model(d, name, nodes, ins, ["y"], opset)
        out = os.path.join(d, name + ".c")
        p = subprocess.run([vcc, path, "--forward-only", "-o", out], capture_output=True, text=True, cwd=d)
        ok = p.returncode == 1 and ("'%s'" % node) in p.stderr and path in p.stderr and not os.path.exists(out)
        row(name, ok, p.stderr.strip()[-160:])
    print("%d failed%s" % (len(FAILED), (": " + ", ".join(FAILED)) if FAILED else ""))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
