"""Op rules follow the node's opset: each form is computed as its opset defines it, or refused with the
true reason.

    test_opset_forms.py --vcc BUILD/vcc --work DIR

Small models of one BatchNormalization (X (2, 3, 4, 5)), Reshape or Flatten, in opset forms whose
meaning changed between versions. "match" cases compile with `vcc --forward-only`, build with the
printed command and -Wall -Wextra -Werror, run, and every output is compared with onnxruntime (graph
optimizations off) to 1e-5, or with numpy where onnxruntime has no kernel for the opset; "refuse" cases must exit 1 with a message that names the
node and says the given reason (and never says "for training" under --forward-only). The trainer
(no --forward-only) of the inference-form models must be refused as inference-form exports.

  bn9_train     opset 9, five outputs: the training form of opsets 7-13 (batch statistics; outputs Y,
                running mean, running var with the biased batch variance, saved mean, saved inverse std,
                as onnxruntime computes them)
  bn9_infer     opset 9, one output: the inference form (the given mean and var)
  bn15_infer    opset 15, training_mode=0: the inference form
  bn6_test      opset 6, is_test=1, one output: the inference form of opset 6
  bn6_train     opset 6, is_test=0: refused (the training form before opset 7 is not supported)
  bn7_spatial0  opset 7, spatial=0: refused (per-activation statistics)
  bn9_mode      opset 9 with a training_mode attribute: refused (the attribute exists from opset 14)
  reshape4      opset 4, Reshape with the shape as an attribute: matched against numpy
  flatten9_neg  opset 9, Flatten axis=-1: refused (negative axes need opset 11)
  bool_const    opset 17, a BOOL Constant (Dropout's training flag) nothing reads, beside a Relu: the program
                builds and runs (constants are compiled in at their own element size)
"""

import argparse
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

X = (2, 3, 4, 5)


def bn_model(opset, outputs, **attrs):
    rng = np.random.default_rng(opset)
    c = X[1]
    inits = [numpy_helper.from_array(rng.uniform(0.5, 1.5, c).astype(np.float32), "bn.weight"),
             numpy_helper.from_array(rng.standard_normal(c).astype(np.float32), "bn.bias"),
             numpy_helper.from_array(rng.standard_normal(c).astype(np.float32), "bn.running_mean"),
             numpy_helper.from_array(rng.uniform(0.5, 1.5, c).astype(np.float32), "bn.running_var")]
    node = helper.make_node("BatchNormalization", ["x", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"],
                            outputs, name="/bn", epsilon=1e-5, momentum=0.9, **attrs)
    shapes = {"y": list(X)}
    g = helper.make_graph([node], "bn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(X))],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, shapes.get(o, [c])) for o in outputs],
                          inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 7 if opset >= 9 else 3
    return m


def simple_model(opset, node, out_shape):
    g = helper.make_graph([node], "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(X))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 3
    return m


CASES = [
    ("bn9_train", lambda: bn_model(9, ["y", "rm", "rv", "sm", "sv"]), "ort", None),
    ("bn9_infer", lambda: bn_model(9, ["y"]), "ort", None),
    ("bn15_infer", lambda: bn_model(15, ["y"], training_mode=0), "ort", None),
    ("bn6_test", lambda: bn_model(6, ["y"], is_test=1), "numpy_bn", None),
    ("bn6_train", lambda: bn_model(6, ["y", "rm", "rv", "sm", "sv"], is_test=0), None,
     ["'/bn'", "BatchNormalization of opset 6 with is_test=0", "before opset 7 is not supported"]),
    ("bn7_spatial0", lambda: bn_model(7, ["y", "rm", "rv", "sm", "sv"], spatial=0), None,
     ["'/bn'", "spatial=0", "per-activation statistics"]),
    ("bn9_mode", lambda: bn_model(9, ["y", "rm", "rv", "sm", "sv"], training_mode=1), None,
     ["'/bn'", "training_mode", "exists from opset 14", "imports opset 9"]),
    ("reshape4", lambda: simple_model(4, helper.make_node("Reshape", ["x"], ["y"], name="/r", shape=[2, 3, 20]),
                                       [2, 3, 20]), "numpy_reshape", None),
    ("flatten9_neg", lambda: simple_model(9, helper.make_node("Flatten", ["x"], ["y"], name="/f", axis=-1),
                                           [24, 5]), None, ["'/f'", "negative axes need opset 11"]),
    ("bool_const", lambda: bool_const_model(), "ort", None),
]


def bool_const_model():
    flag = helper.make_node("Constant", [], ["flag"], name="/flag",
                            value=helper.make_tensor("v", TensorProto.BOOL, [], [True]))
    m = simple_model(17, helper.make_node("Relu", ["x"], ["y"], name="/relu"), list(X))
    m.graph.node.insert(0, flag)
    m.ir_version = 8
    return m


def numpy_ref(kind, model, x):
    if kind == "numpy_reshape":
        return [x.reshape(2, 3, 20)]
    w = {i.name: numpy_helper.to_array(i).astype(np.float64) for i in model.graph.initializer}
    sh = (1, -1, 1, 1)
    y = (x - w["bn.running_mean"].reshape(sh)) / np.sqrt(w["bn.running_var"].reshape(sh) + 1e-5)
    return [(y * w["bn.weight"].reshape(sh) + w["bn.bias"].reshape(sh)).astype(np.float32)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vcc", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    vcc = os.path.abspath(args.vcc)
    fails = 0
    x = np.random.default_rng(7).standard_normal(X).astype(np.float32)
    for name, make, ref_kind, words in CASES:
        d = os.path.join(os.path.abspath(args.work), name)
        os.makedirs(d, exist_ok=True)
        m = make()
        path = os.path.join(d, "model.onnx")
        onnx.save(m, path)
        outs = [o.name for o in m.graph.output]
        p = subprocess.run([vcc, path, "--forward-only", "-o", os.path.join(d, "fwd.c")], capture_output=True,
                           text=True)
        if words is not None:
            ok = p.returncode == 1 and all(w in p.stderr for w in words) and "for training" not in p.stderr \
                and not os.path.exists(os.path.join(d, "fwd.c"))
            fails += not ok
            print("%-13s refused: %s\n              %s" % (name, "ok" if ok else "FAIL (exit %d)" % p.returncode,
                                                          p.stderr.strip().replace("\n", "\n              ")))
            continue
        if p.returncode:
            fails += 1
            print("%-13s FAIL: refused: %s" % (name, p.stderr.strip()))
            continue
        build = p.stdout.strip()
        np.save(os.path.join(d, "x.npy"), x)
        # the printed command, warnings as errors: the generated C must compile cleanly
        b = subprocess.run(build + " -Wall -Wextra -Werror", shell=True, cwd=os.getcwd(), capture_output=True, text=True)
        r = subprocess.run([os.path.join(d, "fwd"), os.path.join(d, "x.npy"), "-o"] +
                           [os.path.join(d, o + ".npy") for o in outs], capture_output=True, text=True)
        if b.returncode or r.returncode:
            fails += 1
            print("%-13s FAIL: build/run: %s%s" % (name, b.stderr, r.stderr))
            continue
        if ref_kind == "ort":
            so = ort.SessionOptions()
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            ref = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(outs, {"x": x})
        else:
            ref = numpy_ref(ref_kind, m, x)
        errs = []
        for o, want in zip(outs, ref):
            got = np.load(os.path.join(d, o + ".npy"))
            errs.append(float(np.abs(got.astype(np.float64) - want).max()) if got.shape == want.shape else np.inf)
        ok = max(errs) <= 1e-5
        fails += not ok
        print("%-13s matches %s: %s  max abs error per output %s" % (
            name, "onnxruntime" if ref_kind == "ort" else "numpy", "ok" if ok else "FAIL",
            " ".join("%s %.2g" % (o, e) for o, e in zip(outs, errs))))
        if name.startswith("bn") and "infer" in name or name == "bn6_test":
            t = subprocess.run([vcc, path], capture_output=True, text=True)
            ok = t.returncode == 1 and "inference mode" in t.stderr
            fails += not ok
            print("%-13s as a trainer: %s" % (name, "refused as an inference-form export" if ok else
                                                 "FAIL: " + t.stderr.strip()))
    print("FAIL" if fails else "PASS")
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
