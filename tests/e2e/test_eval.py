"""Train, then evaluate: the evaluation program against PyTorch's model.eval().

    test_eval.py --vcc BUILD/vcc --export-dir DIR --model mc3_18 --work WORK [--steps 3]

DIR holds models/export_torchvision.py's output (<model>.onnx, <model>.pt, data.npy, labels.npy).

  1. `vcc <model>.onnx -o train.c`, built with the command vcc printed, trains --steps steps and writes
     trained.safetensors (--out).
  2. That file loads into the torchvision model with
     `model.load_state_dict(safetensors.torch.load_file(...), strict=True)`: it holds the model's
     state_dict and nothing else.
  3. The reference: the same model, the loaded state_dict, model.eval(), in float64, on 5 fresh seeded
     clips; labels are drawn at random except that sample 0's is its top class and sample 1's its third,
     so that top-1 and top-5 are not trivially 0.
  4. `vcc <model>.onnx --eval -o eval.c` runs over the 5 clips (batches of N = 2: the last batch is
     short) with --weights trained.safetensors, writing the logits and printing top-1, top-5 and the
     mean loss. Its logits must match the reference's to 1e-4 (max abs), and the printed accuracy and
     loss must be what the reference logits give (loss to 1e-5 relative; top-1 as torch.argmax decides).
  5. Ties: the same clips with the classifier's weight and bias zeroed, so that every logit is 0: top-1
     is where torch.argmax (the first maximum, class 0) is the label, for labels 0, 3, 7, 100 and K - 1.
"""

import argparse
import os
import subprocess
import sys

import numpy as np
import torch
import torchvision
from safetensors.torch import load_file, save_file


def run(cmd, cwd, shell=False):
    p = subprocess.run(cmd, cwd=cwd, shell=shell, capture_output=True, text=True)
    if p.returncode:
        sys.exit("FAIL: %s exited %d\n%s%s" % (cmd, p.returncode, p.stdout, p.stderr))
    return p.stdout


def check_metrics(line, ref, labels, k, what, fails):
    """The eval program's printed line against what float64 logits ref (S, k) and labels give: the mean
    cross-entropy (1e-5 relative), top-1 as torch.argmax decides it (the first maximum), top-5 with ties
    to the lower index (PyTorch leaves the order of ties in topk unspecified; without ties, topk's)."""
    r = torch.from_numpy(ref)
    y = torch.from_numpy(labels)
    loss = float(torch.nn.functional.cross_entropy(r, y))
    top1 = float((r.argmax(1) == y).double().mean())
    at_y = r[torch.arange(len(y)), y][:, None]
    lower = torch.arange(k)[None, :] < y[:, None]
    rank = ((r > at_y) | ((r == at_y) & lower)).sum(1)
    top5 = float((rank < min(5, k)).double().mean())
    f = line.split()
    vals = dict(zip(f[0::2], f[1::2]))
    print("reference (%s): top1 %.6f top5 %.6f loss %.7g" % (what, top1, top5, loss))
    if int(vals.get("samples", -1)) != len(y) or abs(float(vals["top1"]) - top1) > 1e-9 or \
            abs(float(vals["top5"]) - top5) > 1e-9 or abs(float(vals["loss"]) - loss) > 1e-5 * abs(loss):
        fails.append("%s: printed metrics %r differ from the reference's" % (what, line))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vcc", required=True)
    ap.add_argument("--export-dir", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--steps", type=int, default=3)
    args = ap.parse_args()
    vcc = os.path.abspath(args.vcc)
    exp = os.path.abspath(args.export_dir)
    work = os.path.abspath(args.work)
    os.makedirs(work, exist_ok=True)
    onnx_path = os.path.join(exp, args.model + ".onnx")
    fails = []

    # 1. train
    build = run([vcc, onnx_path, "-o", "train.c"], work).strip()
    run(build, work, shell=True)
    out = run(["./train", "--data", os.path.join(exp, "data.npy"), "--labels", os.path.join(exp, "labels.npy"),
               "--steps", str(args.steps), "--lr", "0.01", "--momentum", "0.9", "--out", "trained.safetensors"], work)
    print(out.strip())

    # 2. the --out file is the model's state_dict
    model = getattr(torchvision.models.video, args.model)()
    state = load_file(os.path.join(work, "trained.safetensors"))
    try:
        res = model.load_state_dict(state, strict=True)
        print("load_state_dict(strict=True): %d tensors, %s" % (len(state), res))
    except RuntimeError as e:
        fails.append("load_state_dict(strict=True) refused the --out file: %s" % str(e).splitlines()[0])
        model.load_state_dict(state, strict=False)

    # 3. the reference: PyTorch model.eval() in float64 on the same state; labels chosen from it so the
    # metrics are not trivial (sample 0's label is its top class, sample 1's its third, the rest random)
    rng = np.random.default_rng(1)
    x = np.load(os.path.join(exp, "data.npy"), mmap_mode="r")
    clips = rng.standard_normal((5,) + x.shape[1:], dtype=np.float32)
    k = model.fc.out_features
    model = model.double().eval()
    with torch.no_grad():
        ref = model(torch.from_numpy(clips).double()).numpy()
    labels = rng.integers(0, k, size=5, dtype=np.int64)
    order = np.argsort(-ref, axis=1)
    labels[0], labels[1] = order[0, 0], order[1, 2]
    np.save(os.path.join(work, "eval_x.npy"), clips)
    np.save(os.path.join(work, "eval_y.npy"), labels)

    # 4. evaluate with vcc
    build = run([vcc, onnx_path, "--eval", "-o", "eval.c"], work).strip()
    run(build, work, shell=True)
    line = run(["./eval", "--data", "eval_x.npy", "--labels", "eval_y.npy", "--weights", "trained.safetensors",
                "--logits", "logits.npy"], work).strip()
    print("eval: " + line)
    got = np.load(os.path.join(work, "logits.npy"))
    err = float(np.abs(got.astype(np.float64) - ref).max()) if got.shape == ref.shape else float("inf")
    print("logits vs PyTorch eval() float64: max abs error %.3g (max |logit| %.3g)" % (err, float(np.abs(ref).max())))
    if not err <= 1e-4:
        fails.append("logits differ from PyTorch eval() by %.3g > 1e-4" % err)
    check_metrics(line, ref, labels, k, "trained", fails)

    # 5. ties: with the classifier zeroed every logit is exactly 0 in both programs; torch.argmax takes the
    # first maximum, so only a label of class 0 is top-1 (an evaluation that counted ties as hits said 1.0)
    zeroed = dict(state)
    zeroed["fc.weight"] = torch.zeros_like(state["fc.weight"])
    zeroed["fc.bias"] = torch.zeros_like(state["fc.bias"])
    save_file(zeroed, os.path.join(work, "zero_fc.safetensors"))
    tie_labels = np.array([0, 3, 7, 100, k - 1], dtype=np.int64)
    np.save(os.path.join(work, "tie_y.npy"), tie_labels)
    line = run(["./eval", "--data", "eval_x.npy", "--labels", "tie_y.npy", "--weights", "zero_fc.safetensors"],
               work).strip()
    print("eval, classifier zeroed: " + line)
    check_metrics(line, np.zeros_like(ref), tie_labels, k, "zeroed classifier", fails)
    for m in fails:
        print("FAIL: " + m)
    print("FAIL" if fails else "PASS")
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
