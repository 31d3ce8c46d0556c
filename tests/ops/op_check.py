"""Per-op checks of vcc against PyTorch float64 and central finite differences (tests/ops/<family>/).

A family's test lists named cases and hands them to main():

    import op_check as oc
    CASES = [
        oc.Case("sigmoid", "Sigmoid", inputs={"X": (2, 3, 4)}, ref=lambda X: torch.sigmoid(X)),
        oc.Case("leakyrelu_alpha", "LeakyRelu", inputs={"X": (2, 5)}, attrs={"alpha": 0.3},
                ref=lambda X: F.leaky_relu(X, 0.3)),
        oc.Case("reshape", "Reshape", inputs={"X": (2, 6)}, consts={"shape": np.array([3, 4])},
                ref=lambda X, shape: X.reshape(3, 4), grad=["X"]),
    ]
    sys.exit(oc.main(CASES))        # run as: script.py --vcc BUILD/vcc --work DIR [--only NAME] [--cuda]

`oc.main(CASES, references=f)` first hands the selected cases to f, which checks their references against an
independent runtime (onnxruntime) and returns what is wrong; each such line fails the run.

A Case is one ONNX node (op type `op`, attributes `attrs`, opset `opset`) whose inputs, in order, are
the float tensors of `inputs` (name -> shape; values uniform in [lo, hi), or `init[name](rng, shape)`)
and the constants of `consts` (name -> numpy array, written as initializers: int64 ones are constants to
vcc, float ones would be trained, so give float constants only when the op treats them as constants);
`order` gives the input order when it is not inputs then consts ("" for an absent optional input).
`ref(**tensors)` computes the output(s) in PyTorch from float64 tensors (constants as torch tensors too).
`outputs` is the number of node outputs (all are compared in the forward check; an int64 reference
output is declared INT64, e.g. MaxPool's Indices). `flags` are extra vcc options for every program of
the case (e.g. ["--allow-inference-export"] for an op's inference form); a callable among them is called
as f(vcc, onnx_path, cwd, options) with the program's other options and gives the options it stands
for (e.g. a --memory-limit read from vcc's refusal of that model). The environment variable
VCC_OPS_CFLAGS, when set, is appended to every C program's build command (e.g. a -D that a family's
runtime reads).

Each case is checked three ways:
  forward   `vcc --forward-only`, built with the printed command, run on the case's inputs (float32);
            every output against ref in float64 on the same float32 values:
            max|vcc - ref| / max(max|ref|, 1e-30) <= fwd_tol.
  gradient  the same node in a trainer: its float inputs become parameters (initializers), the first
            output goes into `vcc --loss mse` against fixed random targets T, and the trainer runs one
            step with --lr 0 --save-grads. Every gradient in `grad` (default: every float input) is
            compared with (a) PyTorch float64 autograd of L = mean((y - T)^2) and (b) central finite
            differences of that L in float64 (up to `fd_points` elements per input, step h = 1e-6 *
            max(1, |x|)): max|vcc - ref| / max|ref| <= grad_tol for both. (b) against (a) is printed
            too: it shows the reference itself is right.
  cuda      with --cuda: the forward and trainer .cu of the case are built with nvcc (no warnings);
            --cuda-one builds the first case's trainer alone (a program inlines all of its families'
            kernels, forward and backward, so that one build compiles every CUDA kernel of the family);
            where a GPU is present (nvidia-smi finds one) they run and their outputs and gradients
            must match the CPU program's within cuda_tol. Without a GPU the run part is skipped and
            says so.

Prints one line per case and check with its figure, then a summary; exits 1 if any check failed.
Only the inputs and the reference are the case's: the figures come from running vcc's programs.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
import torch
from onnx import helper, numpy_helper, TensorProto
from safetensors.numpy import load_file

torch.set_default_dtype(torch.float64)


class Case:
    def __init__(self, name, op, inputs, ref, attrs=None, consts=None, order=None, opset=17, outputs=1,
                 grad=True, init=None, lo=-1.0, hi=1.0, fwd_tol=1e-6, grad_tol=1e-6, fd_points=24,
                 cuda_tol=1e-5, seed=0, domain="", flags=None):
        self.name, self.op, self.inputs, self.ref = name, op, dict(inputs), ref
        self.attrs, self.consts = dict(attrs or {}), dict(consts or {})
        self.order = list(order) if order is not None else list(self.inputs) + list(self.consts)
        self.opset, self.outputs, self.init = opset, outputs, dict(init or {})
        self.grad = list(self.inputs) if grad is True else (list(grad) if grad else [])
        self.lo, self.hi, self.fwd_tol, self.grad_tol = lo, hi, fwd_tol, grad_tol
        self.fd_points, self.cuda_tol, self.seed, self.domain = fd_points, cuda_tol, seed, domain
        self.flags = list(flags or [])

    def values(self):
        rng = np.random.default_rng(self.seed)
        vals = {}
        for n, shape in self.inputs.items():
            f = self.init.get(n)
            v = f(rng, shape) if f else rng.uniform(self.lo, self.hi, size=shape)
            vals[n] = np.asarray(v, dtype=np.float32)
        return vals


def _tensor_type(arr):
    return {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64,
            np.dtype(np.int32): TensorProto.INT32, np.dtype(np.bool_): TensorProto.BOOL}[arr.dtype]


def _ref_outputs(case, vals):
    args = {n: torch.tensor(v.astype(np.float64)) for n, v in vals.items()}
    for n, c in case.consts.items():
        args[n] = torch.tensor(c)
    out = case.ref(**args)
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _model(case, vals, out_shapes, trainable, out_types=None):
    """The case's node; float inputs are graph inputs (forward) or initializers (trainer). out_types: the
    ONNX element type of each output (FLOAT when not given)."""
    outs = ["y%d" % i for i in range(case.outputs)]
    node = helper.make_node(case.op, case.order, outs, name="node", domain=case.domain, **case.attrs)
    inits = [numpy_helper.from_array(np.asarray(c), n) for n, c in case.consts.items()]
    g_in = []
    if trainable:
        inits += [numpy_helper.from_array(v, n) for n, v in vals.items()]
        # the trainer's data input: unused by the node, one row per row of the output
        g_in.append(helper.make_tensor_value_info("data", TensorProto.FLOAT, [max(1, out_shapes[0][0]) if out_shapes[0] else 1]))
    else:
        g_in += [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(v.shape)) for n, v in vals.items()]
    nodes = [node]
    types = out_types or [TensorProto.FLOAT] * len(outs)
    g_out = [helper.make_tensor_value_info(o, t, list(s)) for o, t, s in zip(outs, types, out_shapes)]
    if trainable:
        g_out = g_out[:1]
        if len(out_shapes[0]) == 0:  # mse needs a batch dimension
            inits.append(numpy_helper.from_array(np.array([1], dtype=np.int64), "one"))
            nodes.append(helper.make_node("Reshape", ["y0", "one"], ["y0r"], name="as_1"))
            g_out = [helper.make_tensor_value_info("y0r", TensorProto.FLOAT, [1])]
    graph = helper.make_graph(nodes, case.name, g_in, g_out, initializer=inits)
    opsets = [helper.make_opsetid("", case.opset)]
    m = helper.make_model(graph, opset_imports=opsets, producer_name="op_check")
    m.ir_version = 8
    return m


def _run(cmd, cwd, shell=False):
    p = subprocess.run(cmd, cwd=cwd, shell=shell, capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError("%s exited %d: %s%s" % (cmd if isinstance(cmd, str) else " ".join(cmd), p.returncode,
                                                   p.stdout[-2000:], p.stderr[-2000:]))
    return p.stdout


# what a CUDA program's build adds to vcc's printed nvcc command: any warning of nvcc or of the host
# compiler fails the build (a kernel that "builds with no warnings" is checked, not assumed)
NVCC_STRICT = " -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror"


def _build(vcc, onnx_path, out, cwd, extra, fast=True):
    plain = [a for a in extra if not callable(a)]
    extra = [b for a in extra for b in (a(vcc, onnx_path, cwd, plain) if callable(a) else [a])]
    cmd = _run([vcc, onnx_path, "-o", out] + extra, cwd).strip().splitlines()[-1]
    if fast and out.endswith(".c"):
        cmd = cmd.replace("-O2 -march=native", "-O0")
    if out.endswith(".c") and os.environ.get("VCC_OPS_CFLAGS"):
        cmd += " " + os.environ["VCC_OPS_CFLAGS"]
    if out.endswith(".cu"):
        cmd += NVCC_STRICT
    _run(cmd, cwd, shell=True)
    return os.path.join(cwd, os.path.splitext(out)[0] + ("_cuda" if out.endswith(".cu") else ""))


def _err(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape:
        return float("inf")
    if want.size == 0:
        return 0.0
    return float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))


def _loss_and_grads(case, vals, T):
    args = {n: torch.tensor(v.astype(np.float64), requires_grad=n in case.grad) for n, v in vals.items()}
    for n, c in case.consts.items():
        args[n] = torch.tensor(c)
    y = _ref_outputs_from(case, args)[0].reshape(T.shape)
    loss = ((y - torch.tensor(T.astype(np.float64))) ** 2).mean()
    loss.backward()
    return loss.item(), {n: args[n].grad.numpy() for n in case.grad}


def _ref_outputs_from(case, args):
    out = case.ref(**args)
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _fd(case, vals, T, name, idx):
    def L(v):
        args = {n: torch.tensor(x.astype(np.float64)) for n, x in vals.items()}
        args[name] = torch.tensor(v)
        for n, c in case.consts.items():
            args[n] = torch.tensor(c)
        y = _ref_outputs_from(case, args)[0].reshape(T.shape)
        return ((y - torch.tensor(T.astype(np.float64))) ** 2).mean().item()
    base = vals[name].astype(np.float64)
    out = []
    for i in idx:
        h = 1e-6 * max(1.0, abs(base.flat[i]))
        p, m = base.copy(), base.copy()
        p.flat[i] += h
        m.flat[i] -= h
        out.append((L(p) - L(m)) / (2 * h))
    return np.array(out)


def _gpu():
    return shutil.which("nvidia-smi") is not None and subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0


def check_case(case, vcc, work, cuda=False, cuda_train_only=False):
    """Run the three checks of one case; returns a list of (check, figure, ok, note)."""
    d = os.path.join(work, case.name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    vals = case.values()
    refs = _ref_outputs(case, vals)
    out_shapes = [tuple(r.shape) for r in refs]
    out_types = [TensorProto.INT64 if r.dtype == torch.int64 else TensorProto.FLOAT for r in refs]
    rows = []
    # forward
    onnx.save(_model(case, vals, out_shapes, trainable=False, out_types=out_types), os.path.join(d, "fwd.onnx"))
    fwd = _build(vcc, "fwd.onnx", "fwd.c", d, ["--forward-only"] + case.flags)
    ins = []
    for n, v in vals.items():
        np.save(os.path.join(d, n + ".npy"), v)
        ins.append(n + ".npy")
    outs = ["out%d.npy" % i for i in range(case.outputs)]
    _run([fwd] + ins + ["-o"] + outs, d)
    got = [np.load(os.path.join(d, o)) for o in outs]
    e = max(_err(g, r.detach().numpy()) for g, r in zip(got, refs))
    rows.append(("forward", e, e <= case.fwd_tol, ""))
    # gradients
    if case.grad:
        T = np.random.default_rng(case.seed + 1).uniform(-1, 1, size=out_shapes[0] or (1,)).astype(np.float32)
        onnx.save(_model(case, vals, out_shapes, trainable=True), os.path.join(d, "train.onnx"))
        train = _build(vcc, "train.onnx", "train.c", d, ["--loss", "mse", "--keep-grads"] + case.flags)
        np.save(os.path.join(d, "data.npy"), np.zeros((T.shape[0],), np.float32))
        np.save(os.path.join(d, "targets.npy"), T)
        _run([train, "--data", "data.npy", "--targets", "targets.npy", "--lr", "0", "--save-grads", "grads.safetensors"], d)
        vg = load_file(os.path.join(d, "grads.safetensors"))
        _, ag = _loss_and_grads(case, vals, T)
        for n in case.grad:
            g = vg.get(n)
            if g is None:
                rows.append(("grad " + n, float("inf"), False, "vcc computed no gradient"))
                continue
            e_auto = _err(g, ag[n])
            rng = np.random.default_rng(case.seed + 2)
            size = vals[n].size
            idx = rng.choice(size, size=min(case.fd_points, size), replace=False)
            fd = _fd(case, vals, T, n, idx)
            e_fd = _err(g.reshape(-1)[idx], fd)
            e_ref = _err(ag[n].reshape(-1)[idx], fd)
            ok = e_auto <= case.grad_tol and e_fd <= case.grad_tol
            rows.append(("grad " + n, max(e_auto, e_fd), ok,
                         "autograd %.1e, finite differences %.1e (autograd vs fd %.1e)" % (e_auto, e_fd, e_ref)))
    if cuda:
        for name, target, extra in (("fwd", "fwd.cu", ["--forward-only"]), ("train", "train.cu", ["--loss", "mse", "--keep-grads"])):
            if (name == "train" and not case.grad) or (name == "fwd" and cuda_train_only and case.grad):
                continue
            try:
                exe = _build(vcc, name + ".onnx", target, d, extra + case.flags, fast=False)
                rows.append(("cuda build " + name, 0.0, True, "nvcc, no warnings"))
            except RuntimeError as x:
                rows.append(("cuda build " + name, float("inf"), False, str(x)[:300]))
                continue
            if not _gpu():
                continue
            if name == "fwd":
                cu = ["cu%d.npy" % i for i in range(case.outputs)]
                _run([exe] + ins + ["-o"] + cu, d)
                e = max(_err(np.load(os.path.join(d, c)), g) for c, g in zip(cu, got))
            else:
                _run([exe, "--data", "data.npy", "--targets", "targets.npy", "--lr", "0", "--save-grads",
                      "grads_cuda.safetensors"], d)
                gc = load_file(os.path.join(d, "grads_cuda.safetensors"))
                e = max(_err(gc[n], vg[n]) for n in case.grad if n in vg)
            rows.append(("cuda vs cpu " + name, e, e <= case.cuda_tol, ""))
    return rows


def main(cases, argv=None, references=None):
    ap = argparse.ArgumentParser(description="per-op checks of vcc (tests/ops/op_check.py)")
    ap.add_argument("--vcc", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--only", default=None, help="run the cases whose name contains this")
    ap.add_argument("--cuda", action="store_true", help="also build (and on a GPU run) the CUDA programs")
    ap.add_argument("--cuda-one", action="store_true",
                    help="only the first selected case, with its CUDA programs: every kernel of the family is in them")
    args = ap.parse_args(argv)
    vcc = os.path.abspath(args.vcc)
    os.makedirs(args.work, exist_ok=True)
    names = [c.name for c in cases]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        print("duplicate case names: %s" % ", ".join(sorted(dup)))
        return 1
    failed, total = [], 0
    selected = [c for c in cases if not args.only or args.only in c.name]
    if args.cuda_one:
        selected, args.cuda = selected[:1], True
        if shutil.which("nvcc") is None:
            print("skip: nvcc not found")
            return 77
    bad = references(selected) if references else []
    for b in bad:
        print("FAIL reference " + b)
    for c in selected:
        try:
            rows = check_case(c, vcc, os.path.abspath(args.work), args.cuda, args.cuda_one)
        except Exception as x:  # a crash of vcc or of a program is a failed case
            rows = [("run", float("inf"), False, str(x)[:600])]
        for check, fig, ok, note in rows:
            total += 1
            print("%-40s %-22s %9.2e %s%s" % (c.name, check, fig, "ok  " if ok else "FAIL", ("  " + note) if note else ""))
            if not ok:
                failed.append("%s: %s" % (c.name, check))
    if args.cuda and not _gpu():
        print("cuda: built only; no GPU here, so the CUDA programs were not run against the CPU ones")
    print("%d checks, %d failed%s" % (total, len(failed), (": " + "; ".join(failed)) if failed else ""))
    return 1 if failed or bad or total == 0 else 0
