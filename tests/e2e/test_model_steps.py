"""Each training step of a models/video_nets.py model, checked from the trainer's own state (teacher forcing).

    test_model_steps.py --vcc BUILD/vcc --model NAME --work DIR [--shape NxCxTxHxW] [--steps 5]
                        [--target c|cu]

models/export_video_nets.py exports the model (dropout 0: vcc's masks are not PyTorch's; the Dropout
nodes stay in the graph), vcc compiles it (--loss graph for unet3d_block, whose graph computes its own
loss), and the trainer runs --steps steps writing a checkpoint after each (parameters, BN statistics,
momentum). For every step k, the PyTorch module of models/video_nets.py is loaded with the trainer's
state after step k-1 (the export's state dict for k = 1) and performs step k, once in float64 and once
in float32, with torch.optim.SGD (lr 0.01, momentum 0.9, weight decay 1e-4); the batch is the one the
trainer used (samples (k-1)*N + i mod S). Checked per step:
  loss          |vcc - ref64| <= 1e-5 * |ref64|
  each tensor   parameters and BN running statistics after the step:
                max|vcc - ref64| <= max(2 * max|ref32 - ref64| + 4 ulp(max|ref64|), 1e-4 * max|update64|)
                i.e. within PyTorch float32's own distance from float64 on the same step (a step of a
                badly conditioned net, s3d's for one, moves float32 far from float64 in PyTorch too), or
                the step's own update (ref64 after - before) to 1e-4 of its size: a tensor whose update is
                a few float32 roundings of its values (a bias near zero) is judged by that update.
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


def ref_step(name, clip, num_classes, state, momenta, x, y, dtype):
    """One SGD step of the PyTorch module from state (state dict names) and momentum buffers; returns
    (loss, state after the step)."""
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
    if name == "unet3d_block":
        loss = model(xt, torch.tensor(y, dtype=dtype))
    else:
        loss = torch.nn.functional.cross_entropy(model(xt), torch.tensor(y))
    opt.zero_grad()
    loss.backward()
    opt.step()
    return float(loss), {k: v.detach().double().numpy() for k, v in model.state_dict().items()}


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
    print("step  loss vcc      loss ref64    rel       worst tensor (vcc-ref64 / allowed)")
    for k in range(1, args.steps + 1):
        idx = [((k - 1) * N + i) % S for i in range(N)]
        l64, s64 = ref_step(name, clip, args.num_classes, state, momenta, data[idx], second[idx], torch.float64)
        _, s32 = ref_step(name, clip, args.num_classes, state, momenta, data[idx], second[idx], torch.float32)
        got = load_file(os.path.join(ck, "step%d.safetensors" % k))
        r = abs(losses[k - 1] - l64) / max(abs(l64), 1e-30)
        if r > 1e-5:
            failed.append("step %d loss %.2e" % (k, r))
        worst, wname = 0.0, ""
        for t, ref in s64.items():
            before = np.asarray(state.get(t, ref), dtype=np.float64)
            if t.endswith("num_batches_tracked"):
                if t in got and int(got[t]) != int(ref):
                    failed.append("step %d %s %d, want %d" % (k, t, int(got[t]), int(ref)))
                continue
            if t not in got:
                failed.append("step %d: checkpoint lacks %s" % (k, t))
                continue
            e = float(np.abs(got[t].astype(np.float64) - ref).max())
            allowed = max(2 * float(np.abs(s32[t] - ref).max()) + 4 * ulp(float(np.abs(ref).max())),
                          1e-4 * float(np.abs(ref - before).max()))
            ratio = e / allowed if allowed > 0 else (0.0 if e == 0 else float("inf"))
            if ratio > worst:
                worst, wname = ratio, t
            if e > allowed:
                failed.append("step %d %s %.2e > %.2e" % (k, t, e, allowed))
        print("%-5d %-13.7g %-13.7g %.2e  %s %.2f" % (k, losses[k - 1], l64, r, wname, worst))
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
