"""A model's training step with its attention fused (FusedAttention, passes/fuse.c) against the same step
compiled as written (--no-fuse-attention): losses and every parameter gradient agree.

    test_fused_unfused.py --vcc BUILD/vcc --model NAME --work DIR [--dropout P] [--steps S]

The model (models/video_nets.py) is exported with attention dropout P (default 0.1: the fused op draws
the same Philox masks as the Dropout it replaces), both trainers start from the exported weights and run
S steps (default 3) on the same batches; each step's loss must agree within 1e-5 (relative), and the
last step's gradients (--save-grads: both compiled with vcc --keep-grads) within 1e-5 of the largest
gradient magnitude of each tensor's layer (the parameters of one module: a weight and its bias sum the
same incoming gradient, and a bias whose gradient is zero in exact arithmetic, as a key's LayerNorm bias
under softmax, holds only rounding noise of that size). The fused program must hold at least one
FusedAttention and the unfused one none. Prints the worst figures; exits 1 on a failure.
"""

import argparse
import os
import subprocess
import sys

import numpy as np
from safetensors.numpy import load_file

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS_DIR = os.path.join(HERE, "..", "..", "models")
sys.path.insert(0, MODELS_DIR)
import video_nets  # noqa: E402


def run(cmd, cwd, shell=False):
    p = subprocess.run(cmd, cwd=cwd, shell=shell, capture_output=True, text=True)
    if p.returncode:
        sys.exit("FAIL: %s exited %d: %s%s" % (cmd if shell else " ".join(cmd), p.returncode, p.stdout[-1500:],
                                              p.stderr[-1500:]))
    return p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vcc", required=True)
    ap.add_argument("--model", required=True, choices=video_nets.MODELS)
    ap.add_argument("--work", required=True)
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--steps", type=int, default=3)
    a = ap.parse_args()
    d = os.path.abspath(a.work)
    os.makedirs(d, exist_ok=True)
    run([sys.executable, os.path.join(MODELS_DIR, "export_video_nets.py"), "--model", a.model, "--out", d,
         "--dropout", str(a.dropout), "--num-classes", "5"], d)
    losses, grads = {}, {}
    for tag, extra in (("fused", []), ("unfused", ["--no-fuse-attention"])):
        ir = run([os.path.abspath(a.vcc), a.model + ".onnx", "--dump-ir", "fuse"] + extra, d)
        count = ir.count("FusedAttention")
        if (count > 0) != (tag == "fused"):
            sys.exit("FAIL: the %s program has %d FusedAttention nodes" % (tag, count))
        build = run([os.path.abspath(a.vcc), a.model + ".onnx", "-o", "train_%s.c" % tag, "--keep-grads"] + extra,
                    d).strip().splitlines()[-1]
        run(build, d, shell=True)
        out = run(["./train_" + tag, "--data", "data.npy", "--labels", "labels.npy", "--steps", str(a.steps),
                   "--lr", "0.01", "--momentum", "0.9", "--seed", "7",
                   "--save-grads", "grads_%s.safetensors" % tag], d)
        losses[tag] = [float(l.split()[3]) for l in out.splitlines() if l.startswith("step ")]
        grads[tag] = load_file(os.path.join(d, "grads_%s.safetensors" % tag))
        print("%-8s %d FusedAttention node(s), losses %s" % (tag, count, " ".join("%.7g" % v for v in losses[tag])))
    worst_loss = max(abs(f - u) / max(abs(u), 1e-30) for f, u in zip(losses["fused"], losses["unfused"]))
    worst, where = 0.0, ""
    layer_max = {}
    for k, u in grads["unfused"].items():
        mod = k.rsplit(".", 1)[0]
        layer_max[mod] = max(layer_max.get(mod, 0.0), float(np.abs(u).max()))
    for k, u in grads["unfused"].items():
        f = grads["fused"][k]
        e = float(np.abs(f.astype(np.float64) - u).max() / max(layer_max[k.rsplit(".", 1)[0]], 1e-30))
        if e > worst:
            worst, where = e, k
    ok = worst_loss <= 1e-5 and worst <= 1e-5 and set(grads["fused"]) == set(grads["unfused"])
    print("%s: %s, %d steps, dropout %g: losses within %.2e (relative), gradients within %.2e of their layer's "
          "largest (worst %s)" % ("PASS" if ok else "FAIL", a.model, a.steps, a.dropout, worst_loss, worst, where))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
