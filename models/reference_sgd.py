#!/usr/bin/python3
"""Independent PyTorch reference for vcc's trainers: SGD on a torchvision video ResNet.

    .venv/bin/python models/reference_sgd.py --state /tmp/mc3/mc3_18.pt --model mc3_18 \
        --data /tmp/mc3/data.npy --labels /tmp/mc3/labels.npy --batch 2 --steps 5 \
        --lr 0.01 --momentum 0.9 --weight-decay 0 --losses-out losses.json \
        [--grads-out grads.safetensors] [--state-out final.safetensors]

Loads the state dict written by export_torchvision.py into a fresh torchvision model (num_classes
taken from fc.weight), puts it in train() mode (BatchNorm uses batch statistics and updates its
running stats), and runs plain PyTorch training with

    torch.optim.SGD(model.parameters(), lr, momentum, weight_decay)   (dampening 0, no Nesterov)
    nn.CrossEntropyLoss()                                             (mean over the batch)

Step k (0-based) reads samples [(k*B + i) % S for i in range(B)] of data.npy (S, C, T, H, W) and
labels.npy (S,), i.e. batches in order with wrap-around. The loss of each step is the loss of that
step's forward pass, before its parameter update (what the trainer prints as `step <k+1> loss <v>`).

Outputs:
    --losses-out   JSON list of the per-step losses (floats, step 1 first)
    --grads-out    safetensors, float32: each parameter's gradient after the backward of step
                   --grads-step (1-based, default 1 = the first step) and before its optimizer
                   update, named exactly as in the state dict / ONNX initializers
    --state-out    safetensors: the state dict after the last step (parameters and BN running stats
                   float32, num_batches_tracked int64)

Single-process, CPU, deterministic (fixed thread count, deterministic algorithms requested).
"""

import argparse
import json
import os
import sys

MODELS = ("r3d_18", "mc3_18", "r2plus1d_18")


def fail(msg):
    print(f"reference_sgd: error: {msg}", file=sys.stderr)
    sys.exit(2)


def load_inputs(args):
    import numpy as np

    for flag, path in (("--state", args.state), ("--data", args.data), ("--labels", args.labels)):
        if not os.path.isfile(path):
            fail(f"{flag} {path}: no such file")
    data = np.load(args.data, allow_pickle=False)
    labels = np.load(args.labels, allow_pickle=False)
    if data.dtype != np.float32 or data.ndim != 5:
        fail(f"{args.data}: expected float32 (S, C, T, H, W), got {data.dtype} {list(data.shape)}")
    if labels.dtype != np.int64 or labels.ndim != 1:
        fail(f"{args.labels}: expected int64 (S,), got {labels.dtype} {list(labels.shape)}")
    if labels.shape[0] != data.shape[0]:
        fail(f"{args.data} has {data.shape[0]} samples but {args.labels} has {labels.shape[0]}")
    if data.shape[0] == 0:
        fail(f"{args.data}: no samples")
    return data, labels


def build_model(name, state_path):
    import torch
    import torchvision

    try:
        state = torch.load(state_path, map_location="cpu")
    except Exception as e:
        fail(f"--state {state_path}: cannot load: {e}")
    if not isinstance(state, dict) or "fc.weight" not in state:
        fail(f"--state {state_path}: not a torchvision video ResNet state dict (no 'fc.weight')")
    num_classes = int(state["fc.weight"].shape[0])
    model = getattr(torchvision.models.video, name)(num_classes=num_classes)
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as e:
        fail(f"--state {state_path} does not fit torchvision {name}: {e}")
    model.train()
    return model, num_classes


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="PyTorch SGD reference: per-step losses (and first-step gradients) for a "
                    "torchvision video ResNet exported by export_torchvision.py.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--state", required=True, help="state dict (.pt) written by export_torchvision.py")
    ap.add_argument("--model", required=True, choices=MODELS, help="torchvision.models.video constructor")
    ap.add_argument("--data", required=True, help="float32 .npy, (S, C, T, H, W)")
    ap.add_argument("--labels", required=True, help="int64 .npy, (S,)")
    ap.add_argument("--batch", type=int, default=2, help="batch size B")
    ap.add_argument("--steps", type=int, default=5, help="optimizer steps")
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--weight-decay", type=float, default=0.0)
    ap.add_argument("--losses-out", required=True, help="JSON list of per-step losses")
    ap.add_argument("--grads-out", help="safetensors of the parameter gradients of step --grads-step")
    ap.add_argument("--grads-step", type=int, default=1,
                    help="1-based step whose gradients --grads-out records")
    ap.add_argument("--state-out", help="safetensors of the state dict after the last step")
    ap.add_argument("--dtype", choices=("float32", "float64"), default="float32",
                    help="compute precision (float64 shows how much of a float32 difference is rounding)")
    ap.add_argument("--no-mkldnn", action="store_true",
                    help="disable PyTorch's oneDNN (mkldnn) CPU kernels: a second, independent "
                         "float32 implementation, to see how far two correct ones drift apart")
    ap.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    ap.add_argument("--quiet", action="store_true", help="do not print the per-step losses")
    args = ap.parse_args(argv)

    if args.batch <= 0 or args.steps <= 0 or args.threads <= 0:
        ap.error("--batch, --steps and --threads must be positive")
    if args.grads_out and not 1 <= args.grads_step <= args.steps:
        ap.error(f"--grads-step {args.grads_step} is not within 1..--steps {args.steps}")

    import numpy as np
    import torch
    import torch.nn as nn

    if args.grads_out or args.state_out:
        try:
            from safetensors.torch import save_file
        except ImportError:
            fail("--grads-out/--state-out need the safetensors package "
                 "(the project's .venv has it: sh scripts/setup.sh --deps, then .venv/bin/python)")

    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True)
    if args.no_mkldnn:
        torch.backends.mkldnn.enabled = False
    torch.manual_seed(0)  # nothing here is random; fixed anyway

    data, labels = load_inputs(args)
    model, num_classes = build_model(args.model, args.state)
    if labels.min() < 0 or labels.max() >= num_classes:
        fail(f"{args.labels}: labels must lie in [0, {num_classes}), found "
             f"[{labels.min()}, {labels.max()}]")
    if data.shape[1] != 3:
        fail(f"{args.data}: expected C=3 channels, got {data.shape[1]}")
    dtype = torch.float64 if args.dtype == "float64" else torch.float32
    model.to(dtype)

    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum,
                          weight_decay=args.weight_decay)
    loss_fn = nn.CrossEntropyLoss()
    S, B = data.shape[0], args.batch
    losses = []
    grads = None
    for k in range(args.steps):
        idx = [(k * B + i) % S for i in range(B)]
        x = torch.from_numpy(np.ascontiguousarray(data[idx])).to(dtype)
        y = torch.from_numpy(np.ascontiguousarray(labels[idx]))
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        if args.grads_out and k + 1 == args.grads_step:
            grads = {}
            for name, p in model.named_parameters():
                if p.grad is None:
                    fail(f"parameter '{name}' has no gradient after step {k + 1}")
                grads[name] = p.grad.detach().to(torch.float32).contiguous().clone()
        opt.step()
        v = float(loss.item())
        if not np.isfinite(v):
            fail(f"step {k + 1}: loss is {v}")
        losses.append(v)
        if not args.quiet:
            print(f"step {k + 1} loss {v:.9g}")

    with open(args.losses_out, "w") as f:
        json.dump(losses, f)
    if args.grads_out:
        save_file(grads, args.grads_out, metadata={"step": str(args.grads_step), "model": args.model})
    if args.state_out:
        out = {}
        for name, v in model.state_dict().items():
            v = v.detach()
            out[name] = (v.to(torch.float32) if v.is_floating_point() else v).contiguous().clone()
        save_file(out, args.state_out, metadata={"steps": str(args.steps), "model": args.model})
    return 0


if __name__ == "__main__":
    sys.exit(main())
