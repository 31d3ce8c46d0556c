"""Exported forms that need the binary and reduce families, end to end: PyTorch modules exported with
torch.onnx.export (training mode, no constant folding), trained one step by vcc, every parameter's
gradient compared with PyTorch float64 autograd of the same module and with central finite differences.

    check_forms.py --vcc BUILD/vcc --work DIR [--only NAME]

Forms (N batch, C channels, T frames, H height, W width):
  squeeze_excite  y = x * s, s = mean_THW(x * w) * v of shape (N, C, 1, 1, 1) (--loss mse)
  groupnorm_affine  y = x * gamma + beta with gamma, beta (C, 1, 1, 1): GroupNorm's exported Mul and Add
  diffusion_mse   the loss in the graph: ((x * w + b - noise) ** 2).mean() with the noise a second input
                  (--loss graph): Sub, Pow with a Constant exponent 2 (no exponent gradient), ReduceMean
                  of every axis to a scalar
  reductions      opset 13: x.sum(dim=(1, 3)) (ReduceSum, axes an initializer input), x.amax(dim=1) and
                  x.max(dim=1)[0] (both ReduceMax), x.max() (every axis), then a product and a quotient
                  with parameters: Div by a tensor, both gradients
  silu            y = h * sigmoid(h), h = x * w (needs the unary family's Sigmoid: run where vcc --ops
                  lists it)
Figures: max|vcc - ref| / max|ref| per parameter, against autograd and finite differences (<= 1e-5).
"""

import argparse
import io
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
import torch
from safetensors.numpy import load_file

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from op_check import _err as err, _run as run  # noqa: E402  (the harness's runner and error figure)

TOL = 1e-5


class SqueezeExcite(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.rand(3, 1, 1, 1) + 0.5)
        self.v = torch.nn.Parameter(torch.rand(1, 3, 1, 1, 1) + 0.5)

    def forward(self, x):
        s = (x * self.w).mean(dim=(2, 3, 4), keepdim=True) * self.v
        return x * s


class GroupNormAffine(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.gamma = torch.nn.Parameter(torch.rand(4, 1, 1, 1) + 0.5)
        self.beta = torch.nn.Parameter(torch.randn(4, 1, 1, 1))

    def forward(self, x):
        return x * self.gamma + self.beta


class DiffusionMse(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.rand(3, 1, 1, 1) + 0.5)
        self.b = torch.nn.Parameter(torch.randn(3, 1, 1, 1))

    def forward(self, x, noise):
        return ((x * self.w + self.b - noise) ** 2).mean()


class Reductions(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(3, 4, 5))
        self.u = torch.nn.Parameter(torch.rand(1, 4) + 0.5)

    def forward(self, x):
        h = x * self.w
        a = h.sum(dim=(1, 3))                 # (N, 4)
        b = h.amax(dim=1).sum(-1)             # (N, 4)
        c = h.max(dim=1)[0].mean(-1)          # (N, 4)
        return (a * b + c) / (self.u + h.max())


class Silu(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(1, 3, 1, 1, 1))

    def forward(self, x):
        h = x * self.w
        return h * torch.sigmoid(h)


# name, module, input shapes, loss, opset, ops it needs beyond the binary and reduce families
FORMS = [
    ("squeeze_excite", SqueezeExcite, [(2, 3, 2, 4, 4)], "mse", 17, []),
    ("groupnorm_affine", GroupNormAffine, [(2, 4, 2, 3, 3)], "mse", 17, []),
    ("diffusion_mse", DiffusionMse, [(2, 3, 2, 4, 4), (2, 3, 2, 4, 4)], "graph", 17, []),
    ("reductions", Reductions, [(2, 3, 4, 5)], "mse", 13, []),
    ("silu", Silu, [(2, 3, 2, 3, 3)], "mse", 17, ["Sigmoid"]),
]


def check(name, cls, shapes, loss, opset, vcc, d):
    torch.manual_seed(0)
    model = cls().float()  # op_check makes float64 the default dtype; the export is of float32
    rng = np.random.default_rng(1)
    xs = [rng.uniform(-1, 1, size=s).astype(np.float32) for s in shapes]
    names = ["x", "noise"][:len(shapes)]
    f = io.BytesIO()
    torch.onnx.export(model, tuple(torch.tensor(x) for x in xs), f, opset_version=opset, input_names=names,
                      output_names=["y"], training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
    onnx.save(onnx.load_from_string(f.getvalue()), os.path.join(d, "model.onnx"))
    np.save(os.path.join(d, "data.npy"), xs[0])
    ref = model.double()
    with torch.no_grad():
        y = ref(*(torch.tensor(x.astype(np.float64)) for x in xs))
    targets = xs[1] if loss == "graph" else rng.uniform(-1, 1, size=tuple(y.shape)).astype(np.float32)
    np.save(os.path.join(d, "targets.npy"), targets)
    build = run([vcc, "model.onnx", "-o", "train.c", "--loss", loss, "--keep-grads"], d).strip().splitlines()[-1]
    run(build, d, shell=True)
    run(["./train", "--data", "data.npy", "--targets", "targets.npy", "--lr", "0", "--save-grads", "grads.safetensors"],
        d)
    got = load_file(os.path.join(d, "grads.safetensors"))

    def L():
        out = ref(*(torch.tensor(x.astype(np.float64)) for x in xs))
        return out if loss == "graph" else ((out - torch.tensor(targets.astype(np.float64))) ** 2).mean()

    ref.zero_grad()
    L().backward()
    rows = []
    for pname, p in ref.named_parameters():
        auto = p.grad.numpy().copy()
        idx = np.random.default_rng(2).choice(p.numel(), size=min(8, p.numel()), replace=False)
        fd = []
        with torch.no_grad():
            for i in idx:
                v = p.view(-1)[i].item()
                h = 1e-6 * max(1.0, abs(v))
                p.view(-1)[i] = v + h
                lp = L().item()
                p.view(-1)[i] = v - h
                lm = L().item()
                p.view(-1)[i] = v
                fd.append((lp - lm) / (2 * h))
        g = got.get(pname)
        if g is None:
            rows.append((pname, float("inf"), float("inf"), "vcc computed no gradient"))
            continue
        rows.append((pname, err(g, auto), err(g.reshape(-1)[idx], np.array(fd)), ""))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vcc", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--only", default=None)
    args = ap.parse_args()
    vcc = os.path.abspath(args.vcc)
    have = {l.split()[0] for l in run([vcc, "--ops"], ".").splitlines() if l.strip()}
    failed, total = [], 0
    for name, cls, shapes, loss, opset, needs in FORMS:
        if args.only and args.only not in name:
            continue
        missing = [op for op in needs if op not in have]
        if missing:
            print("%-18s not run: vcc has no %s op" % (name, ", ".join(missing)))
            continue
        d = os.path.join(os.path.abspath(args.work), name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        try:
            rows = check(name, cls, shapes, loss, opset, vcc, d)
        except Exception as x:  # vcc or the trainer failed
            rows = [("run", float("inf"), float("inf"), str(x)[:600])]
        for pname, e_auto, e_fd, note in rows:
            total += 1
            ok = e_auto <= TOL and e_fd <= TOL
            print("%-18s %-8s autograd %9.2e  finite differences %9.2e  %s%s" % (
                name, pname, e_auto, e_fd, "ok" if ok else "FAIL", ("  " + note) if note else ""))
            if not ok:
                failed.append("%s %s" % (name, pname))
    print("%d gradients, %d failed%s" % (total, len(failed), (": " + "; ".join(failed)) if failed else ""))
    return 1 if failed or total == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
