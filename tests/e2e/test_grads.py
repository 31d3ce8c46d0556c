"""After one step, every parameter gradient of a vcc trainer matches PyTorch autograd.

    test_grads.py --vcc BUILD/vcc --export-dir DIR --model NAME

DIR holds models/export_torchvision.py's output (NAME.onnx, NAME.pt, data.npy, labels.npy). The trainer
runs one step with --save-grads; models/reference_sgd.py runs the torchvision model from the same state
dict in float64 (the most accurate reference autograd gives). Per parameter:
    max|vcc - ref| / max|ref| <= 1e-3
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
    got, ref = load_file(os.path.join(d, "vcc_grads.safetensors")), load_file(os.path.join(d, "ref64_grads.safetensors"))
    rows, failed = [], []
    for name, r in ref.items():
        if name not in got:
            failed.append("%s missing" % name)
            continue
        e = float(np.abs(got[name].astype(np.float64) - r).max() / max(np.abs(r).max(), 1e-30))
        rows.append((e, name))
        if e > args.tol:
            failed.append("%s %.2e" % (name, e))
    extra = sorted(set(got) - set(ref))
    if extra:
        failed.append("vcc has gradients PyTorch has not: %s" % ", ".join(extra))
    rows.sort(reverse=True)
    print("%s: %d parameter gradients vs float64 autograd, max|a-b|/max|b|, worst first" % (args.model, len(rows)))
    for e, name in rows:
        print("  %.2e  %s" % (e, name))
    if failed:
        sys.exit("FAIL (tol %.0e): %s" % (args.tol, "; ".join(failed)))
    print("PASS (all <= %.0e)" % args.tol)


if __name__ == "__main__":
    main()
