"""Each training step of a models/video_nets.py model, checked from the trainer's own state (teacher forcing).

    test_model_steps.py --vcc BUILD/vcc --model NAME --work DIR [--shape NxCxTxHxW] [--steps 5]
                        [--target c|cu]

models/export_video_nets.py exports the model (dropout 0: vcc's masks are not PyTorch's; the Dropout
nodes stay in the graph), vcc compiles it (--loss graph for unet3d_block, whose graph computes its own
loss), and the trainer runs --steps steps writing a checkpoint after each (parameters, BN statistics,
momentum). For every step k, the PyTorch module of models/video_nets.py is loaded with the trainer's
state after step k-1 (the export's state dict for k = 1) and performs step k in float64, and in float32
on each of PyTorch's two CPU convolution paths (oneDNN, its default, and its own im2col + GEMM), with
torch.optim.SGD (lr 0.01, momentum 0.9, weight decay 1e-4); the batch is the one the trainer used
(samples (k-1)*N + i mod S). Checked per step:
  loss          |vcc - ref64| <= 1e-5 * |ref64|
  each tensor   parameters and BN running statistics after the step:
                max|vcc - ref64| <= max(2 * max|ref32 - ref64| + 4 ulp(max|ref64|), 1e-4 * max|update64|)
                i.e. within PyTorch float32's own distance from float64 on the same step (the larger of
                its two paths; a step of a badly conditioned net, s3d's for one, moves float32 far from
                float64 in PyTorch too), or the step's own update (ref64 after - before) to 1e-4 of its
                size: a tensor whose update is a few float32 roundings of its values (a bias near zero)
                is judged by that update.
  ReLU ties     a ReLU input within float32's rounding of zero (|x64| <= max|x32 - x64| over that ReLU
                call, either path) may land on either side in a correct float32 step, and its gradient
                then passes or not; deep in a net that moves whole channels' updates (s3d_small's step 1
                has -3.5e-5 in float64 after 40 layers, which vcc's float32, like PyTorch's im2col path,
                puts above zero). The float32 references take float64's side of every ReLU in backward,
                so their distance is rounding alone. For each tie, the float64 step is redone with that
                one element on its other side; the ties whose update changes lower the squared distance
                of vcc's step from ref64 (per tensor, in units of its allowance) the most are taken, one
                at a time while one does, and the rest of the distance is held to the allowance. The
                taken ties are printed with their ReLU and float64 value. A wrong update is not such a
                combination, so it still fails.
Prints the figures of every step; exits 1 on a failure.

With --target cu the CUDA trainer is built (nvcc, no warnings); it runs only where a GPU is present.
"""

import argparse
import json
import os
import subprocess
import sys

import numpy as np
import torch
from safetensors.numpy import load_file

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS_DIR = os.path.join(HERE, "..", "..", "models")
sys.path.insert(0, MODELS_DIR)
import video_nets  # noqa: E402

LR, MOMENTUM, WD = 0.01, 0.9, 1e-4


def run(cmd, cwd, shell=False):
    p = subprocess.run(cmd, cwd=cwd, shell=shell, capture_output=True, text=True)
    if p.returncode:
        sys.exit("FAIL: %s exited %d\n%s%s" % (cmd, p.returncode, p.stdout[-3000:], p.stderr[-3000:]))
    return p.stdout


def ulp(x):
    return float(np.spacing(np.float32(max(abs(x), 1e-30))))


class _ReLU(torch.autograd.Function):
    """max(x, 0), recorded: its backward passes the gradient where x > 0, or where the forced mask of
    its call says (TIES["mask"][k] at the forward, a bool tensor of x's shape), except at the flat indices
    TIES["flip"][k] of the step's k-th ReLU call, where it does the opposite (that element's other side)."""

    @staticmethod
    def forward(ctx, x, k):
        ctx.save_for_backward(x)
        ctx.k = k
        ctx.mask = TIES["mask"][k] if TIES["mask"] is not None else None
        return x.clamp_min(0)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        mask = (x > 0 if ctx.mask is None else ctx.mask).reshape(-1)
        flip = TIES["flip"].get(ctx.k)
        if flip is not None:
            mask = mask.clone()
            mask[flip] = ~mask[flip]
        return g * mask.reshape(x.shape), None


TIES = {"pre": [], "flip": {}, "mask": None, "names": [], "modules": {}}


def _relu_forward(self, x):
    TIES["pre"].append(x.detach().clone())
    TIES["names"].append(TIES["modules"].get(id(self), "relu"))
    return _ReLU.apply(x, len(TIES["pre"]) - 1)


torch.nn.ReLU.forward = _relu_forward  # every model's ReLUs are nn.ReLU modules


def forward(name, clip, num_classes, state, momenta, x, y, dtype, mkldnn=True, masks=None):
    """The PyTorch module from state (state dict names) with its SGD momentum buffers, and its loss on
    (x, y), its CPU convolutions through oneDNN (mkldnn, PyTorch's default for float32) or through its own
    im2col + GEMM path (mkldnn=False), its ReLUs' backward on masks (one per ReLU call) when given.
    Returns (model, optimizer, loss, the ReLU inputs in call order, their module names)."""
    torch.backends.mkldnn.enabled = mkldnn
    torch.manual_seed(0)
    model = video_nets.build_model(name, num_classes=num_classes, clip=clip, dropout=0.0).to(dtype)
    sd = model.state_dict()
    model.load_state_dict({k: torch.tensor(np.asarray(v)).to(sd[k].dtype) for k, v in state.items() if k in sd},
                          strict=True)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM, weight_decay=WD)
    names = {id(p): n for n, p in model.named_parameters()}
    for p in model.parameters():
        m = momenta.get(names[id(p)])
        if m is not None:
            opt.state[p]["momentum_buffer"] = torch.tensor(m, dtype=dtype)
    xt = torch.tensor(x, dtype=dtype)
    TIES["pre"], TIES["flip"], TIES["mask"], TIES["names"] = [], {}, masks, []
    TIES["modules"] = {id(m): n for n, m in model.named_modules()}
    if name == "unet3d_block":
        loss = model(xt, torch.tensor(y, dtype=dtype))
    else:
        loss = torch.nn.functional.cross_entropy(model(xt), torch.tensor(y))
    TIES["mask"] = None
    opt.zero_grad()
    return model, opt, loss, TIES["pre"], TIES["names"]


def state_of(model):
    return {k: v.detach().double().numpy() for k, v in model.state_dict().items()}


def ref_step(name, clip, num_classes, state, momenta, x, y):
    """Step k in PyTorch: returns (loss64, state64, [state32 per convolution path], ties), each tie a
    (description, {parameter: the change of its float64 update with that ReLU element on its other side})."""
    m64, o64, l64, pre64, relus = forward(name, clip, num_classes, state, momenta, x, y, torch.float64)
    l64.backward(retain_graph=True)
    masks = [p > 0 for p in pre64]
    s32, pre32 = [], []
    for mk in (True, False):
        m, o, l, pre, _ = forward(name, clip, num_classes, state, momenta, x, y, torch.float32, mk, masks)
        l.backward()
        o.step()
        s32.append(state_of(m))
        pre32.append(pre)
    torch.backends.mkldnn.enabled = True
    grads = {n: p.grad.clone() for n, p in m64.named_parameters() if p.grad is not None}
    ties = []
    for k, x64 in enumerate(pre64):
        err = max(float((r[k].double() - x64).abs().max()) for r in pre32)
        for i in torch.nonzero(x64.reshape(-1).abs() <= err).reshape(-1).tolist():
            TIES["flip"] = {k: torch.tensor([i])}
            o64.zero_grad()
            l64.backward(retain_graph=True)
            moved = {n: (-LR * (p.grad - grads[n])).numpy().astype(np.float32)
                     for n, p in m64.named_parameters() if n in grads and not torch.equal(p.grad, grads[n])}
            ties.append(("%s[%d] %.1e" % (relus[k], i, float(x64.reshape(-1)[i])), moved))
    TIES["flip"] = {}
    for n, p in m64.named_parameters():
        if n in grads:
            p.grad = grads[n]
    o64.step()
    return float(l64), state_of(m64), s32, ties


def explain_by_ties(resid, ties):
    """Greedily picks ties whose flip (each {tensor: update change}, divided like resid by its tensor's
    allowed distance) most lowers sum(resid**2), while one does; returns the residual left and the
    picked ties' descriptions."""
    cur = dict(resid)
    norm2 = [sum(float(np.dot(v.reshape(-1), v.reshape(-1))) for v in m.values()) for _, m in ties]
    picked = []
    while True:
        best, gain_best = -1, 0.0
        for i, (_, m) in enumerate(ties):
            if i in picked:
                continue
            gain = 2.0 * sum(float(np.dot(v.reshape(-1).astype(np.float64), cur[t].reshape(-1)))
                             for t, v in m.items()) - norm2[i]
            if gain > gain_best:
                best, gain_best = i, gain
        if best < 0:
            break
        picked.append(best)
        for t, v in ties[best][1].items():
            cur[t] = cur[t] - v
    return cur, [ties[i][0] for i in picked]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vcc", required=True)
    ap.add_argument("--model", required=True, choices=video_nets.MODELS)
    ap.add_argument("--work", required=True)
    ap.add_argument("--shape", default=None)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--num-classes", type=int, default=10)
    ap.add_argument("--target", choices=("c", "cu"), default="c")
    args = ap.parse_args()
    torch.set_num_threads(1)
    d = os.path.abspath(args.work)
    os.makedirs(d, exist_ok=True)
    name = args.model
    exp = [sys.executable, os.path.join(MODELS_DIR, "export_video_nets.py"), "--model", name, "--out", d]
    if name != "unet3d_block":  # the UNet has neither Dropout nor classes
        exp += ["--dropout", "0", "--num-classes", str(args.num_classes)]
    if args.shape:
        exp += ["--shape", args.shape]
    run(exp, d)
    clip = tuple(int(v) for v in (args.shape.split("x") if args.shape else video_nets.DEFAULT_SHAPES[name]))
    graph_loss = name == "unet3d_block"
    src = "train." + args.target
    build = run([os.path.abspath(args.vcc), name + ".onnx", "-o", src] + (["--loss", "graph"] if graph_loss else []),
                d).strip().splitlines()[-1]
    run(build, d, shell=True)
    if args.target == "cu":
        gpu = subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0 if \
            any(os.access(os.path.join(p, "nvidia-smi"), os.X_OK) for p in os.environ["PATH"].split(":")) else False
        if not gpu:
            print("built %s with nvcc; no GPU here, so it was not run" % src)
            return
    exe = "./train_cuda" if args.target == "cu" else "./train"
    feed = ["--data", "data.npy"] + (["--targets", "targets.npy"] if graph_loss else ["--labels", "labels.npy"])
    ck = os.path.join(d, "ck")
    if os.path.isdir(ck):
        for f in os.listdir(ck):
            os.remove(os.path.join(ck, f))
    out = run([exe] + feed + ["--steps", str(args.steps), "--lr", str(LR), "--momentum", str(MOMENTUM),
                              "--weight-decay", str(WD), "--checkpoint-dir", "ck", "--checkpoint-every", "1",
                              "--keep-last", "0"], d)
    losses = [float(line.split()[3]) for line in out.splitlines() if line.startswith("step ")]
    data = np.load(os.path.join(d, "data.npy"))
    second = np.load(os.path.join(d, "targets.npy" if graph_loss else "labels.npy"))
    S, N = data.shape[0], clip[0]
    state = {k: v.double().numpy() for k, v in torch.load(os.path.join(d, name + ".pt")).items()}
    momenta = {}
    failed = []
    print("step  loss vcc      loss ref64    rel       ties   worst tensor (vcc-ref64 / allowed)")
    for k in range(1, args.steps + 1):
        idx = [((k - 1) * N + i) % S for i in range(N)]
        l64, s64, s32, ties = ref_step(name, clip, args.num_classes, state, momenta, data[idx], second[idx])
        got = load_file(os.path.join(ck, "step%d.safetensors" % k))
        r = abs(losses[k - 1] - l64) / max(abs(l64), 1e-30)
        if r > 1e-5:
            failed.append("step %d loss %.2e" % (k, r))
        resid, allowed = {}, {}
        for t, ref in s64.items():
            before = np.asarray(state.get(t, ref), dtype=np.float64)
            if t.endswith("num_batches_tracked"):
                if t in got and int(got[t]) != int(ref):
                    failed.append("step %d %s %d, want %d" % (k, t, int(got[t]), int(ref)))
                continue
            if t not in got:
                failed.append("step %d: checkpoint lacks %s" % (k, t))
                continue
            d32 = max(float(np.abs(r32[t] - ref).max()) for r32 in s32)
            allowed[t] = max(2 * d32 + 4 * ulp(float(np.abs(ref).max())), 1e-4 * float(np.abs(ref - before).max()),
                             1e-30)
            resid[t] = (got[t].astype(np.float64) - ref) / allowed[t]
        for _, moved in ties:
            for t in moved:
                moved[t] /= np.float32(allowed[t])
        resid, taken = explain_by_ties(resid, ties)
        worst, wname = 0.0, ""
        for t, v in resid.items():
            ratio = float(np.abs(v).max())
            if ratio > worst:
                worst, wname = ratio, t
            if ratio > 1.0:
                failed.append("step %d %s %.2e > %.2e" % (k, t, ratio * allowed[t], allowed[t]))
        print("%-5d %-13.7g %-13.7g %.2e  %2d/%-3d %s %.2f" % (k, losses[k - 1], l64, r, len(taken), len(ties),
                                                           wname, worst))
        for t in taken:
            print("      taken on its other side: %s" % t)
        del ties
        # the next step starts from the trainer's own state
        state = {t: got[t].astype(np.float64) if t in got else v for t, v in state.items()}
        momenta = {t[:-len(".momentum")]: got[t].astype(np.float64) for t in got if t.endswith(".momentum")}
    with open(os.path.join(d, "steps.json"), "w") as f:
        json.dump({"losses": losses}, f)
    if failed:
        sys.exit("FAIL: " + "; ".join(failed[:12]) + (" ..." if len(failed) > 12 else ""))
    print("PASS: %d steps of %s" % (args.steps, name))


if __name__ == "__main__":
    main()
