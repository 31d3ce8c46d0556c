"""After one step, every parameter gradient of a vcc trainer matches PyTorch autograd.

    test_grads.py --vcc BUILD/vcc --export-dir DIR --model NAME [--cpu-conv dnnl|im2col] [--work SUBDIR]

DIR holds models/export_torchvision.py's output (NAME.onnx, NAME.pt, data.npy, labels.npy). The trainer
(compiled with --keep-grads, and --cpu-conv when given) runs one step with --save-grads on the first batch;
the torchvision model is rebuilt from the same state dict (models/reference_sgd.py's build_model) and runs
the same batch, nn.CrossEntropyLoss (mean), in float64 (the most accurate reference autograd gives), and
in float32 on each of PyTorch's CPU convolution paths (oneDNN, its default, and its own im2col + GEMM),
each on 1 and on 2 threads, with every ReLU's backward made to take float64's side (so their distance
from float64 is rounding alone). Per parameter, with e(a) = max|a - ref64| / max|ref64|:
    e(vcc) <= max(--tol (1e-5), 2 * max e(PyTorch float32))
where a ReLU tie may be taken on its other side: a ReLU input within float32's rounding of zero
(|x64| <= max|x32 - x64| over that ReLU call, tests/e2e/relu_ties.py) lands on either side in a correct
float32 program, and deep in a net one such element moves a whole channel's weight gradient (mc3_18's
first step at (2, 3, 8, 32, 32) has one that a 1e-6 relative change of layer2's first convolution output
flips, moving a layer4 weight gradient by 6e-2). For each tie the float64 backward is redone with that
element on its other side; the ties whose gradient changes lower vcc's distance (in units of each
tensor's allowance) the most are taken, one at a time while one does; where several are, the backward is
redone with all of them on their other side at once (a tie changes the gradient reaching another one
upstream, which the sum of their single changes leaves out), and what is left is held to the
allowance. A wrong gradient is not such a combination, so it still fails. The taken ties are printed
with their ReLU and float64 value, and every tensor's figure, worst first.
"""

import argparse
import os
import subprocess
import sys

import numpy as np
import onnx
import torch
from safetensors.numpy import load_file

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "models"))
import reference_sgd  # noqa: E402
from relu_ties import TIES, explain_by_ties, find_ties, tie_flips  # noqa: E402  (patches torch.nn.ReLU)


def pass_(name, state, x, y, dtype, mkldnn=True, masks=None):
    """The model in dtype on (x, y): forward and backward with the ReLU backward on masks when given.
    Returns (model, loss (graph kept), the ReLU inputs in call order, their module names)."""
    torch.backends.mkldnn.enabled = mkldnn
    m = reference_sgd.build_model(name, state)[0].to(dtype)
    TIES["pre"], TIES["flip"], TIES["mask"], TIES["names"] = [], {}, masks, []
    TIES["modules"] = {id(mod): n for n, mod in m.named_modules()}
    loss = torch.nn.functional.cross_entropy(m(torch.tensor(x, dtype=dtype)), torch.tensor(y))
    TIES["mask"] = None
    m.zero_grad()
    loss.backward(retain_graph=True)
    torch.backends.mkldnn.enabled = True
    return m, loss, TIES["pre"], TIES["names"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vcc", required=True)
    ap.add_argument("--export-dir", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--tol", type=float, default=1e-5)
    ap.add_argument("--cpu-conv", choices=("dnnl", "im2col"), help="vcc --cpu-conv (vcc's default when absent)")
    ap.add_argument("--work", default="grads", help="folder under --export-dir for the trainer's files")
    args = ap.parse_args()
    d = os.path.abspath(args.export_dir)
    w = os.path.join(d, args.work)
    os.makedirs(w, exist_ok=True)

    def run(cmd, shell=False):
        p = subprocess.run(cmd, cwd=w, shell=shell, capture_output=True, text=True)
        if p.returncode:
            sys.exit("FAIL: %s exited %d\n%s%s" % (cmd, p.returncode, p.stdout, p.stderr))
        return p.stdout

    conv = ["--cpu-conv", args.cpu_conv] if args.cpu_conv else []
    build = run([os.path.abspath(args.vcc), os.path.join(d, args.model + ".onnx"), "-o", "train.c",
                 "--keep-grads"] + conv).strip()
    run(build, shell=True)
    run(["./train", "--data", os.path.join(d, "data.npy"), "--labels", os.path.join(d, "labels.npy"), "--steps",
         "1", "--save-grads", "vcc_grads.safetensors"])
    got = load_file(os.path.join(w, "vcc_grads.safetensors"))

    batch = onnx.load(os.path.join(d, args.model + ".onnx")).graph.input[0].type.tensor_type.shape.dim[0].dim_value
    x = np.load(os.path.join(d, "data.npy"))[:batch]
    y = np.load(os.path.join(d, "labels.npy"))[:batch]
    state = os.path.join(d, args.model + ".pt")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    m64, l64, pre64, relus = pass_(args.model, state, x, y, torch.float64)
    ref = {n: p.grad.clone() for n, p in m64.named_parameters()}
    masks = [p > 0 for p in pre64]
    ref32, pre32 = [], []
    for mk in (True, False):
        for t in (1, 2):
            torch.set_num_threads(t)
            m32, _, pre, _ = pass_(args.model, state, x, y, torch.float32, mk, masks)
            ref32.append({n: p.grad.double() for n, p in m32.named_parameters()})
            pre32.append(pre)
            del m32
    torch.set_num_threads(threads)
    # the ties: each one's gradient change in float64
    def moved_by(flips):
        """Every parameter gradient's change in float64 with the ReLU elements flips ({call: [flat
        indices]}) on their other side in backward."""
        TIES["flip"] = {k: torch.tensor(v) for k, v in flips.items()}
        m64.zero_grad()
        l64.backward(retain_graph=True)
        TIES["flip"] = {}
        return {n: (p.grad - ref[n]).numpy() for n, p in m64.named_parameters() if not torch.equal(p.grad, ref[n])}

    ties, tie_at = [], []
    for k, i, xi, _ in find_ties(pre64, pre32):
        ties.append(("%s[%d] %.1e" % (relus[k], i, xi), moved_by({k: [i]})))
        tie_at.append((k, i))

    def dist(a, r):
        return float((a - r).abs().max() / max(float(r.abs().max()), 1e-30))

    rows, failed, resid, scale = [], [], {}, {}
    for name, r in ref.items():
        if name not in got:
            failed.append("%s missing" % name)
            continue
        g = torch.from_numpy(got[name].astype(np.float64))
        if tuple(g.shape) != tuple(r.shape):
            failed.append("%s has shape %s, PyTorch's %s" % (name, list(g.shape), list(r.shape)))
            continue
        e32 = max(dist(a[name], r) for a in ref32)
        allowed = max(args.tol, 2 * e32)
        scale[name] = allowed * max(float(r.abs().max()), 1e-30)  # the allowance, in gradient units
        resid[name] = ((g - r) / scale[name]).numpy()
        rows.append((dist(g, r), name, e32, allowed))
    extra = sorted(set(got) - set(ref))
    if extra:
        failed.append("vcc has gradients PyTorch has not: %s" % ", ".join(extra))
    left, taken, picked = explain_by_ties(resid, [(s, {n: v / scale[n] for n, v in m.items() if n in scale})
                                                  for s, m in ties])
    if len(picked) > 1:
        # the picked ties redone together in float64: one tie changes the gradient that reaches another
        # upstream in backward, which the sum of their single changes leaves out
        both = moved_by(tie_flips(tie_at, picked))
        left = {n: v - both[n] / scale[n] if n in both else v for n, v in resid.items()}
    final = []
    for e, name, e32, allowed in rows:
        after = float(np.abs(left[name]).max()) * allowed  # the distance the taken ties leave
        if after > allowed:
            failed.append("%s %.2e > %.2e" % (name, after, allowed))
        final.append((e, after, name, e32, allowed))
    rows = sorted(final, reverse=True)
    print("%s: %d parameter gradients vs float64 autograd; %d ReLU ties (inputs within float32's rounding of "
          "zero), %d taken on their other side%s" % (args.model, len(rows), len(ties), len(taken),
                                                     "".join("\n  taken: " + t for t in taken)))
    print("  max|a-b|/max|b|  after ties  tensor  (PyTorch float32's distance, the larger of its paths; allowed)")
    for e, after, name, e32, allowed in rows:
        print("  %.2e  %.2e  %-40s (%.2e; %.2e)" % (e, after, name, e32, allowed))
    if failed:
        sys.exit("FAIL: %s" % "; ".join(failed))
    print("PASS (each <= max(%.0e, 2 x PyTorch float32's distance), after the ties taken)" % args.tol)


if __name__ == "__main__":
    main()
