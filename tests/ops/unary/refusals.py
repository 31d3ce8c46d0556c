"""The unary family refuses what it does not support cleanly: exit status 1, one report whose first line
names the model file, the node and op named with the reason, nothing written.

    refusals.py --vcc BUILD/vcc --work DIR

  clip_min_input       Clip (opset 13) whose min is a graph input: vcc reads the bounds at compile time
  clip_min_attribute   Clip (opset 13) with a min attribute: it exists in opsets 1-10 only
  clip_nan_bound       Clip (opset 13) with a NaN max constant
  clip_int_bound       Clip (opset 13) of float32 X with an int64 min constant: the bounds have X's type
  clip6_nan_attribute  Clip (opset 6) with min=NaN
  hardsigmoid_inf      HardSigmoid alpha=inf: alpha and beta must be finite
  leakyrelu_nan        LeakyRelu alpha=NaN
  elu_inf              Elu alpha=-inf
  hardswish_alpha      HardSwish with an alpha attribute: the op has none
  sigmoid_int64        Sigmoid of an int64 input: the family computes float32
  gelu_approximate     Gelu (opset 20) with approximate="erf": ONNX defines "none" and "tanh"
"""

import argparse
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

NAN, INF = float("nan"), float("inf")


def model(path, op, opset, attrs=None, consts=None, inputs=None, dtype=TensorProto.FLOAT):
    """One node '/op' of op on X (2, 3) and, in order, the constants consts (name -> array) and graph inputs
    inputs (name -> ONNX type); '' skips an optional input."""
    names = ["X"] + [n for n in (consts or {})] + [n for n in (inputs or {})]
    node = helper.make_node(op, names, ["Y"], name="/op", **(attrs or {}))
    inits = [numpy_helper.from_array(v, n) for n, v in (consts or {}).items()]
    g_in = [helper.make_tensor_value_info("X", dtype, [2, 3])]
    g_in += [helper.make_tensor_value_info(n, t, []) for n, t in (inputs or {}).items()]
    m = helper.make_model(helper.make_graph([node], "m", g_in, [helper.make_tensor_value_info("Y", dtype, [2, 3])],
                                            inits), opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8 if opset >= 9 else 3
    onnx.save(m, path)


CASES = [
    ("clip_min_input", dict(op="Clip", opset=13, inputs={"lo": TensorProto.FLOAT}),
     ["Clip input 'min'", "must be a constant"]),
    ("clip_min_attribute", dict(op="Clip", opset=13, attrs={"min": 0.0}), ["Clip attribute 'min'", "opsets 1-10"]),
    ("clip_nan_bound", dict(op="Clip", opset=13, consts={"lo": np.array(0, np.float32), "hi": np.array(NAN, np.float32)}),
     ["Clip input 'max'", "is NaN"]),
    ("clip_int_bound", dict(op="Clip", opset=13, consts={"lo": np.array(0, np.int64)}),
     ["(Clip): input 'min' must have the type of X (f32)"]),
    ("clip6_nan_attribute", dict(op="Clip", opset=6, attrs={"min": NAN}), ["Clip attribute 'min'", "is NaN"]),
    ("hardsigmoid_inf", dict(op="HardSigmoid", opset=6, attrs={"alpha": INF}),
     ["HardSigmoid attribute 'alpha'", "finite"]),
    ("leakyrelu_nan", dict(op="LeakyRelu", opset=16, attrs={"alpha": NAN}), ["LeakyRelu attribute 'alpha'", "finite"]),
    ("elu_inf", dict(op="Elu", opset=6, attrs={"alpha": -INF}), ["Elu attribute 'alpha'", "finite"]),
    ("hardswish_alpha", dict(op="HardSwish", opset=14, attrs={"alpha": 0.5}),
     ["HardSwish attribute 'alpha'", "not an attribute vcc knows"]),
    ("sigmoid_int64", dict(op="Sigmoid", opset=13, dtype=TensorProto.INT64), ["(Sigmoid)", "i64", "expected f32"]),
    ("gelu_approximate", dict(op="Gelu", opset=20, attrs={"approximate": "erf"}),
     ["Gelu attribute 'approximate'", "must be \"none\" or \"tanh\""]),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vcc", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    failed = []
    for name, kw, words in CASES:
        path = os.path.join(os.path.abspath(args.work), name + ".onnx")
        out = os.path.join(os.path.abspath(args.work), name + ".c")
        if os.path.exists(out):
            os.remove(out)
        model(path, **kw)
        p = subprocess.run([os.path.abspath(args.vcc), path, "--forward-only", "-o", out], capture_output=True,
                           text=True)
        lines = p.stderr.strip().splitlines()
        missing = [w for w in words + ["'/op'"] if w not in p.stderr]
        ok = p.returncode == 1 and lines and lines[0].startswith(path) and not missing and not os.path.exists(out)
        print("%-22s %s  %s" % (name, "ok  " if ok else "FAIL", " | ".join(l.strip() for l in lines)[:160]))
        if not ok:
            print("    exit %d, missing %s" % (p.returncode, missing))
            failed.append(name)
    print("%d cases, %d failed%s" % (len(CASES), len(failed), (": " + ", ".join(failed)) if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
