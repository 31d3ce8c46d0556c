"""End-to-end: vcc compiles a small ONNX training graph into a C trainer whose losses, gradients and final
weights match an independent PyTorch run of the same training (tests/e2e/torch_ref.py).

    test_tiny_train.py --vcc BUILD/vcc --model-dir DIR [--steps 3]

The model folder's loss.txt (tests/e2e/tiny_models.py) names the --loss: ce trains on labels.npy, mse and
graph on targets.npy (the MSE targets, or the model's second float input).

Checks, each against PyTorch:
  losses of every step            |vcc - torch| <= 1e-4 * |torch|          (float32 reference)
  step-1 gradient of every param  max|vcc - ref| <= 1e-3 * max(max|ref|, 1e-3 * G)   (float64 autograd reference)
                                  G = the largest gradient entry of any parameter: a tensor whose exact gradient
                                  is zero (a conv bias followed by BatchNormalization) is compared at that floor
  parameters and BN running stats after the last step, same 1e-3 per-tensor bound (float32 reference)
Training: lr 0.05, momentum 0.9, weight decay 1e-3, batch = the model's batch, 4 samples.
"""

import argparse
import os
import subprocess
import sys

import numpy as np
import onnx
import torch
from safetensors.numpy import load_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_ref  # noqa: E402

LR, MOMENTUM, WD = 0.05, 0.9, 1e-3


def run(cmd, cwd):
    p = subprocess.run(cmd, cwd=cwd, shell=isinstance(cmd, str), capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("FAIL: %s exited %d\n%s%s" % (cmd, p.returncode, p.stdout, p.stderr))
    return p.stdout


def rel(a, b, floor=1e-30):
    return float(np.abs(np.asarray(a, np.float64) - b).max() / max(np.abs(b).max(), floor))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vcc", required=True)
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--steps", type=int, default=3)
    args = ap.parse_args()
    d = os.path.abspath(args.model_dir)
    vcc = os.path.abspath(args.vcc)
    torch.set_num_threads(1)

    lf = os.path.join(d, "loss.txt")
    loss = open(lf).read().strip() if os.path.exists(lf) else "ce"
    feed = ["--data", "data.npy"] + (["--labels", "labels.npy"] if loss == "ce" else ["--targets", "targets.npy"])
    # train: updates fused into backward (the default); train_keep: vcc --keep-grads, for --save-grads
    for name, extra in (("train", []), ("train_keep", ["--keep-grads"])):
        run([vcc, "model.onnx", "-o", name + ".c", "--loss", loss] + extra, d)
        build = open(os.path.join(d, name + ".c")).readline()
        prefix = "// build (from this file's folder): "
        assert build.startswith(prefix), "first line is not the build command: %r" % build
        run(build[len(prefix):].strip() + " -Wall -Werror", d)
    out = run(["./train"] + feed + ["--steps", str(args.steps), "--lr", str(LR),
               "--momentum", str(MOMENTUM), "--weight-decay", str(WD), "--out", "trained.safetensors"], d)
    losses = [float(line.split()[3]) for line in out.splitlines() if line.startswith("step ")]
    run(["./train_keep"] + feed + ["--steps", "1", "--lr", str(LR),
         "--momentum", str(MOMENTUM), "--weight-decay", str(WD), "--save-grads", "grads.safetensors"], d)

    data, labels = np.load(os.path.join(d, "data.npy")), np.load(os.path.join(d, "labels.npy"))
    tf = os.path.join(d, "targets.npy")
    targets = np.load(tf) if os.path.exists(tf) else None
    batch = onnx.load(os.path.join(d, "model.onnx")).graph.input[0].type.tensor_type.shape.dim[0].dim_value
    ref_losses, _, ref_state = torch_ref.train(os.path.join(d, "model.onnx"), data, labels, batch, args.steps, LR,
                                               MOMENTUM, WD, loss=loss, targets=targets)
    _, ref_grads, _ = torch_ref.train(os.path.join(d, "model.onnx"), data, labels, batch, 1, LR, MOMENTUM, WD,
                                   dtype=torch.float64, loss=loss, targets=targets)

    failed = []
    print("step  vcc           torch         rel")
    for k, (a, b) in enumerate(zip(losses, ref_losses)):
        r = abs(a - b) / abs(b)
        print("%-5d %-13.7g %-13.7g %.2e" % (k + 1, a, b, r))
        if r > 1e-4:
            failed.append("loss at step %d" % (k + 1))
    if len(losses) != args.steps:
        failed.append("trainer printed %d losses, expected %d" % (len(losses), args.steps))

    grads = load_file(os.path.join(d, "grads.safetensors"))
    print("gradient (vs float64 autograd)      rel")
    floor = 1e-3 * max(np.abs(g).max() for g in ref_grads.values())
    for name, ref in sorted(ref_grads.items()):
        if name not in grads:
            failed.append("gradient of %s missing" % name)
            continue
        r = rel(grads[name], ref, floor)
        print("  %-32s %.2e" % (name, r))
        if r > 1e-3:
            failed.append("gradient of %s" % name)

    # final weights and BN running statistics after the last step, against the float32 reference run
    trained = load_file(os.path.join(d, "trained.safetensors"))
    worst = max((rel(trained[n], v), n) for n, v in ref_state.items() if n in trained)
    missing = [n for n in ref_state if n not in trained]
    print("final state: %d tensors, worst %s %.2e" % (len(ref_state), worst[1], worst[0]))
    if missing:
        failed.append("trained.safetensors lacks %s" % ", ".join(missing))
    if worst[0] > 1e-3:
        failed.append("final state of %s" % worst[1])
    if failed:
        sys.exit("FAIL: " + "; ".join(failed))
    print("PASS")


if __name__ == "__main__":
    main()
