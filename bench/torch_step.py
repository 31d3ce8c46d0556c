#!/usr/bin/python3
"""PyTorch (CPU) twin of a vcc C trainer: the same training loop, the same data, the same output.

    /usr/bin/python3 bench/torch_step.py --model r3d_18 --state DIR/r3d_18.pt \
        --data DIR/data.npy --labels DIR/labels.npy --steps 4 --threads 2 [--lr 0.01 --momentum 0.9]

What vcc's trainer does per step, done by PyTorch eager: step k (1-based) takes samples
(k-1)*N + i mod S, i < N, of data.npy (S, C, T, H, W) and labels.npy (S,), runs the torchvision
model in train() mode, the mean softmax cross-entropy, backward, and torch.optim.SGD (PyTorch
momentum semantics, dampening 0) - and prints `step <k> loss <value>`, flushed, one line per step,
exactly like the C trainer. N is --batch (default 2, the batch vcc compiled for).

bench/train_step.py starts this script and the C trainer side by side and times the gaps between
their step lines, so start-up (the torch import, loading the state dict) is not counted.
"""

import argparse
import os
import sys

MODELS = ("r3d_18", "mc3_18", "r2plus1d_18", "s3d")


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="PyTorch CPU training loop printing `step k loss v` like vcc's C trainer.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--model", required=True, choices=MODELS, help="torchvision.models.video constructor")
    ap.add_argument("--state", required=True, help="state dict (.pt) written by models/export_torchvision.py")
    ap.add_argument("--data", required=True, help="float32 (S, C, T, H, W) .npy")
    ap.add_argument("--labels", required=True, help="int64 (S,) .npy")
    ap.add_argument("--batch", type=int, default=2, help="samples per step N")
    ap.add_argument("--steps", type=int, default=1, help="training steps (0: load only)")
    ap.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--weight-decay", type=float, default=0.0)
    args = ap.parse_args(argv)
    if args.batch <= 0 or args.steps < 0 or args.threads <= 0:
        ap.error("--batch and --threads must be positive, --steps not negative")

    import numpy as np
    import torch
    import torch.nn as nn
    import torchvision

    torch.set_num_threads(args.threads)
    for path in (args.state, args.data, args.labels):
        if not os.path.isfile(path):
            sys.exit(f"torch_step: error: {path}: no such file")
    state = torch.load(args.state, map_location="cpu")
    fc = "classifier.1.weight" if args.model == "s3d" else "fc.weight"
    if not isinstance(state, dict) or fc not in state:
        sys.exit(f"torch_step: error: {args.state}: not a state dict of {args.model} (no {fc})")
    k = int(state[fc].shape[0])
    x_all = torch.from_numpy(np.load(args.data))       # (S, C, T, H, W) float32
    if args.model == "s3d":
        # models/video_nets.py's s3d_small: torchvision's S3D with its final pool sized to the clip, dropout 0
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "models"))
        import video_nets
        clip = (args.batch,) + tuple(x_all.shape[1:])
        model = video_nets.build_model("s3d_small", num_classes=k, clip=clip, dropout=0.0)
    else:
        model = getattr(torchvision.models.video, args.model)(num_classes=k)
    model.load_state_dict(state)
    model.train()

    y_all = torch.from_numpy(np.load(args.labels))     # (S,) int64
    if x_all.dtype != torch.float32 or x_all.dim() != 5:
        sys.exit(f"torch_step: error: {args.data}: expected float32 (S, C, T, H, W)")
    if y_all.dtype != torch.int64 or y_all.shape != (x_all.shape[0],):
        sys.exit(f"torch_step: error: {args.labels}: expected int64 (S,) matching the data")
    s = x_all.shape[0]
    n = args.batch

    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum,
                          weight_decay=args.weight_decay)
    loss_fn = nn.CrossEntropyLoss()
    for step in range(args.steps):
        idx = torch.tensor([(step * n + i) % s for i in range(n)])
        x = x_all.index_select(0, idx)                 # (N, C, T, H, W)
        y = y_all.index_select(0, idx)                 # (N,)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        print(f"step {step + 1} loss {loss.item():.7g}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
