"""Inference-form exports are refused when compiling a trainer, with the export call that works.

    test_inference_export.py --vcc BUILD/vcc --work DIR

  r3d_18_default  torchvision r3d_18 exported with torch.onnx.export's defaults (eval mode, constant
                  folding): BatchNormalization is folded into 20 convolutions whose weights the exporter
                  named ("onnx::Conv_192"). The trainer must be refused, the message naming what was
                  found and giving the training export call; --forward-only must accept the file (an
                  inference graph is what it evaluates) and --allow-inference-export must compile the
                  trainer of the graph as it is.
  dropout_eval    Conv, Dropout (opset 13) without a training_mode input, i.e. in inference mode: the
                  report names the Dropout as an inference-form sign; --allow-inference-export compiles the
                  trainer (the Dropout is then a view of its input).
  exporter_names  a Gemm whose weight is named "onnx::Gemm_7": a parameter the exporter made up.
  bn_mode0        BatchNormalization training_mode=0 (opset 15): refused as an inference-form sign;
                  --allow-inference-export compiles the trainer (frozen statistics: its running mean and
                  variance become buffers the trainer does not change).
"""

import argparse
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HINT = ["TrainingMode.TRAINING", "do_constant_folding=False", "export_for_training", "--allow-inference-export"]


def small(nodes, inits, opset=15, out_shape=(2, 4)):
    g = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(out_shape))], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def vcc_run(vcc, *args):
    return subprocess.run([vcc] + list(args), capture_output=True, text=True)


def expect(label, p, rc, words, fails, absent=()):
    ok = p.returncode == rc and all(w in p.stderr for w in words) and not any(w in p.stderr for w in absent)
    print("%-4s %s (exit %d)" % ("ok" if ok else "FAIL", label, p.returncode))
    if not ok or label.endswith("refused"):
        print("     " + p.stderr.strip().replace("\n", "\n     "))
    if not ok:
        fails.append(label)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vcc", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    vcc = os.path.abspath(args.vcc)
    work = os.path.abspath(args.work)
    os.makedirs(work, exist_ok=True)
    fails = []
    rng = np.random.default_rng(0)

    import torch
    import torchvision
    torch.manual_seed(0)
    r3d = os.path.join(work, "r3d_18_default.onnx")
    torch.onnx.export(torchvision.models.video.r3d_18(), torch.randn(2, 3, 8, 56, 56), r3d)
    p = vcc_run(vcc, r3d, "-o", os.path.join(work, "train.c"))
    expect("r3d_18 default export: trainer refused", p, 1,
           ["Conv with BatchNormalization folded in", "x20", "onnx::Conv_"] + HINT, fails)
    left = [f for f in os.listdir(work) if f.startswith("train")]
    print("%-4s r3d_18 default export: nothing written%s" % ("FAIL" if left else "ok", " (left %s)" % left if left else ""))
    if left:
        fails.append("files left behind")
    p = vcc_run(vcc, r3d, "--forward-only")
    expect("r3d_18 default export: --forward-only accepts it", p, 0, [], fails)
    p = vcc_run(vcc, r3d, "--allow-inference-export")
    expect("r3d_18 default export: --allow-inference-export compiles the trainer", p, 0, [], fails)

    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "conv.weight")
    nodes = [helper.make_node("Conv", ["x", "conv.weight"], ["c"], name="/conv", pads=[1, 1, 1, 1]),
             helper.make_node("Dropout", ["c"], ["d"], name="/drop"),
             helper.make_node("GlobalAveragePool", ["d"], ["g"], name="/gap"),
             helper.make_node("Flatten", ["g"], ["y"], name="/flat")]
    m = small(nodes, [w], opset=13)
    path = os.path.join(work, "dropout_eval.onnx")
    onnx.save(m, path)
    expect("Dropout in inference mode: refused", vcc_run(vcc, path), 1,
           ["Dropout in inference mode", "'/drop'"] + HINT, fails)
    expect("Dropout in inference mode: --allow-inference-export", vcc_run(vcc, path, "--allow-inference-export"), 0,
           [], fails)

    fcw = numpy_helper.from_array(rng.standard_normal((4, 3)).astype(np.float32), "onnx::Gemm_7")
    fcb = numpy_helper.from_array(np.zeros(4, np.float32), "fc.bias")
    nodes = [helper.make_node("GlobalAveragePool", ["x"], ["g"], name="/gap"),
             helper.make_node("Flatten", ["g"], ["f"], name="/flat"),
             helper.make_node("Gemm", ["f", "onnx::Gemm_7", "fc.bias"], ["y"], name="/fc", transB=1)]
    path = os.path.join(work, "exporter_names.onnx")
    onnx.save(small(nodes, [fcw, fcb]), path)
    expect("exporter-named parameter: refused", vcc_run(vcc, path), 1,
           ["parameters with exporter-generated names", "'onnx::Gemm_7'"] + HINT, fails)
    expect("exporter-named parameter: --allow-inference-export", vcc_run(vcc, path, "--allow-inference-export"), 0,
           [], fails)

    c = 3
    bn_init = [numpy_helper.from_array(v.astype(np.float32), n) for n, v in (
        ("bn.weight", np.ones(c)), ("bn.bias", np.zeros(c)), ("bn.running_mean", np.zeros(c)),
        ("bn.running_var", np.ones(c)))] + [fcw, fcb]
    nodes = [helper.make_node("BatchNormalization", ["x", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"],
                              ["b"], name="/bn", training_mode=0),
             helper.make_node("GlobalAveragePool", ["b"], ["g"], name="/gap"),
             helper.make_node("Flatten", ["g"], ["f"], name="/flat"),
             helper.make_node("Gemm", ["f", "onnx::Gemm_7", "fc.bias"], ["y"], name="/fc", transB=1)]
    path = os.path.join(work, "bn_mode0.onnx")
    onnx.save(small(nodes, bn_init), path)
    expect("BatchNormalization training_mode=0: refused", vcc_run(vcc, path), 1,
           ["BatchNormalization in inference mode", "'/bn'", "training_mode=0"] + HINT, fails)
    expect("BatchNormalization training_mode=0 with --allow-inference-export: compiles", vcc_run(
        vcc, path, "--allow-inference-export"), 0, [], fails)
    print("FAIL: " + ", ".join(fails) if fails else "PASS")
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
