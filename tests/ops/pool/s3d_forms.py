"""The pool and pad forms of torchvision's S3D, trained by vcc against PyTorch float64 autograd.

    s3d_forms.py --vcc BUILD/vcc --work DIR [--cuda]

S3D (torchvision.models.video.s3d) pools with MaxPool3d((1,3,3), (1,2,2), (0,1,1)) twice in its stem,
MaxPool3d(3, 1, 1) in every Mixed block's fourth branch, MaxPool3d(3, 2, 1) and MaxPool3d(2, 2, 0)
between stages (ceil_mode in some torchvision versions: both are here), and ends with
AvgPool3d((2, 7, 7), stride 1), which PyTorch exports as a Pad (of zeros) and an AveragePool with
count_include_pad. This net chains those pools between Conv3d/BatchNorm3d/ReLU layers (no Concat, which
is not the pool family's) and is exported for training (python/vcc_torch.py, opset 17). vcc compiles the
trainer (softmax cross-entropy), runs one step with --save-grads, and every parameter gradient must match
PyTorch float64 autograd of the same module, weights and batch:
    max|vcc - ref| / max|ref| <= 1e-4
With --cuda the CUDA trainer is built with nvcc (no warnings) too.
"""

import argparse
import collections
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.numpy import load_file

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))
from vcc_torch import export_for_training  # noqa: E402

TOL = 1e-4


def block(cin, cout, k, p):
    return nn.Sequential(nn.Conv3d(cin, cout, k, padding=p, bias=False), nn.BatchNorm3d(cout), nn.ReLU())


class S3DPools(nn.Module):
    """(N, 3, 8, 32, 32) -> (N, K): S3D's pooling layers between conv blocks."""

    def __init__(self, k=5):
        super().__init__()
        self.stem = block(3, 6, (1, 3, 3), (0, 1, 1))
        self.pool1 = nn.MaxPool3d((1, 3, 3), (1, 2, 2), (0, 1, 1))
        self.temporal = block(6, 6, (3, 1, 1), (1, 0, 0))
        self.branch_pool = nn.MaxPool3d(3, 1, 1)
        self.conv = block(6, 8, 1, 0)
        self.pool2 = nn.MaxPool3d(3, 2, 1, ceil_mode=True)
        self.pool3 = nn.MaxPool3d(2, 2, 0, ceil_mode=True)
        self.pool3b = nn.MaxPool3d((1, 3, 3), (1, 3, 3))
        self.avgpool = nn.AvgPool3d((2, 2, 2), stride=1)  # exported as Pad (zeros) + AveragePool
        self.fc = nn.Linear(8 * 2 * 1 * 1, k)

    def forward(self, x):
        x = self.pool1(self.stem(x))                           # 8x16x16
        x = self.conv(self.branch_pool(self.temporal(x)))      # 8x16x16
        x = self.pool3(self.pool2(x))                          # ceil_mode: 5x9x9 -> 3x5x5
        x = self.avgpool(x)                                    # 2x4x4
        return self.fc(torch.flatten(self.pool3b(x), 1))       # 2x1x1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vcc", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--cuda", action="store_true")
    args = ap.parse_args()
    work = os.path.abspath(args.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    torch.manual_seed(0)
    model = S3DPools()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 8, 32, 32)).astype(np.float32)
    labels = rng.integers(0, 5, size=(2,)).astype(np.int64)
    np.save(os.path.join(work, "data.npy"), x)
    np.save(os.path.join(work, "labels.npy"), labels)
    export_for_training(model, torch.tensor(x), os.path.join(work, "s3d_pools.onnx"))
    ops = collections.Counter(n.op_type for n in onnx.load(os.path.join(work, "s3d_pools.onnx")).graph.node)
    print("exported ops: %s" % dict(ops))
    fails = []
    if ops["MaxPool"] != 5 or ops["Pad"] != 1 or ops["AveragePool"] != 1:
        fails.append("the export does not hold the expected MaxPool x5, Pad and AveragePool")

    def run(cmd, shell=False):
        p = subprocess.run(cmd, cwd=work, shell=shell, capture_output=True, text=True)
        if p.returncode:
            sys.exit("FAIL: %s exited %d\n%s%s" % (cmd, p.returncode, p.stdout, p.stderr))
        return p.stdout

    build = run([os.path.abspath(args.vcc), "s3d_pools.onnx", "-o", "train.c", "--keep-grads"]).strip()
    run(build, shell=True)
    run(["./train", "--data", "data.npy", "--labels", "labels.npy", "--steps", "1", "--lr", "0", "--save-grads",
         "grads.safetensors"])
    got = load_file(os.path.join(work, "grads.safetensors"))

    ref_model = model.double().train()
    loss = F.cross_entropy(ref_model(torch.tensor(x, dtype=torch.float64)), torch.tensor(labels))
    loss.backward()
    worst = 0.0
    for name, p in ref_model.named_parameters():
        ref = p.grad.numpy()
        if name not in got:
            fails.append("%s: no gradient from vcc" % name)
            continue
        e = float(np.abs(got[name].astype(np.float64) - ref).max() / max(np.abs(ref).max(), 1e-30))
        worst = max(worst, e)
        print("%-28s %9.2e %s" % (name, e, "ok" if e <= TOL else "FAIL"))
        if e > TOL:
            fails.append("%s: %.2e" % (name, e))
    print("worst parameter gradient: %.2e (tolerance %.0e)" % (worst, TOL))
    if args.cuda:
        if shutil.which("nvcc") is None:
            print("cuda: skipped, nvcc not found")
        else:
            build = run([os.path.abspath(args.vcc), "s3d_pools.onnx", "-o", "train.cu"]).strip()
            p = subprocess.run(build, cwd=work, shell=True, capture_output=True, text=True)
            if p.returncode or p.stdout.strip() or p.stderr.strip():
                fails.append("nvcc: exit %d, %s" % (p.returncode, (p.stdout + p.stderr)[:500]))
            else:
                print("cuda: train.cu built with no warnings")
    for f in fails:
        print("FAIL " + f)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
