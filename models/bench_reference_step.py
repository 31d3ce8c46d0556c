#!/usr/bin/python3
"""Time PyTorch (CPU) training steps of a torchvision video ResNet: the peer figure for vcc's trainer.

    .venv/bin/python models/bench_reference_step.py --state /tmp/mc3/mc3_18.pt --model mc3_18 \
        --shape 2x3x8x112x112 --threads 2 --steps 5 --warmup 1 [--profile]

One step is what vcc's trainer does per batch: forward in train() mode, mean cross-entropy,
backward, torch.optim.SGD update (--lr, --momentum, --weight-decay). Inputs are one fixed batch of
the given shape (standard normal clip, labels in [0, K)) from --seed, reused every step.

Weights come from --state (a state dict written by export_torchvision.py; K read from fc.weight)
or, without it, from a fresh model initialised with torch.manual_seed(--seed) and --num-classes.

Prints `median_step_s <value>` (seconds) on its own line, plus min/mean and the step count; with
--profile, one further profiled step and torch.profiler's top-10 operators by self CPU time (the
profiled step is not part of the timing).
"""

import argparse
import os
import statistics
import sys
import time

from clipshape import parse_shape

MODELS = ("r3d_18", "mc3_18", "r2plus1d_18")


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Median wall time of a PyTorch CPU training step (forward, cross-entropy, "
                    "backward, SGD) for a torchvision video ResNet.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--state", help="state dict (.pt) from export_torchvision.py; random init if omitted")
    ap.add_argument("--model", required=True, choices=MODELS)
    ap.add_argument("--shape", type=parse_shape, default=parse_shape("2x3x8x112x112"),
                    help="one batch, N x C x T x H x W")
    ap.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    ap.add_argument("--steps", type=int, default=5, help="timed steps")
    ap.add_argument("--warmup", type=int, default=1, help="untimed steps first")
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--weight-decay", type=float, default=0.0)
    ap.add_argument("--num-classes", type=int, default=400, help="classes when --state is not given")
    ap.add_argument("--seed", type=int, default=0, help="input (and, without --state, weight) seed")
    ap.add_argument("--profile", action="store_true",
                    help="print torch.profiler's top-10 ops by self CPU time for one extra step")
    args = ap.parse_args(argv)
    if args.steps <= 0 or args.warmup < 0 or args.threads <= 0:
        ap.error("--steps and --threads must be positive, --warmup not negative")
    if args.shape[1] != 3:
        ap.error(f"--shape: torchvision video ResNets take C=3 channels, got C={args.shape[1]}")

    import numpy as np
    import torch
    import torch.nn as nn
    import torchvision

    torch.set_num_threads(args.threads)
    if args.state:
        if not os.path.isfile(args.state):
            sys.exit(f"bench_reference_step: error: --state {args.state}: no such file")
        state = torch.load(args.state, map_location="cpu")
        if not isinstance(state, dict) or "fc.weight" not in state:
            sys.exit(f"bench_reference_step: error: --state {args.state}: not a video ResNet state dict")
        k = int(state["fc.weight"].shape[0])
        model = getattr(torchvision.models.video, args.model)(num_classes=k)
        try:
            model.load_state_dict(state)
        except RuntimeError as e:
            sys.exit(f"bench_reference_step: error: --state {args.state} does not fit {args.model}: {e}")
    else:
        k = args.num_classes
        torch.manual_seed(args.seed)
        model = getattr(torchvision.models.video, args.model)(num_classes=k)
    model.train()

    rng = np.random.default_rng(args.seed)
    x = torch.from_numpy(rng.standard_normal(args.shape, dtype=np.float32))
    y = torch.from_numpy(rng.integers(0, k, size=(args.shape[0],), dtype=np.int64))
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum,
                          weight_decay=args.weight_decay)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    for _ in range(args.warmup):
        step()
    times = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)

    shape = "x".join(map(str, args.shape))
    print(f"model {args.model} shape {shape} threads {args.threads} torch {torch.__version__}")
    print(f"steps {len(times)} min_step_s {min(times):.4f} mean_step_s {statistics.fmean(times):.4f}")
    print(f"median_step_s {statistics.median(times):.4f}")
    if args.profile:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU]) as prof:
            step()
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10))
    return 0


if __name__ == "__main__":
    sys.exit(main())
