"""Bad input gets a clear one-line error, a non-zero exit and no output left behind.

    test_bad_input.py --vcc BUILD/vcc --model-dir DIR --work DIR

DIR holds a good small model (tiny_models.py's res3d: model.onnx, data.npy, labels.npy).
vcc cases (each run with -o train.c in an empty folder; afterwards the folder must still be empty):
  truncated .onnx, a text file named .onnx, a missing file, a model with two unsupported ops (both listed
  in one line), an unbound symbolic batch dim (the message names the input and the dim), an unwritable
  output folder.
trainer cases (train.c built from the good model): data .npy of the wrong shape, of the wrong dtype,
  labels of the wrong dtype, labels out of range, a missing data file, a truncated .npy, a missing
  weights file. Each must exit 1 with one line on stderr naming the file.
"""

import argparse
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

failures = []


def check(label, cmd, cwd, must_name, expect_rc=None, clean_dir=None):
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    err = p.stderr.strip().splitlines()
    ok = p.returncode != 0 and (expect_rc is None or p.returncode == expect_rc)
    ok = ok and len(err) == 1 and all(s in err[0] for s in must_name)
    left = sorted(os.listdir(clean_dir)) if clean_dir else []
    ok = ok and not left
    print("%-4s %-34s rc=%d  %s%s" % ("ok" if ok else "FAIL", label, p.returncode, err[0] if err else "(no message)",
                                      ("  left behind: %s" % left) if left else ""))
    if not ok:
        failures.append(label)
        if len(err) != 1:
            print("     stderr had %d lines:\n     %s" % (len(err), "\n     ".join(err)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vcc", required=True)
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    vcc = os.path.abspath(args.vcc)
    src = os.path.abspath(args.model_dir)
    work = os.path.abspath(args.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    good = os.path.join(src, "model.onnx")

    # ---- inputs vcc must refuse
    blob = open(good, "rb").read()
    inputs = os.path.join(work, "inputs")
    os.makedirs(inputs)
    open(os.path.join(inputs, "truncated.onnx"), "wb").write(blob[: len(blob) // 3])
    open(os.path.join(inputs, "text.onnx"), "w").write("not a model\njust text\n")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    nodes = [helper.make_node("MaxPool", ["x"], ["p"], name="/pool/MaxPool", kernel_shape=[2, 2, 2]),
             helper.make_node("GlobalAveragePool", ["p"], ["g"], name="/gap"),
             helper.make_node("Flatten", ["g"], ["f"], name="/flat"),
             helper.make_node("Softmax", ["f"], ["y"], name="/head/Softmax")]
    m = helper.make_model(helper.make_graph(nodes, "g", [x], [y]), opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(m, os.path.join(inputs, "unsupported.onnx"))
    sym = onnx.load(good)
    sym.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    onnx.save(sym, os.path.join(inputs, "symbolic.onnx"))

    cases = [("truncated .onnx", "truncated.onnx", ["truncated.onnx"]),
             ("not an ONNX file", "text.onnx", ["text.onnx"]),
             ("missing file", "missing.onnx", ["missing.onnx"]),
             ("unsupported ops", "unsupported.onnx", ["unsupported.onnx", "/pool/MaxPool", "MaxPool",
                                                      "/head/Softmax", "Softmax"]),
             ("unbound symbolic dim", "symbolic.onnx", ["symbolic.onnx", "input", "batch", "--shape"])]
    for label, name, must in cases:
        out = os.path.join(work, "out_" + name.replace(".", "_"))
        os.makedirs(out)
        check("vcc: " + label, [vcc, os.path.join(inputs, name), "-o", "train.c", "--plan-json", "plan.json"], out,
              must, expect_rc=1, clean_dir=out)
    # the symbolic model compiles once the dim is bound
    out = os.path.join(work, "out_bound")
    os.makedirs(out)
    p = subprocess.run([vcc, os.path.join(inputs, "symbolic.onnx"), "--shape", "batch=2", "-o", "train.c"], cwd=out,
                       capture_output=True, text=True)
    print("%-4s %-34s rc=%d" % ("ok" if p.returncode == 0 else "FAIL", "vcc: symbolic dim bound", p.returncode))
    if p.returncode != 0:
        failures.append("symbolic dim bound: " + p.stderr.strip())
    # an output folder that does not exist: nothing written anywhere
    check("vcc: unwritable output", [vcc, good, "-o", os.path.join(work, "no", "such", "dir", "train.c")], work,
          ["train.c"], expect_rc=1)

    # ---- trainer data errors
    t = os.path.join(work, "trainer")
    os.makedirs(t)
    subprocess.run([vcc, good, "-o", "train.c"], cwd=t, check=True, capture_output=True)
    build = open(os.path.join(t, "train.c")).readline()[len("// build: "):].strip()
    subprocess.run(build, cwd=t, shell=True, check=True)
    data = np.load(os.path.join(src, "data.npy"))
    labels = np.load(os.path.join(src, "labels.npy"))
    np.save(os.path.join(t, "data.npy"), data)
    np.save(os.path.join(t, "labels.npy"), labels)
    np.save(os.path.join(t, "wrong_shape.npy"), data[:, :, :, :-1])
    np.save(os.path.join(t, "wrong_dtype.npy"), data.astype(np.float64))
    np.save(os.path.join(t, "labels_i32.npy"), labels.astype(np.int32))
    np.save(os.path.join(t, "labels_range.npy"), labels + 1000)
    open(os.path.join(t, "truncated.npy"), "wb").write(open(os.path.join(t, "data.npy"), "rb").read()[:200])
    train = os.path.join(t, "train")
    runs = [("train: data of the wrong shape", ["wrong_shape.npy", "labels.npy"], ["wrong_shape.npy", "shape"]),
            ("train: data of the wrong dtype", ["wrong_dtype.npy", "labels.npy"], ["wrong_dtype.npy", "float32"]),
            ("train: labels of the wrong dtype", ["data.npy", "labels_i32.npy"], ["labels_i32.npy", "int64"]),
            ("train: labels out of range", ["data.npy", "labels_range.npy"], ["labels_range.npy"]),
            ("train: missing data file", ["nothere.npy", "labels.npy"], ["nothere.npy"]),
            ("train: truncated .npy", ["truncated.npy", "labels.npy"], ["truncated.npy"])]
    for label, (d, lab), must in runs:
        check(label, [train, "--data", d, "--labels", lab, "--steps", "1"], t, must, expect_rc=1)
    check("train: missing weights", [train, "--data", "data.npy", "--labels", "labels.npy", "--weights", "nope.st"],
          t, ["nope.st"], expect_rc=1)
    if failures:
        sys.exit("FAIL: %d case(s): %s" % (len(failures), ", ".join(failures)))
    print("PASS")


if __name__ == "__main__":
    main()
