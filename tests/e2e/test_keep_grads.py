"""Updates fused into backward (vcc's default) against the kept-gradient layout (vcc --keep-grads).

    test_keep_grads.py --vcc BUILD/vcc --model NAME --work DIR [--optimizer sgd|adamw] [--steps 4]

models/export_video_nets.py exports the model (dropout 0), vcc compiles it twice, by default (each
parameter updated as soon as its gradient is final, the gradient a planned tensor) and with --keep-grads
(every gradient persistent, every update after backward), and both trainers run the same steps from the
same weights. Both take --workspace-limit 16MiB: a fixed limit keeps every convolution's im2col chunks as
the limit gives them, where by default vcc shrinks the workspaces that set each plan's peak, and the two
plans' peaks differ (a filter gradient summed over other chunks rounds otherwise). Checked:
  losses        the "step <k> loss <value>" lines are the same text
  weights       the --out files (parameters and BN running statistics) are byte-identical
  plans         every parameter gradient is a "gradient" tensor in both plans: persistent (start null)
                with --keep-grads, a live interval by default; the default plan's persistent region is the
                kept one's less the gradients' aligned bytes (256), and its arena is smaller
Prints the figures; exits 1 on a failure.
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS_DIR = os.path.join(HERE, "..", "..", "models")
ALIGN = 256  # VCC_ARENA_ALIGN


def run(cmd, cwd, shell=False):
    p = subprocess.run(cmd, cwd=cwd, shell=shell, capture_output=True, text=True)
    if p.returncode:
        sys.exit("FAIL: %s exited %d\n%s%s" % (cmd, p.returncode, p.stdout[-3000:], p.stderr[-3000:]))
    return p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vcc", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--optimizer", choices=("sgd", "adamw"), default="sgd")
    ap.add_argument("--steps", type=int, default=4)
    a = ap.parse_args()
    d = os.path.abspath(a.work)
    os.makedirs(d, exist_ok=True)
    run([sys.executable, os.path.join(MODELS_DIR, "export_video_nets.py"), "--model", a.model, "--out", d,
         "--dropout", "0", "--num-classes", "5"], d)
    hyper = ["--lr", "0.001", "--weight-decay", "0.01"] if a.optimizer == "adamw" else \
        ["--lr", "0.01", "--momentum", "0.9", "--weight-decay", "0.0001"]
    losses, weights, plans = {}, {}, {}
    for tag, extra in (("fused", []), ("keep", ["--keep-grads"])):
        build = run([os.path.abspath(a.vcc), a.model + ".onnx", "-o", "train_%s.c" % tag, "--optimizer", a.optimizer,
                     "--workspace-limit", "16MiB",
                     "--plan-json", "plan_%s.json" % tag] + extra, d).strip().splitlines()[-1]
        run(build, d, shell=True)
        out = run(["./train_" + tag, "--data", "data.npy", "--labels", "labels.npy", "--steps", str(a.steps)] + hyper +
                  ["--out", "out_%s.safetensors" % tag], d)
        losses[tag] = [ln for ln in out.splitlines() if ln.startswith("step ")]
        weights[tag] = open(os.path.join(d, "out_%s.safetensors" % tag), "rb").read()
        plans[tag] = json.load(open(os.path.join(d, "plan_%s.json" % tag)))
        print("%-5s arena %d persistent %d  %s" % (tag, plans[tag]["arena_bytes"], plans[tag]["persistent_bytes"],
                                                   " | ".join(losses[tag])))
    fails = []
    if len(losses["fused"]) != a.steps or losses["fused"] != losses["keep"]:
        fails.append("the losses differ: %s vs %s" % (losses["fused"], losses["keep"]))
    if weights["fused"] != weights["keep"]:
        fails.append("the --out files differ")
    grads = {}
    for tag in ("fused", "keep"):
        grads[tag] = {t["name"]: t for t in plans[tag]["tensors"] if t["category"] == "gradient"}
    if not grads["keep"] or set(grads["keep"]) != set(grads["fused"]):
        fails.append("the plans' gradients differ: %s vs %s" % (sorted(grads["fused"]), sorted(grads["keep"])))
    else:
        kept = [n for n, t in grads["keep"].items() if t["start"] is not None]
        planned = [n for n, t in grads["fused"].items() if t["start"] is None or t["end"] is None]
        if kept:
            fails.append("--keep-grads: gradients with a live interval: %s" % kept[:5])
        if planned:
            fails.append("default: gradients without a live interval: %s" % planned[:5])
        freed = sum((t["bytes"] + ALIGN - 1) // ALIGN * ALIGN for t in grads["keep"].values())
        if plans["fused"]["persistent_bytes"] != plans["keep"]["persistent_bytes"] - freed:
            fails.append("persistent bytes %d, expected %d - %d" % (plans["fused"]["persistent_bytes"],
                                                                    plans["keep"]["persistent_bytes"], freed))
        print("gradients: %d tensors, %d bytes out of the persistent region" % (len(grads["keep"]), freed))
    if not plans["fused"]["arena_bytes"] < plans["keep"]["arena_bytes"]:
        fails.append("the default arena (%d) is not smaller than --keep-grads' (%d)" %
                     (plans["fused"]["arena_bytes"], plans["keep"]["arena_bytes"]))
    for f in fails:
        print("FAIL " + f)
    if not fails:
        print("PASS: same losses and weights, arena %d -> %d bytes" % (plans["keep"]["arena_bytes"],
                                                                       plans["fused"]["arena_bytes"]))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
