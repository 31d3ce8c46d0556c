"""The norm ops as PyTorch exports them, trained by vcc: one step's parameter gradients of the C
trainer (softmax cross-entropy, --lr 0 --save-grads) against PyTorch float64 autograd of the module.

    torch_exports.py --vcc BUILD/vcc --work DIR

  instancenorm3d   Conv3d -> InstanceNorm3d(affine) -> ReLU -> pool -> Linear (InstanceNormalization with
                   the module's weight and bias)
  instancenorm1d   the same in 1-D, InstanceNorm1d without affine (Constant ones and zeros)
  layernorm_last   LayerNorm over W of (N, C, T, H, W) (LayerNormalization axis -1, Scale (W))
  layernorm_chw    LayerNorm over (C, H, W) of a 2-D net's features (axis 1)
  groupnorm_*      GroupNorm, which torch 1.13 exports as Reshape (N, G, -1) -> InstanceNormalization
                   (Constant scale ones and bias zeros of shape (G)) -> Reshape -> Mul (weight) -> Add
                   (bias): num_groups between 1 and C, ranks 3-5. The Mul/Add/Unsqueeze are other op
                   families'; where this vcc does not have them (its report names only ops outside the
                   norm family) the case says so and is skipped, never passed. The chain must become one
                   GroupNormalization node (vcc --dump-ir=fuse: one GroupNormalization, no
                   InstanceNormalization left), whose gradient reads X alone.
  groupnorm_like_last_dim  the same chain written out with a weight and bias of shape (C) that broadcast
                   along W (= C), not the channels: not a GroupNorm, so it must stay as written
  bn_frozen        BatchNorm3d in eval mode on the input, before the Conv3d (an eval-mode export folds a
                   BatchNorm after a conv into it), exported in inference form (training_mode=0) and
                   trained with --allow-inference-export: the statistics frozen, weight and bias learning.
Each case also names the norm ops its graph must hold after the fuse pass (--dump-ir=fuse), so a chain
fused where it should not be, or left where it should be fused, fails.
Figure per model: max over parameters of max|vcc - ref| / max|ref|; a parameter whose gradient is zero
in exact arithmetic (a conv bias before a per-channel normalization: |ref| below 1e-9 of the model's
largest gradient) is compared against that largest gradient instead. Tolerance 1e-4 (float32 convolutions and sums in the trainer).
Exits 1 if a case fails (or none ran).
"""

import argparse
import os
import subprocess
import sys
import warnings

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.numpy import load_file

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))
import vcc_torch  # noqa: E402

NORM_OPS = ("BatchNormalization", "InstanceNormalization", "GroupNormalization", "LayerNormalization")
TOL = 1e-4


class GroupNormLastAffine(torch.nn.Module):
    """torch's GroupNorm chain written out, but with weight and bias of shape (C) multiplied in as they are:
    they broadcast along the last dim (W = C here), not along the channels, so this is no GroupNorm and
    the fuse pass must leave it."""

    def __init__(self, groups, c):
        super().__init__()
        self.groups = groups
        self.weight, self.bias = torch.nn.Parameter(torch.ones(c)), torch.nn.Parameter(torch.zeros(c))

    def forward(self, x):
        y = F.instance_norm(x.reshape(x.shape[0], self.groups, -1)).reshape(x.shape)
        return y * self.weight + self.bias


class Net(torch.nn.Module):
    """conv -> norm -> ReLU -> global average pool -> Linear(K=5); norm_first: norm -> conv -> ReLU -> ..."""

    def __init__(self, dim, cin, c, norm, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.conv = {1: torch.nn.Conv1d, 2: torch.nn.Conv2d, 3: torch.nn.Conv3d}[dim](cin, c, 3, padding=1)
        self.norm = norm
        self.pool = {1: torch.nn.AdaptiveAvgPool1d, 2: torch.nn.AdaptiveAvgPool2d, 3: torch.nn.AdaptiveAvgPool3d}[dim](1)
        self.fc = torch.nn.Linear(c, 5)
        for p in norm.parameters():  # away from the ones/zeros defaults, so a mixed-up scale shows
            with torch.no_grad():
                p.uniform_(0.5, 1.5) if p.dim() and p is getattr(norm, "weight", None) else p.uniform_(-0.5, 0.5)

    def forward(self, x):
        h = torch.relu(self.conv(self.norm(x))) if self.norm_first else torch.relu(self.norm(self.conv(x)))
        return self.fc(torch.flatten(self.pool(h), 1))


def cases():
    torch.manual_seed(0)
    bn = torch.nn.BatchNorm3d(3)
    with torch.no_grad():
        bn.running_mean.uniform_(-0.3, 0.3)
        bn.running_var.uniform_(0.5, 2.0)
    return [
        ("instancenorm3d", Net(3, 3, 6, torch.nn.InstanceNorm3d(6, affine=True)), (2, 3, 4, 5, 5), "train"),
        ("instancenorm1d", Net(1, 3, 4, torch.nn.InstanceNorm1d(4)), (3, 3, 11), "train"),  # unit scale, no Reshape
        ("layernorm_last", Net(3, 3, 4, torch.nn.LayerNorm(5)), (2, 3, 3, 4, 5), "train"),
        ("layernorm_chw", Net(2, 2, 3, torch.nn.LayerNorm([3, 4, 6])), (2, 2, 4, 6), "train"),
        ("groupnorm_3d_g4", Net(3, 3, 8, torch.nn.GroupNorm(4, 8)), (2, 3, 4, 5, 5), "train"),
        ("groupnorm_2d_g1", Net(2, 3, 6, torch.nn.GroupNorm(1, 6)), (2, 3, 5, 7), "train"),
        ("groupnorm_1d_g_eq_c", Net(1, 3, 8, torch.nn.GroupNorm(8, 8)), (3, 3, 9), "train"),
        ("groupnorm_like_last_dim", Net(3, 3, 8, GroupNormLastAffine(4, 8)), (2, 3, 4, 5, 8), "train"),
        ("bn_frozen", Net(3, 3, 6, bn, norm_first=True), (2, 3, 4, 5, 5), "frozen"),
    ]


# The norm ops each case's graph holds after the fuse pass, with their counts (the others: none).
FUSED = {"instancenorm3d": {"InstanceNormalization": 1}, "instancenorm1d": {"InstanceNormalization": 1},
         "layernorm_last": {"LayerNormalization": 1}, "layernorm_chw": {"LayerNormalization": 1},
         "groupnorm_3d_g4": {"GroupNormalization": 1}, "groupnorm_2d_g1": {"GroupNormalization": 1},
         "groupnorm_1d_g_eq_c": {"GroupNormalization": 1}, "groupnorm_like_last_dim": {"InstanceNormalization": 1},
         "bn_frozen": {"BatchNormalization": 1}}


def norm_ops_after_fuse(vcc, d, flags):
    """{op: count} of the norm family's nodes in vcc's graph after the fuse pass."""
    p = run([vcc, "m.onnx", "--dump-ir=fuse"] + flags, d)
    counts = {}
    for line in p.stdout.splitlines():
        f = line.split()
        if len(f) > 3 and f[0] == "node" and f[3] in NORM_OPS:
            counts[f[3]] = counts.get(f[3], 0) + 1
    return counts


def run(cmd, cwd, shell=False):
    return subprocess.run(cmd, cwd=cwd, shell=shell, capture_output=True, text=True)


def check(vcc, work, name, net, shape, mode):
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    x = torch.randn(*shape) * 2 + 0.3
    labels = torch.randint(0, 5, (shape[0],))
    path = os.path.join(d, "m.onnx")
    flags = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if mode == "frozen":
            net.norm.eval()
            torch.onnx.export(net, x, path, opset_version=17, training=torch.onnx.TrainingMode.EVAL,
                              do_constant_folding=False, input_names=["input"], output_names=["logits"])
            net.norm.eval()  # the export restores the top module's mode in every submodule
            flags = ["--allow-inference-export"]
        else:
            vcc_torch.export_for_training(net, x, path)
    p = run([vcc, "m.onnx", "-o", "train.c", "--keep-grads"] + flags, d)
    if p.returncode:
        report = p.stderr
        if "unsupported ops" in report and not any(op in report for op in NORM_OPS):
            return None, "skipped: this vcc lacks other families' ops: " + " ".join(
                l.strip() for l in report.splitlines()[2:6])
        return float("inf"), "vcc refused: " + report.strip()[:400]
    ops = norm_ops_after_fuse(vcc, d, flags)
    if ops != FUSED[name]:
        return float("inf"), "norm nodes after the fuse pass: %s, expected %s" % (ops, FUSED[name])
    b = run(p.stdout.strip(), d, shell=True)
    if b.returncode:
        return float("inf"), "build failed: " + b.stderr[:400]
    np.save(os.path.join(d, "x.npy"), x.numpy())
    np.save(os.path.join(d, "labels.npy"), labels.numpy())
    r = run(["./train", "--data", "x.npy", "--labels", "labels.npy", "--steps", "1", "--lr", "0", "--save-grads",
             "grads.safetensors"], d)
    if r.returncode:
        return float("inf"), "trainer failed: " + r.stderr[:400]
    got = load_file(os.path.join(d, "grads.safetensors"))
    ref = net.double()
    ref.zero_grad()
    F.cross_entropy(ref(x.double()), labels).backward()
    grads = {k: p.grad.numpy() for k, p in ref.named_parameters()}
    scale = max(np.abs(g).max() for g in grads.values())
    worst, which = 0.0, ""
    for k, g in grads.items():
        if k not in got:
            return float("inf"), "no gradient for " + k
        big = np.abs(g).max()
        e = float(np.abs(got[k] - g).max() / (big if big >= 1e-9 * scale else scale))
        if e > worst:
            worst, which = e, k
    extra = sorted(set(got) - set(grads))
    if extra:
        return float("inf"), "gradients PyTorch has not: " + ", ".join(extra)
    return worst, "%d parameters, worst %s" % (len(grads), which)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vcc", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    torch.set_num_threads(2)
    vcc, work = os.path.abspath(args.vcc), os.path.abspath(args.work)
    os.makedirs(work, exist_ok=True)
    fails, ran = [], 0
    for name, net, shape, mode in cases():
        e, note = check(vcc, work, name, net, shape, mode)
        if e is None:
            print("skip %-22s %s" % (name, note))
            continue
        ran += 1
        ok = e <= TOL
        print("%-4s %-22s %9.2e  %s" % ("ok" if ok else "FAIL", name, e, note))
        if not ok:
            fails.append(name)
    print("FAIL: " + ", ".join(fails) if fails else ("PASS" if ran else "FAIL: no case ran"))
    return 1 if fails or not ran else 0


if __name__ == "__main__":
    sys.exit(main())
