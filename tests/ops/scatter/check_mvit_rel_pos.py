"""MViT v2's relative-position term as torchvision's mvit_v2_s computes it (torchvision.models.video.mvit's
own _add_rel_pos), exported by torch.onnx at small sizes and compiled by vcc: its two Einsums
(bythwc,hkc->bythwk and bythwc,wkc->bythwk, lowered into MatMul, Transpose and Reshape), the Gathers of
the relative-position tables, and the ScatterND pair torch writes for attn[:, :, 1:, 1:] += rel_pos (their
index grids computed by Shape, Range and Expand nodes that fold while compiling). The block's parameters
are a q and a k projection and the three tables; its input x is (B, heads, 1 + T*H*W, dim).
Both writes are boxes of attn, which vcc writes as Slices and Concats, with no index table in the arena:
the check asserts that no ScatterND is left after the shape pass. At the default size the grids fold into
constants and vcc reads the box from their values; with --large, (T, H, W) = (8, 8, 9), the grid of
attn[:, :, 1:, 1:] holds 1.3 million index tuples, more than vcc evaluates while compiling (as at
mvit_v2_s's full size), so vcc reads the box from the grid's parts.

Checked like an op_check case (tests/ops/op_check.py): the forward program against the module in PyTorch
float64 on the same float32 values, and one trainer step (vcc --loss mse, --lr 0 --save-grads): every
parameter's gradient against float64 autograd of mean((y - targets)^2) and against central finite
differences of that loss in float64; both within 1e-6 relative to the largest reference value, or within
twice PyTorch float32's own distance from float64 autograd where that is larger (the gradients sum over
every row of the grid, and how far float32 lands depends on the BLAS kernels' order: at --large on an
AVX-512 machine, wq's gradient is 1.2e-6 from float64 in vcc and in PyTorch float32 alike). With
--cuda the forward and trainer .cu build with nvcc, no warnings allowed.

    check_mvit_rel_pos.py --vcc BUILD/vcc --work DIR [--large] [--cuda]
"""

import argparse
import os
import shutil
import sys

import numpy as np
import torch
from safetensors.numpy import load_file
from torchvision.models.video.mvit import _add_rel_pos

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import op_check as oc  # noqa: E402

B, HEADS, T, H, W, DIM = 2, 2, 2, 3, 3, 4
TOL = 1e-6


class RelPosBlock(torch.nn.Module):
    """Scores q k^T of x's projections with MViT's decomposed relative positions added."""

    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.wq = torch.nn.Parameter(torch.randn(DIM, DIM, generator=g) * 0.5)
        self.wk = torch.nn.Parameter(torch.randn(DIM, DIM, generator=g) * 0.5)
        self.rel_pos_h = torch.nn.Parameter(torch.randn(2 * H - 1, DIM, generator=g))
        self.rel_pos_w = torch.nn.Parameter(torch.randn(2 * W - 1, DIM, generator=g))
        self.rel_pos_t = torch.nn.Parameter(torch.randn(2 * T - 1, DIM, generator=g))

    def forward(self, x):
        q, k = x @ self.wq, x @ self.wk
        attn = q @ k.transpose(2, 3)
        return _add_rel_pos(attn, q, (T, H, W), (T, H, W), self.rel_pos_h, self.rel_pos_w, self.rel_pos_t)


def loss64(model, x, targets):
    return ((model(torch.tensor(x, dtype=torch.float64)) - torch.tensor(targets, dtype=torch.float64)) ** 2).mean()


def grads32(model, x, targets):
    """PyTorch float32's gradients of the same loss, per parameter name."""
    model.zero_grad()
    y = model(torch.tensor(x, dtype=torch.float32))
    ((y - torch.tensor(targets, dtype=torch.float32)) ** 2).mean().backward()
    return {name: p.grad.numpy().astype(np.float64) for name, p in model.named_parameters()}


def main():
    ap = argparse.ArgumentParser(description="MViT v2's relative-position block against PyTorch float64")
    ap.add_argument("--vcc", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--cuda", action="store_true")
    ap.add_argument("--large", action="store_true", help="(T, H, W) = (8, 8, 9): a grid too large to fold")
    args = ap.parse_args()
    global T, H, W
    if args.large:
        T, H, W = 8, 8, 9
    vcc, d = os.path.abspath(args.vcc), os.path.abspath(args.work)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    model = RelPosBlock().float()  # op_check makes float64 the default dtype
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, size=(B, HEADS, 1 + T * H * W, DIM)).astype(np.float32)
    torch.onnx.export(model, torch.tensor(x), os.path.join(d, "relpos.onnx"), opset_version=17,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False, input_names=["input"],
                      output_names=["y"])
    m64 = RelPosBlock().double()
    m64.load_state_dict({k: v.double() for k, v in model.state_dict().items()})
    rows = []
    ir = oc._run([vcc, "relpos.onnx", "--forward-only", "--dump-ir", "shape"], d)
    left = sum(1 for line in ir.splitlines() if line.startswith("node ") and line.split()[3] == "ScatterND")
    rows.append(("box lowering", float(left), left == 0, "%d ScatterND left after shapes" % left))
    # forward
    fwd = oc._build(vcc, "relpos.onnx", "fwd.c", d, ["--forward-only"])
    np.save(os.path.join(d, "input.npy"), x)
    oc._run([fwd, "input.npy", "-o", "out.npy"], d)
    with torch.no_grad():
        ref = m64(torch.tensor(x, dtype=torch.float64)).numpy()
    e = oc._err(np.load(os.path.join(d, "out.npy")), ref)
    rows.append(("forward", e, e <= TOL, ""))
    # one trainer step: every parameter's gradient
    targets = rng.uniform(-1, 1, size=ref.shape).astype(np.float32)
    train = oc._build(vcc, "relpos.onnx", "train.c", d, ["--loss", "mse", "--keep-grads"])
    np.save(os.path.join(d, "data.npy"), x)
    np.save(os.path.join(d, "targets.npy"), targets)
    oc._run([train, "--data", "data.npy", "--targets", "targets.npy", "--lr", "0", "--save-grads", "grads.safetensors"],
            d)
    got = load_file(os.path.join(d, "grads.safetensors"))
    g32 = grads32(model, x, targets)
    m64.zero_grad()
    loss64(m64, x, targets).backward()
    for name, p in m64.named_parameters():
        auto = p.grad.numpy()
        d32 = oc._err(g32[name], auto)
        tol = max(TOL, 2 * d32)
        idx = rng.choice(p.numel(), size=min(8, p.numel()), replace=False)
        fd = []
        with torch.no_grad():
            for i in idx:
                base = p.view(-1)[i].item()
                h = 1e-6 * max(1.0, abs(base))
                p.view(-1)[i] = base + h
                lp = loss64(m64, x, targets).item()
                p.view(-1)[i] = base - h
                lm = loss64(m64, x, targets).item()
                p.view(-1)[i] = base
                fd.append((lp - lm) / (2 * h))
        g = got.get(name)
        if g is None:
            rows.append(("grad " + name, float("inf"), False, "vcc computed no gradient"))
            continue
        e_auto, e_fd = oc._err(g, auto), oc._err(g.reshape(-1)[idx], np.array(fd))
        rows.append(("grad " + name, max(e_auto, e_fd), max(e_auto, e_fd) <= tol,
                     "autograd %.1e, finite differences %.1e (autograd vs fd %.1e); PyTorch float32 %.1e, "
                     "allowed %.1e" % (e_auto, e_fd, oc._err(auto.reshape(-1)[idx], np.array(fd)), d32, tol)))
    if args.cuda:
        for name, out, extra in (("fwd", "fwd.cu", ["--forward-only"]), ("train", "train.cu", ["--loss", "mse"])):
            try:
                oc._build(vcc, "relpos.onnx", out, d, extra, fast=False)
                rows.append(("cuda build " + name, 0.0, True, "nvcc, no warnings"))
            except RuntimeError as err:
                rows.append(("cuda build " + name, float("inf"), False, str(err)[:300]))
    failed = [r[0] for r in rows if not r[2]]
    for check, fig, ok, note in rows:
        print("%-22s %9.2e %s%s" % (check, fig, "ok  " if ok else "FAIL", ("  " + note) if note else ""))
    print("%d checks, %d failed%s" % (len(rows), len(failed), (": " + "; ".join(failed)) if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
