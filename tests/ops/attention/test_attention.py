"""The attention family (ir/ops/attention.c, passes/fuse.c): scaled dot-product attention fused into one
FusedAttention op, checked on small attention blocks exported from PyTorch (opset 17, training mode).

    test_attention.py --vcc BUILD/vcc --work DIR [--only NAME] [--cuda | --cuda-one]

Each case is a torch module written the way a family of real models writes attention; per case:
  fused         `--dump-ir fuse` shows one FusedAttention with the nodes it replaced; with
                --no-fuse-attention there is none
  vir           the dumps after fuse, autodiff and memplan read back and print byte for byte the same
  plan          no tensor of the fused trainer's plan (`--dump-ir memplan`) ends in (L, L); the unfused
                one has them (the scores and probabilities saved for backward)
  fused=unfused one --lr 0 step of both --loss mse trainers (--save-grads): the losses within 1e-5
                relative, each parameter's gradient within 1e-5 of its largest element (of the largest
                gradient's, for one that is zero in exact arithmetic; with attention dropout the two
                draw the same masks)
  torch64       (cases without dropout) the fused trainer's loss and gradients against PyTorch float64
                autograd of the same module and state: loss 1e-6 relative, gradients 1e-5 of their largest
  fd            (cases without dropout) for each parameter, the fused gradient's derivative along a random
                direction u against central differences of the float64 module (h = 1e-4): 1e-6 of
                |g64| |u| (of the largest gradient's, for a gradient that is zero in exact arithmetic)
  gelu_mlp      nn.GELU exported at opset 17 (Div, Erf, Add, Mul, Mul) is one Gelu after the fuse pass
                (its numbers: tests/ops/softmax/check_attention.py gelu_erf_form)
  silu          nn.SiLU exported at opset 17 (Sigmoid, Mul) is one Swish after the fuse pass; a Sigmoid
                with another reader is left (the numbers: e2e_model_steps_x3d_s_tiny and _unet3d_block)
  transposed_b  a Linear on a batched input (MatMul(X, Transpose(W))), h @ w.t() of a weight and
                h @ g.transpose(-1, -2) of two activations: after the fuse pass no Transpose is left and
                the three MatMuls read B with transB=1; one --lr 0 step's loss and gradients against
                PyTorch float64 (loss 1e-6 relative, gradients 1e-5 of their largest)
  transposed_b_noperm  MatMul(A, Transpose(W)) with no perm attribute (ONNX: the dims reversed, a swap at
                rank 2) folds too; the forward program against numpy A @ W^T in float64 (1e-6 relative)
  cuda          (--cuda, --cuda-one) the fused trainer's .cu builds with nvcc with no warnings; where a
                GPU is present it runs, and its loss and gradients are checked against the C trainer's
                (1e-5)

Prints one line per check; exits 1 if any failed (77 with --cuda-one and no nvcc).
"""

import argparse
import math
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import torch
from safetensors.numpy import load_file

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import op_check as oc  # noqa: E402

B, L, E, H = 2, 6, 16, 2  # batch, sequence (tokens), embedding, heads; L appears in no other dim
FAILED = []


class HFAttention(torch.nn.Module):
    """Hugging Face BERT/ViT/VideoMAE form: per-head q, k, v by view + permute, matmul(q, k.transpose(-1, -2))
    / sqrt(d), + an additive mask, softmax, dropout, matmul with v."""

    def __init__(self, heads=H, mask=True, p=0.0, scale_op="div", kt="transpose"):
        super().__init__()
        self.h, self.d = heads, E // heads
        self.q, self.k, self.v, self.o = (torch.nn.Linear(E, E) for _ in range(4))
        self.mask = torch.triu(torch.full((L, L), -1e4), 1) if mask else None
        self.drop = torch.nn.Dropout(p)
        self.scale_op, self.kt = scale_op, kt

    def heads(self, x):
        return x.view(x.shape[0], L, self.h, self.d).permute(0, 2, 1, 3) if self.h > 1 else x

    def forward(self, x):
        q, k, v = self.heads(self.q(x)), self.heads(self.k(x)), self.heads(self.v(x))
        a = torch.matmul(q, k.transpose(-1, -2))
        a = a / math.sqrt(self.d) if self.scale_op == "div" else a * (self.d ** -0.5)
        if self.mask is not None:
            a = a + self.mask
        a = self.drop(torch.softmax(a, dim=-1))
        o = torch.matmul(a, v)
        o = o.permute(0, 2, 1, 3).reshape(x.shape) if self.h > 1 else o
        return self.o(o)


class TimmAttention(torch.nn.Module):
    """timm/torchvision ViT and MViT form: one qkv projection, reshape, permute, unbind, (q @ k.transpose(-2,
    -1)) * scale, softmax, @ v."""

    def __init__(self, heads=H):
        super().__init__()
        self.h, self.d = heads, E // heads
        self.qkv, self.proj = torch.nn.Linear(E, 3 * E), torch.nn.Linear(E, E)

    def forward(self, x):
        qkv = self.qkv(x).reshape(x.shape[0], L, 3, self.h, self.d).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        a = ((q @ k.transpose(-2, -1)) * self.d ** -0.5).softmax(dim=-1)
        return self.proj((a @ v).transpose(1, 2).reshape(x.shape))


class TorchMHA(torch.nn.Module):
    """torch.nn.MultiheadAttention (batch_first): q scaled before bmm(q, k^T) (no scale node), softmax,
    dropout, bmm with v; the head split through shape arithmetic (Slice ends from Shape) folded."""

    def __init__(self, p=0.0):
        super().__init__()
        self.m = torch.nn.MultiheadAttention(E, H, dropout=p, batch_first=True)

    def forward(self, x):
        return self.m(x, x, x, need_weights=False)[0]


CASES = {
    "hf_mask_heads": lambda: HFAttention(),
    "hf_no_mask_mul_scale": lambda: HFAttention(mask=False, scale_op="mul"),
    "single_head_rank3": lambda: HFAttention(heads=1, mask=True),
    "timm_qkv": lambda: TimmAttention(),
    "torch_mha": lambda: TorchMHA(),
    "hf_dropout": lambda: HFAttention(p=0.25),
}


def row(case, what, value, ok, note=""):
    print("%-22s %-36s %10.3g %s  %s" % (case, what, value, "ok" if ok else "FAIL", note))
    if not ok:
        FAILED.append("%s: %s" % (case, what))


def export(name, d):
    default = torch.get_default_dtype()  # op_check makes it float64; the model is exported in float32
    torch.set_default_dtype(torch.float32)
    try:
        torch.manual_seed(0)
        m = CASES[name]()
        x = torch.randn(B, L, E)
        path = os.path.join(d, "model.onnx")
        torch.onnx.export(m, x, path, opset_version=17, training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False, input_names=["x"], output_names=["y"])
    finally:
        torch.set_default_dtype(default)
    np.save(os.path.join(d, "x.npy"), x.numpy())
    np.save(os.path.join(d, "t.npy"), np.random.default_rng(1).standard_normal((B, L, E)).astype(np.float32))
    return m


def dump(vcc, d, pass_name, *extra):
    p = subprocess.run([vcc, "model.onnx", "--loss", "mse", "--dump-ir", pass_name] + list(extra), cwd=d,
                       capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError(p.stderr[-2000:])
    return p.stdout


def ll_tensors(text):
    """Names of the tensors the nodes of a dump compute whose last two dims are (L, L) (a constant mask
    of that shape is the model's, not the plan's)."""
    nodes = "\n".join(ln for ln in text.splitlines() if ln.startswith("node "))
    return sorted(set(re.findall(r'"([^"]+)" f32\[(?:\d+,)*%d,%d\]' % (L, L), nodes)))


def step(vcc, d, sub, extra, target="train.c"):
    w = os.path.join(d, sub)
    os.makedirs(w, exist_ok=True)
    exe = oc._build(vcc, os.path.join(d, "model.onnx"), target, w, ["--loss", "mse", "--keep-grads"] + extra)
    out = oc._run([exe, "--data", os.path.join(d, "x.npy"), "--targets", os.path.join(d, "t.npy"), "--lr", "0",
                   "--steps", "1", "--save-grads", "g.safetensors", "--seed", "3"], w)
    loss = float([ln for ln in out.splitlines() if ln.startswith("step ")][-1].split()[3])
    return loss, load_file(os.path.join(w, "g.safetensors"))


def grad_err(got, want):
    """Per tensor max|got - want| / max|want|; a tensor whose gradient is zero in exact arithmetic (the key
    projection's bias: softmax ignores a constant added to a row), max|want| <= 1e-6 of the largest
    gradient, is measured against that largest gradient instead."""
    out = {}
    scale = max(float(np.abs(w).max()) for w in want.values())
    for n, w in want.items():
        ref = float(np.abs(w).max())
        out[n] = float(np.abs(np.asarray(got[n], np.float64) - w).max()) / (ref if ref > 1e-6 * scale else scale)
    return out


def torch_ref(m, d):
    m = m.double()
    if getattr(m, "mask", None) is not None:
        m.mask = m.mask.double()
    m.train()
    x = torch.tensor(np.load(os.path.join(d, "x.npy")), dtype=torch.float64)
    t = torch.tensor(np.load(os.path.join(d, "t.npy")), dtype=torch.float64)
    loss = torch.mean((m(x) - t) ** 2)
    params = dict(m.named_parameters())
    grads = torch.autograd.grad(loss, list(params.values()))
    return m, x, t, float(loss), {n: g.numpy() for n, g in zip(params, grads)}


def check_case(vcc, work, name, cuda):
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    m = export(name, d)
    fused, unfused = dump(vcc, d, "fuse"), dump(vcc, d, "fuse", "--no-fuse-attention")
    nf = len(re.findall(r"FusedAttention", fused))
    site = re.search(r'fused="([^"]*)"', fused)
    row(name, "FusedAttention nodes (unfused: %d)" % len(re.findall("FusedAttention", unfused)), nf,
        nf == 1 and "FusedAttention" not in unfused, site.group(1) if site else "")
    same = []
    for pas in ("fuse", "autodiff", "memplan"):
        text = dump(vcc, d, pas)
        with open(os.path.join(d, pas + ".vir"), "w") as f:
            f.write(text)
        loss = ["--loss", "mse"] if pas == "fuse" else []  # the loss pass runs after fuse
        p = subprocess.run([vcc, pas + ".vir", "--dump-ir", pas] + loss, cwd=d, capture_output=True, text=True)
        same.append(p.returncode == 0 and p.stdout == text)
    row(name, "dumps after fuse/autodiff/memplan", float(sum(same)), all(same), "read back byte for byte")
    ll_f, ll_u = ll_tensors(dump(vcc, d, "memplan")), ll_tensors(dump(vcc, d, "memplan", "--no-fuse-attention"))
    row(name, "(L, L) tensors planned, fused/unfused", len(ll_f), not ll_f and len(ll_u) > 0,
        "unfused: %d (%s...)" % (len(ll_u), ", ".join(ll_u[:2])))
    lf, gf = step(vcc, d, "fused", [])
    lu, gu = step(vcc, d, "unfused", ["--no-fuse-attention"])
    e = max(grad_err(gf, gu).values())
    row(name, "fused vs unfused: loss, gradients", abs(lf - lu) / abs(lu), abs(lf - lu) <= 1e-5 * abs(lu) and e <= 1e-5,
        "gradients %.2e" % e)
    if "dropout" not in name:
        mref, x, t, l64, g64 = torch_ref(m, d)
        e = grad_err(gf, g64)
        worst = max(e, key=e.get)
        row(name, "vs PyTorch float64: loss, gradients", abs(lf - l64) / abs(l64),
            abs(lf - l64) <= 1e-6 * abs(l64) and e[worst] <= 1e-5, "gradients %.2e (%s)" % (e[worst], worst))
        rng = np.random.default_rng(4)
        worst_fd, rows = 0.0, []
        params = dict(mref.named_parameters())
        for n, p in params.items():
            u = torch.tensor(rng.standard_normal(p.shape), dtype=torch.float64)
            h = 1e-4
            with torch.no_grad():
                p += h * u
                lp = float(torch.mean((mref(x) - t) ** 2))
                p -= 2 * h * u
                lm = float(torch.mean((mref(x) - t) ** 2))
                p += h * u
            fd = (lp - lm) / (2 * h)
            got = float(np.sum(np.asarray(gf[n], np.float64) * u.numpy()))
            rows.append((abs(got - fd), float(np.sqrt(np.sum(g64[n] ** 2) * np.sum(u.numpy() ** 2)))))
        top = max(r[1] for r in rows)  # |g| |u| of the largest gradient: the floor of a zero gradient's scale
        worst_fd = max(err / (sc if sc > 1e-6 * top else top) for err, sc in rows)
        row(name, "directional derivatives vs central FD", worst_fd, worst_fd <= 1e-6)
    if cuda:
        cuda_check(vcc, d, name, lf, gf)


def cuda_check(vcc, d, name, lf, gf):
    w = os.path.join(d, "cuda")
    os.makedirs(w, exist_ok=True)
    try:
        exe = oc._build(vcc, os.path.join(d, "model.onnx"), "train.cu", w, ["--loss", "mse"], fast=False)
        row(name, "cuda: nvcc build of the trainer", 0.0, True, "no warnings")
    except RuntimeError as ex:
        row(name, "cuda: nvcc build of the trainer", float("inf"), False, str(ex)[:300])
        return
    if not oc._gpu():
        print("cuda: built only; no GPU here, so the CUDA trainer was not run against the C one")
        return
    lc, gc = step(vcc, d, "cuda_run", [], target="train.cu")
    e = max(grad_err(gc, gf).values())
    row(name, "cuda vs C: loss, gradients", abs(lc - lf) / abs(lf), abs(lc - lf) <= 1e-5 * abs(lf) and e <= 1e-5,
        "gradients %.2e" % e)


def export_at_17(make, d):
    """The float32 module make() builds, exported to d/model.onnx at opset 17 in training mode, on a
    (B, L, E) input."""
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float32)
    try:
        torch.onnx.export(make(), torch.randn(B, L, E), os.path.join(d, "model.onnx"), opset_version=17,
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                          input_names=["x"], output_names=["y"])
    finally:
        torch.set_default_dtype(default)


def gelu_fusion(vcc, work):
    """nn.GELU exported at opset 17 (Div, Erf, Add, Mul, Mul) becomes one Gelu node."""
    d = os.path.join(work, "gelu")
    os.makedirs(d, exist_ok=True)
    export_at_17(lambda: torch.nn.Sequential(torch.nn.Linear(E, 2 * E), torch.nn.GELU(), torch.nn.Linear(2 * E, E)), d)
    text = dump(vcc, d, "fuse")
    ops = re.findall(r"^node \d+ \w+ (\w+) ", text, re.M)
    row("gelu_mlp", "Gelu nodes after fuse (Erf: %d)" % ops.count("Erf"), ops.count("Gelu"),
        ops.count("Gelu") == 1 and "Erf" not in ops and "Div" not in ops, " ".join(ops))


def swish_fusion(vcc, work):
    """nn.SiLU exported at opset 17 (Sigmoid, Mul) becomes one Swish node; a Sigmoid whose output has
    another reader stays as written."""
    d = os.path.join(work, "swish")
    os.makedirs(d, exist_ok=True)

    class TwoReaders(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = torch.nn.Linear(E, E), torch.nn.Linear(E, E)

        def forward(self, x):
            h = self.a(x)
            s = torch.sigmoid(h)
            return self.b(torch.nn.functional.silu(h) + h * s + s)

    export_at_17(TwoReaders, d)
    text = dump(vcc, d, "fuse")
    ops = re.findall(r"^node \d+ \w+ (\w+) ", text, re.M)
    # silu(h) is one Swish; h * s keeps its Sigmoid, which s itself also feeds
    row("silu", "Swish nodes after fuse (Sigmoid: %d)" % ops.count("Sigmoid"), ops.count("Swish"),
        ops.count("Swish") == 1 and ops.count("Sigmoid") == 1, " ".join(ops))


class Products(torch.nn.Module):
    """Three products whose B torch exports through a Transpose: a Linear on (B, L, E), h @ w.t() of a
    weight, and h @ g.transpose(-1, -2) of two activations (no softmax, so no attention fusion)."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(E, E)
        self.w = torch.nn.Parameter(torch.randn(E, E) / E ** 0.5)

    def forward(self, x):
        h = self.a(x)
        g = h @ self.w.t()
        return (h @ g.transpose(-1, -2)) @ g


def transposed_b(vcc, work):
    """Transposes of a MatMul's B folded into the MatMul (transB=1); the numbers against float64."""
    d = os.path.join(work, "transposed_b")
    os.makedirs(d, exist_ok=True)
    made = []

    def make():  # in float32 (export_at_17 sets the default dtype): the module kept for the reference
        torch.manual_seed(0)
        made.append(Products())
        return made[0]

    export_at_17(make, d)
    m = made[0]
    np.save(os.path.join(d, "x.npy"), np.random.default_rng(2).standard_normal((B, L, E)).astype(np.float32))
    np.save(os.path.join(d, "t.npy"), np.random.default_rng(1).standard_normal((B, L, E)).astype(np.float32))
    text = dump(vcc, d, "fuse")
    ops = re.findall(r"^node \d+ \w+ (\w+) ", text, re.M)
    tb = len(re.findall(r"^node \d+ forward MatMul .*transB=1", text, re.M))
    row("transposed_b", "MatMuls with transB=1 (Transpose: %d)" % ops.count("Transpose"), tb,
        tb == 3 and "Transpose" not in ops, " ".join(ops))
    lf, gf = step(vcc, d, "run", [])
    _, _, _, l64, g64 = torch_ref(m, d)
    e = grad_err(gf, g64)
    worst = max(e, key=e.get)
    row("transposed_b", "vs PyTorch float64: loss, gradients", abs(lf - l64) / abs(l64),
        abs(lf - l64) <= 1e-6 * abs(l64) and e[worst] <= 1e-5, "gradients %.2e (%s)" % (e[worst], worst))


def transposed_b_noperm(vcc, work):
    """A rank-2 Transpose without perm (ONNX reverses the dims) read by a MatMul folds into it too."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    d = os.path.join(work, "transposed_b_noperm")
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(5)
    w = rng.standard_normal((5, 4)).astype(np.float32)
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    g = helper.make_graph([helper.make_node("Transpose", ["W"], ["Wt"]), helper.make_node("MatMul", ["A", "Wt"], ["Y"])],
                          "noperm", [helper.make_tensor_value_info("A", TensorProto.FLOAT, [2, 3, 4])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 3, 5])],
                          [numpy_helper.from_array(w, "W")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), os.path.join(d, "model.onnx"))
    text = oc._run([vcc, "model.onnx", "--forward-only", "--dump-ir", "fuse"], d)
    ops = re.findall(r"^node \d+ \w+ (\w+) ", text, re.M)
    tb = len(re.findall(r"^node \d+ forward MatMul .*transB=1", text, re.M))
    fwd = oc._build(vcc, "model.onnx", "fwd.c", d, ["--forward-only"])
    np.save(os.path.join(d, "a.npy"), a)
    oc._run([fwd, "a.npy", "-o", "y.npy"], d)
    e = oc._err(np.load(os.path.join(d, "y.npy")), a.astype(np.float64) @ w.astype(np.float64).T)
    row("transposed_b_noperm", "transB=1, forward vs numpy", e, tb == 1 and "Transpose" not in ops and e <= 1e-6,
        " ".join(ops))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vcc", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--only", default=None)
    ap.add_argument("--cuda", action="store_true")
    ap.add_argument("--cuda-one", action="store_true")
    args = ap.parse_args()
    vcc, work = os.path.abspath(args.vcc), os.path.abspath(args.work)
    os.makedirs(work, exist_ok=True)
    torch.set_num_threads(1)
    if args.cuda_one:
        if shutil.which("nvcc") is None:
            print("skip: nvcc not found")
            return 77
        d = os.path.join(work, "cuda_one")
        os.makedirs(d, exist_ok=True)
        export("hf_dropout", d)
        lf, gf = step(vcc, d, "fused", [])
        cuda_check(vcc, d, "hf_dropout", lf, gf)
    else:
        if not args.only or "gelu" in args.only:
            try:
                gelu_fusion(vcc, work)
            except Exception as ex:
                row("gelu_mlp", "run", float("inf"), False, str(ex)[:600])
        if not args.only or "silu" in args.only:
            try:
                swish_fusion(vcc, work)
            except Exception as ex:
                row("silu", "run", float("inf"), False, str(ex)[:600])
        if not args.only or "transposed_b" in args.only:
            try:
                transposed_b(vcc, work)
            except Exception as ex:
                row("transposed_b", "run", float("inf"), False, str(ex)[:600])
            try:
                transposed_b_noperm(vcc, work)
            except Exception as ex:
                row("transposed_b_noperm", "run", float("inf"), False, str(ex)[:600])
        for name in CASES:
            if args.only and args.only not in name:
                continue
            try:
                check_case(vcc, work, name, args.cuda)
            except Exception as ex:  # a crash of vcc or of a program is a failed check
                row(name, "run", float("inf"), False, str(ex)[:600])
    print("%d failed%s" % (len(FAILED), (": " + "; ".join(FAILED)) if FAILED else ""))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
