"""The conv family in vcc's IR: bad attribute values of Conv and ConvTranspose are refused cleanly, and
ConvTranspose trainers' dumps round-trip. (Not a test_*.py: tests/ops/CMakeLists.txt runs those as
op_check.py case lists.)

    check_ir.py --vcc BUILD/vcc --roundtrip BUILD/tests/vir/vir_roundtrip --work DIR

  refusals  each model below has one node with one bad attribute value; `vcc --forward-only` must exit 1
            with every stderr line naming the model file, the first naming the node and its op, and the
            message naming the problem (no crash, no output file).
  dumps     a trainer with a Conv and a ConvTranspose (asymmetric, negative-from-output_shape pads):
            its IR after every pass round-trips through the .vir printer and reader (vir_roundtrip), and
            the program vcc writes from the memplan dump has the same step code as the one it writes
            from the ONNX file.
"""

import argparse
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

PASSES = ["onnx", "canonical", "shape", "fuse", "precision", "loss", "autodiff", "optimizer", "storage", "schedule",
          "liveness", "inplace",
          "memplan"]


def model(op, x, w, attrs, opset=17, bias=None):
    inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, list(x))]
    inits = [numpy_helper.from_array(np.zeros(w, np.float32), "W")]
    names = ["X", "W"]
    if bias:
        inits.append(numpy_helper.from_array(np.zeros(bias, np.float32), "B"))
        names.append("B")
    node = helper.make_node(op, names, ["Y"], name="bad_node", **attrs)
    g = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


# (name, op, X shape, W shape, attributes, bias shape, words the error must hold)
BAD = [
    ("conv_group", "Conv", (1, 4, 5, 5), (2, 3, 3, 3), {"group": 2}, None, ["group=2"]),
    ("conv_pads_count", "Conv", (1, 2, 5, 5), (2, 2, 3, 3), {"pads": [1, 1, 1]}, None, ["pads has 3 values"]),
    ("conv_negative_pad", "Conv", (1, 2, 5, 5), (2, 2, 3, 3), {"pads": [1, -1, 1, 1]}, None, ["pads must be"]),
    ("conv_auto_pad_value", "Conv", (1, 2, 5, 5), (2, 2, 3, 3), {"auto_pad": "SAME"}, None, ["auto_pad"]),
    ("conv_auto_pad_and_pads", "Conv", (1, 2, 5, 5), (2, 2, 3, 3), {"auto_pad": "VALID", "pads": [1, 1, 1, 1]},
     None, ["auto_pad=VALID and explicit pads"]),
    ("conv_zero_stride", "Conv", (1, 2, 5, 5), (2, 2, 3, 3), {"strides": [0, 1]}, None, ["strides"]),
    ("conv_kernel_shape", "Conv", (1, 2, 5, 5), (2, 2, 3, 3), {"kernel_shape": [3, 2]}, None, ["kernel_shape[1]=2"]),
    ("conv_bias_shape", "Conv", (1, 2, 5, 5), (2, 2, 3, 3), {}, (3,), ["bias has shape (3)"]),
    ("conv_too_big_kernel", "Conv", (1, 2, 2, 2), (2, 2, 3, 3), {}, None, ["kernel extent exceeds"]),
    ("convt_group", "ConvTranspose", (1, 4, 3, 3), (2, 2, 3, 3), {"group": 2}, None, ["group=2"]),
    ("convt_output_padding", "ConvTranspose", (1, 2, 3, 3), (2, 2, 3, 3),
     {"strides": [2, 2], "output_padding": [2, 0]}, None, ["output_padding[0]=2"]),
    ("convt_output_padding_count", "ConvTranspose", (1, 2, 3, 3), (2, 2, 3, 3), {"output_padding": [0]}, None,
     ["output_padding has 1 values"]),
    ("convt_output_shape_count", "ConvTranspose", (1, 2, 3, 3), (2, 2, 3, 3), {"output_shape": [5, 5, 5]}, None,
     ["output_shape has 3 values"]),
    ("convt_output_shape_zero", "ConvTranspose", (1, 2, 3, 3), (2, 2, 3, 3), {"output_shape": [0, 5]}, None,
     ["output size 0"]),
    ("convt_output_shape_batch", "ConvTranspose", (1, 2, 3, 3), (2, 2, 3, 3), {"output_shape": [2, 2, 5, 5]},
     None, ["output_shape begins with (2, 2)"]),
    ("convt_pads_no_output", "ConvTranspose", (1, 2, 2, 2), (2, 2, 2, 2), {"pads": [2, 0, 2, 0]}, None,
     ["output size -1"]),
    ("convt_bias_shape", "ConvTranspose", (1, 2, 3, 3), (2, 3, 3, 3), {}, (2,), ["bias has shape (2)"]),
    ("convt_auto_pad_and_pads", "ConvTranspose", (1, 2, 3, 3), (2, 2, 3, 3),
     {"auto_pad": "SAME_UPPER", "pads": [1, 1, 1, 1]}, None, ["auto_pad=SAME_UPPER and explicit pads"]),
    ("convt_rank", "ConvTranspose", (1, 2, 3, 3, 3, 3), (2, 2, 1, 1, 1, 1), {}, None, ["rank 6"]),
]


def check_refusals(vcc, work):
    failed = []
    for name, op, x, w, attrs, bias, words in BAD:
        d = os.path.join(work, name)
        os.makedirs(d)
        path = os.path.join(d, name + ".onnx")
        onnx.save(model(op, x, w, attrs, bias=bias), path)
        p = subprocess.run([vcc, path, "--forward-only", "-o", os.path.join(d, "fwd.c")], capture_output=True,
                           text=True)
        lines = p.stderr.strip().splitlines()
        why = None
        if p.returncode != 1:
            why = "exit status %d" % p.returncode
        elif not lines or not all(l.startswith(path) or l.startswith("  ") for l in lines):
            why = "a line does not name the model"
        elif not any("bad_node" in l for l in lines) or not any(op in l for l in lines):
            why = "no line names the node and its op"
        elif not all(any(wd in l for l in lines) for wd in words):
            why = "the message does not say %r" % words
        elif os.path.exists(os.path.join(d, "fwd.c")):
            why = "an output was left behind"
        print("%-30s %s  %s" % (name, "ok  " if not why else "FAIL", lines[0] if lines else "(no message)"))
        if why:
            failed.append("%s: %s" % (name, why))
    return failed


def check_dumps(vcc, roundtrip, work):
    d = os.path.join(work, "dumps")
    os.makedirs(d)
    rng = np.random.default_rng(0)
    f = lambda *s: numpy_helper.from_array(rng.standard_normal(s).astype(np.float32))  # noqa: E731
    inits = [f(4, 2, 3, 3), f(4, 3, 3, 2), f(6), f(5, 6), f(5)]
    for t, n in zip(inits, ["w0", "w1", "b1", "wg", "bg"]):
        t.name = n
    nodes = [helper.make_node("Conv", ["x", "w0"], ["h"], name="conv", auto_pad="SAME_UPPER", strides=[2, 2]),
             helper.make_node("ConvTranspose", ["h", "w1", "b1"], ["y"], name="convt", group=2, strides=[2, 3],
                              output_shape=[9, 12]),
             helper.make_node("GlobalAveragePool", ["y"], ["p"]),
             helper.make_node("Flatten", ["p"], ["q"]),
             helper.make_node("Gemm", ["q", "wg", "bg"], ["logits"], transB=1)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2, 7, 8])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [2, 5])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, os.path.join(d, "model.onnx"))
    failed = []
    for p in PASSES:
        vir = os.path.join(d, p + ".vir")
        with open(vir, "w") as out:
            r = subprocess.run([vcc, "model.onnx", "--dump-ir=" + p], cwd=d, stdout=out, stderr=subprocess.PIPE,
                               text=True)
        rt = subprocess.run([roundtrip, vir], capture_output=True, text=True)
        ok = r.returncode == 0 and rt.returncode == 0
        print("dump after %-10s %s  %s" % (p, "ok  " if ok else "FAIL", (rt.stdout + rt.stderr + r.stderr).strip()))
        if not ok:
            failed.append("dump after " + p)
    step = {}
    for src, out in (("model.onnx", "a.c"), ("memplan.vir", "b.c")):
        r = subprocess.run([vcc, src, "-o", out], cwd=d, capture_output=True, text=True)
        text = open(os.path.join(d, out)).read() if r.returncode == 0 else ""
        step[src] = text[text.find("static void vcc_step_0"):text.find("int main(")]
    same = step["model.onnx"] and step["model.onnx"] == step["memplan.vir"]
    print("program from the memplan dump   %s" % ("ok   same step code" if same else "FAIL"))
    if not same:
        failed.append("the program from the memplan dump differs")
    return failed


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vcc", required=True)
    ap.add_argument("--roundtrip", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    work = os.path.abspath(args.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    vcc = os.path.abspath(args.vcc)
    failed = check_refusals(vcc, work) + check_dumps(vcc, os.path.abspath(args.roundtrip), work)
    if failed:
        sys.exit("FAIL: " + "; ".join(failed))
    print("PASS")


if __name__ == "__main__":
    main()
