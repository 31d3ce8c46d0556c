#!/usr/bin/python3
"""Independent PyTorch reference for vcc's trainers: SGD on a torchvision video ResNet or on one
of models/video_nets.py's models.

    .venv/bin/python models/reference_sgd.py --state /tmp/mc3/mc3_18.pt --model mc3_18 \
        --data /tmp/mc3/data.npy --labels /tmp/mc3/labels.npy --batch 2 --steps 5 \
        --lr 0.01 --momentum 0.9 --weight-decay 0 --losses-out losses.json \
        [--grads-out grads.safetensors] [--state-out final.safetensors]

    .venv/bin/python models/reference_sgd.py --state /tmp/c3d/c3d_tiny.pt --model c3d_tiny \
        --data /tmp/c3d/data.npy --labels /tmp/c3d/labels.npy --dropout 0 ...the same options...

    .venv/bin/python models/reference_sgd.py --state /tmp/unet/unet3d_block.pt --model unet3d_block \
        --data /tmp/unet/data.npy --targets /tmp/unet/targets.npy ...the same options...

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

The models of models/video_nets.py (x3d_s_tiny, slowfast_tiny, c3d_tiny, unet3d_block, s3d,
s3d_small, vivit_tiny, videomae_tiny, timesformer_tiny), written by export_video_nets.py, are rebuilt with video_nets.build_model(name, K, (B,
C, T, H, W), dropout) -- K from the state dict's last layer (video_nets.CLASSIFIER_KEYS), (C, T, H,
W) from data.npy, B from --batch -- and loaded with load_state_dict(strict=True); training is the
same. Their Dropout probability is --dropout (default: the paper's, as export_video_nets.py's
default; use --dropout 0 on both sides for a per-step comparison with vcc, whose masks differ from
PyTorch's; with p > 0 the masks come from torch.manual_seed(0)). unet3d_block has no labels: its
forward(x, noise) returns the loss written in its graph, ((pred - noise)**2).mean(), and
--targets targets.npy (float32 (S, C, T, H, W), the noise) replaces --labels; step k reads the
same samples of both files. Its fixed timesteps depend on the batch position (one per sample of
the batch it was built for): give --batch the N of the export.

Single-process, CPU, deterministic (fixed thread count, deterministic algorithms requested).
"""

import argparse
import json
import os
import sys

MODELS = ("r3d_18", "mc3_18", "r2plus1d_18")
# models/video_nets.py's models (video_nets.MODELS; checked when it is imported)
VIDEO_NETS = ("x3d_s_tiny", "slowfast_tiny", "c3d_tiny", "unet3d_block", "s3d", "s3d_small", "vivit_tiny",
              "videomae_tiny", "timesformer_tiny")
LOSS_IN_GRAPH = ("unet3d_block",)


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


def load_video_net_inputs(args):
    """data (S, C, T, H, W) f32 and labels (S,) i64 or targets (S, C, T, H, W) f32, for VIDEO_NETS."""
    import numpy as np

    second = ("--targets", args.targets) if args.model in LOSS_IN_GRAPH else ("--labels", args.labels)
    for flag, path in (("--state", args.state), ("--data", args.data), second):
        if not os.path.isfile(path):
            fail(f"{flag} {path}: no such file")
    data = np.load(args.data, allow_pickle=False)
    if data.dtype != np.float32 or data.ndim != 5:
        fail(f"{args.data}: expected float32 (S, C, T, H, W), got {data.dtype} {list(data.shape)}")
    if data.shape[0] == 0:
        fail(f"{args.data}: no samples")
    other = np.load(second[1], allow_pickle=False)
    if args.model in LOSS_IN_GRAPH:
        if other.dtype != np.float32 or other.shape != data.shape:
            fail(f"{second[1]}: expected float32 {list(data.shape)} (the shape of {args.data}), got "
                 f"{other.dtype} {list(other.shape)}")
    else:
        if other.dtype != np.int64 or other.ndim != 1:
            fail(f"{second[1]}: expected int64 (S,), got {other.dtype} {list(other.shape)}")
        if other.shape[0] != data.shape[0]:
            fail(f"{args.data} has {data.shape[0]} samples but {second[1]} has {other.shape[0]}")
    return data, other


def build_video_net(name, state_path, clip, dropout):
    """A video_nets model for clip (B, C, T, H, W) with the state dict at state_path, in train() mode.

    Returns (model, K), K None for the UNet."""
    import torch

    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:
        sys.path.insert(0, here)
    import video_nets

    if tuple(video_nets.MODELS) != VIDEO_NETS:
        fail(f"models/video_nets.py lists {video_nets.MODELS}, this script {VIDEO_NETS}")
    try:
        state = torch.load(state_path, map_location="cpu")
    except Exception as e:
        fail(f"--state {state_path}: cannot load: {e}")
    key = video_nets.CLASSIFIER_KEYS[name]
    if not isinstance(state, dict) or (key is not None and key not in state):
        fail(f"--state {state_path}: not a {name} state dict (no '{key}')")
    num_classes = int(state[key].shape[0]) if key is not None else None
    try:
        model = video_nets.build_model(name, num_classes=num_classes or 1, clip=clip, dropout=dropout)
    except ValueError as e:
        fail(f"{name}: {e}")
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as e:
        fail(f"--state {state_path} does not fit {name} at clip {'x'.join(map(str, clip))}: {e}")
    model.train()
    return model, num_classes


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="PyTorch SGD reference: per-step losses (and first-step gradients) for a "
                    "torchvision video ResNet exported by export_torchvision.py, or a models/video_nets.py "
                    "model exported by export_video_nets.py.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--state", required=True,
                    help="state dict (.pt) written by export_torchvision.py or export_video_nets.py")
    ap.add_argument("--model", required=True, choices=MODELS + VIDEO_NETS,
                    help="torchvision.models.video constructor, or a models/video_nets.py model")
    ap.add_argument("--data", required=True, help="float32 .npy, (S, C, T, H, W)")
    ap.add_argument("--labels", help="int64 .npy, (S,) (every model but unet3d_block)")
    ap.add_argument("--targets", help="float32 .npy, (S, C, T, H, W): unet3d_block's noise, instead of --labels")
    ap.add_argument("--dropout", type=float,
                    help="video_nets models: every Dropout's probability (default: the paper's)")
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
    if args.model in LOSS_IN_GRAPH:
        if args.labels is not None:
            ap.error(f"{args.model} takes --targets (the noise), not --labels")
        if args.targets is None:
            ap.error("the following arguments are required: --targets")
    else:
        if args.targets is not None:
            ap.error(f"--targets is for {', '.join(LOSS_IN_GRAPH)}; {args.model} takes --labels")
        if args.labels is None:
            ap.error("the following arguments are required: --labels")
    if args.dropout is not None and (args.model not in VIDEO_NETS or args.model in LOSS_IN_GRAPH):
        ap.error(f"--dropout: {args.model} has no Dropout to set")
    if args.dropout is not None and not 0.0 <= args.dropout < 1.0:
        ap.error("--dropout must lie in [0, 1)")

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

    if args.model in VIDEO_NETS:
        data, labels = load_video_net_inputs(args)   # labels: the targets for the UNet
        if args.model not in LOSS_IN_GRAPH and data.shape[1] != 3:
            fail(f"{args.data}: expected C=3 channels, got {data.shape[1]}")
        model, num_classes = build_video_net(args.model, args.state, (args.batch,) + tuple(data.shape[1:]),
                                             args.dropout)
    else:
        data, labels = load_inputs(args)
        model, num_classes = build_model(args.model, args.state)
    if num_classes is not None and (labels.min() < 0 or labels.max() >= num_classes):
        fail(f"{args.labels}: labels must lie in [0, {num_classes}), found "
             f"[{labels.min()}, {labels.max()}]")
    if data.shape[1] != 3 and args.model in MODELS:
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
        if args.model in LOSS_IN_GRAPH:
            loss = model(x, y.to(dtype))   # the graph's own loss; y is the target noise
        else:
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
