"""After one step, every parameter gradient of a vcc trainer matches PyTorch autograd.

    test_grads.py --vcc BUILD/vcc --export-dir DIR --model NAME

DIR holds models/export_torchvision.py's output (NAME.onnx, NAME.pt, data.npy, labels.npy). The trainer
runs one step with --save-grads; models/reference_sgd.py runs the torchvision model from the same state
dict in float64 (the most accurate reference autograd gives), and in float32 on each of PyTorch's CPU
convolution paths (oneDNN, its default, and its own im2col + GEMM). Per parameter:
    max|vcc - ref| / max|ref| <= max(1e-3, 2 * the same figure of PyTorch float32, the larger of its paths)
(r3d_18's first step is one where PyTorch's default float32 path itself lands 1.2e-2 from float64 in
layer1's weight gradients, and vcc's oneDNN convolutions with it, while both im2col paths stay near 5e-6.)
Prints every tensor's figure, worst first.
"""

import argparse
import os
import subprocess
import sys

import numpy as np
from safetensors.numpy import load_file

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vcc", required=True)
    ap.add_argument("--export-dir", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--tol", type=float, default=1e-3)
    args = ap.parse_args()
    d = os.path.abspath(args.export_dir)

    def run(cmd, shell=False):
        p = subprocess.run(cmd, cwd=d, shell=shell, capture_output=True, text=True)
        if p.returncode:
            sys.exit("FAIL: %s exited %d\n%s%s" % (cmd, p.returncode, p.stdout, p.stderr))
        return p.stdout

    build = run([os.path.abspath(args.vcc), args.model + ".onnx", "-o", "train.c", "--keep-grads"]).strip()
    run(build, shell=True)
    run(["./train", "--data", "data.npy", "--labels", "labels.npy", "--steps", "1", "--save-grads", "vcc_grads.safetensors"])
    batch = int(run([sys.executable, "-c", "import onnx,sys; m=onnx.load(sys.argv[1]); "
                     "print(m.graph.input[0].type.tensor_type.shape.dim[0].dim_value)", args.model + ".onnx"]))
    run([sys.executable, os.path.join(HERE, "..", "..", "models", "reference_sgd.py"), "--state", args.model + ".pt",
         "--model", args.model, "--data", "data.npy", "--labels", "labels.npy", "--batch", str(batch), "--steps", "1",
         "--losses-out", "ref64_losses.json", "--grads-out", "ref64_grads.safetensors", "--dtype", "float64", "--quiet"])
    # PyTorch float32 on the same step, on both its CPU convolution paths (oneDNN, its default, and its own
    # im2col + GEMM): how far float32 itself lands from float64 on this step
    ref32 = []
    for path in ([], ["--no-mkldnn"]):
        out = "ref32_grads%s.safetensors" % ("_native" if path else "")
        run([sys.executable, os.path.join(HERE, "..", "..", "models", "reference_sgd.py"), "--state", args.model + ".pt",
             "--model", args.model, "--data", "data.npy", "--labels", "labels.npy", "--batch", str(batch), "--steps",
             "1", "--losses-out", "ref32_losses.json", "--grads-out", out, "--dtype", "float32", "--quiet"] + path)
        ref32.append(load_file(os.path.join(d, out)))
    got, ref = load_file(os.path.join(d, "vcc_grads.safetensors")), load_file(os.path.join(d, "ref64_grads.safetensors"))
    rows, failed = [], []

    def dist(a, r):
        return float(np.abs(a.astype(np.float64) - r).max() / max(np.abs(r).max(), 1e-30))

    for name, r in ref.items():
        if name not in got:
            failed.append("%s missing" % name)
            continue
        e = dist(got[name], r)
        e32 = max(dist(x[name], r) for x in ref32)
        allowed = max(args.tol, 2 * e32)
        rows.append((e, name, e32, allowed))
        if e > allowed:
            failed.append("%s %.2e > %.2e" % (name, e, allowed))
    extra = sorted(set(got) - set(ref))
    if extra:
        failed.append("vcc has gradients PyTorch has not: %s" % ", ".join(extra))
    rows.sort(reverse=True)
    print("%s: %d parameter gradients vs float64 autograd, max|a-b|/max|b|, worst first (PyTorch float32's own "
          "distance, the larger of its two paths; allowed)" % (args.model, len(rows)))
    for e, name, e32, allowed in rows:
        print("  %.2e  %-40s (%.2e; %.2e)" % (e, name, e32, allowed))
    if failed:
        sys.exit("FAIL: %s" % "; ".join(failed))
    print("PASS (each <= max(%.0e, 2 x PyTorch float32's distance))" % args.tol)


if __name__ == "__main__":
    main()
