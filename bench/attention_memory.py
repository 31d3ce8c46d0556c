#!/usr/bin/python3
"""Memory of a video transformer's training step: vcc's plan with fused attention and without, and
PyTorch's peak for the same step.

    .venv/bin/python bench/attention_memory.py [--work DIR] [--models vivit_224,vivit_tiny,...]

Models (default: all):
    vivit_224    models/video_nets.py ViViTTiny, the factorised encoder, at (2, 3, 8, 224, 224), tubelets
                 2x16x16 (L = 197 tokens per frame group in space, 5 in time), width 192, 3 heads, 4
                 spatial + 2 temporal layers (ViT-Ti's width and heads), 400 classes
    vivit_tiny   models/video_nets.py's default, (2, 3, 4, 32, 32)
    timesformer_224  Hugging Face TimesformerForVideoClassification (divided space-time attention) at
                 (2, 3, 8, 224, 224), patch 16 (L = 197 in space with the class token, 8 in time), width
                 192, 3 heads, 4 layers, 400 classes
    videomae_tiny    models/video_nets.py's videomae_tiny (Hugging Face VideoMAEForVideoClassification),
                 (2, 3, 4, 32, 32): L = 32 tokens, width 64, 4 heads, 2 layers

For each model vcc compiles the training step (SGD, cross-entropy) twice, as the fuse pass makes it and
with --no-fuse-attention, and prints from the plan (--plan-json): the arena, its lower bound, the bytes
of the saved activations (forward values kept for backward) and how many planned tensors end in
(L, L) for an attention's L (the scores, probabilities and their gradients). PyTorch's peak is
measured on the CPU in a separate process (bench/torch_peak.py's cpu_peak): torch.profiler with
profile_memory=True, on from before the model is built, one warm-up step, then the running sum of every
allocator record (the live bytes: parameters, gradients, momentum, the input, every activation and the
scratch an op holds while it runs) at its largest during the measured step (forward, backward,
optimizer.step(); zero_grad(set_to_none=True) before it).
"""

import argparse
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "models"))
sys.path.insert(0, HERE)

SPECS = {
    "vivit_224": dict(clip=(2, 3, 8, 224, 224), dim=192, heads=3, tubelet=(2, 16, 16), depth_s=4, depth_t=2,
                      num_classes=400),
    "vivit_tiny": dict(clip=(2, 3, 4, 32, 32), dim=32, heads=2, tubelet=(2, 8, 8), depth_s=1, depth_t=1,
                       num_classes=10),
    "timesformer_224": dict(kind="timesformer", clip=(2, 3, 8, 224, 224), patch=16, dim=192, heads=3, depth=4,
                            num_classes=400),
    "videomae_tiny": dict(kind="videomae", clip=(2, 3, 4, 32, 32), patch=8, tubelet=2, dim=64, heads=4, depth=2,
                          num_classes=10),
}


def build(spec):
    import torch
    import video_nets
    n, c, t, h, w = spec["clip"]
    x = torch.randn(n, c, t, h, w)
    kind = spec.get("kind", "vivit")
    if kind == "vivit":
        return video_nets.ViViTTiny(num_classes=spec["num_classes"], clip_thw=(t, h, w), dim=spec["dim"],
                                    heads=spec["heads"], tubelet=spec["tubelet"], depth_s=spec["depth_s"],
                                    depth_t=spec["depth_t"], dropout=0.0).train(), x
    import transformers
    common = dict(image_size=h, patch_size=spec["patch"], num_channels=c, num_frames=t, hidden_size=spec["dim"],
                  num_hidden_layers=spec["depth"], num_attention_heads=spec["heads"],
                  intermediate_size=4 * spec["dim"], num_labels=spec["num_classes"], hidden_dropout_prob=0.0,
                  attention_probs_dropout_prob=0.0)
    if kind == "timesformer":
        hf = transformers.TimesformerForVideoClassification(transformers.TimesformerConfig(
            drop_path_rate=0.0, attention_type="divided_space_time", **common))
    else:
        hf = transformers.VideoMAEForVideoClassification(transformers.VideoMAEConfig(
            tubelet_size=spec["tubelet"], use_mean_pooling=True, **common))
    return video_nets.HFVideoClassifier(hf).train(), x


def token_counts(spec):
    """The sequence lengths L of the model's attentions: ViViT patches + 1 in space, groups + 1 in time;
    TimeSformer patches + 1 in space (the class token joins every frame's), frames in time; VideoMAE every
    tubelet."""
    n, c, t, h, w = spec["clip"]
    kind = spec.get("kind", "vivit")
    if kind == "timesformer":
        return {(h // spec["patch"]) * (w // spec["patch"]) + 1, t}
    if kind == "videomae":
        return {(t // spec["tubelet"]) * (h // spec["patch"]) * (w // spec["patch"])}
    tt, th, tw = spec["tubelet"]
    return {(h // th) * (w // tw) + 1, t // tt + 1}


def export(name, d):
    import torch
    path = os.path.join(d, name + ".onnx")
    if not os.path.exists(path):
        torch.manual_seed(0)
        m, x = build(SPECS[name])
        torch.onnx.export(m, x, path, opset_version=17, training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False, input_names=["input"], output_names=["logits"])
    return path


def plan(vcc, path, d, fuse, lens):
    extra = [] if fuse else ["--no-fuse-attention"]
    pj = os.path.join(d, "plan%s.json" % ("" if fuse else "_unfused"))
    subprocess.run([vcc, path, "--plan-json", pj] + extra, check=True, capture_output=True)
    dumped = subprocess.run([vcc, path, "--dump-ir", "memplan"] + extra, check=True, capture_output=True,
                            text=True).stdout
    p = json.load(open(pj))
    # a view or an in-place output shares its source's bytes: counted once
    saved = sum(t["bytes"] for t in p["tensors"] if t["category"] == "saved_activation" and t["view_of"] is None
                and t["inplace_of"] is None)
    square = set()
    for ln in dumped.splitlines():
        if ln.startswith("node "):
            for nm, dims in re.findall(r'"([^"]+)" f32\[([\d,]+)\]', ln):
                dd = dims.split(",")
                if len(dd) >= 2 and dd[-1] == dd[-2] and int(dd[-1]) in lens:
                    square.add(nm)
    return p["arena_bytes"], p["lower_bound_bytes"], saved, len(square)


def torch_peak(name):
    """The peak live bytes of one measured training step (bench/torch_peak.py's cpu_peak)."""
    import torch
    from torch_peak import cpu_peak
    spec = SPECS[name]

    def make():
        m, x = build(spec)
        return m, x, torch.randint(0, spec["num_classes"], (spec["clip"][0],))

    def step(state, opt):
        m, x, y = state
        torch.nn.functional.cross_entropy(m(x), y).backward()
    return cpu_peak(make, step)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vcc", default=os.path.join(ROOT, "build", "vcc"))
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "bench", "attention_memory"))
    ap.add_argument("--models", default=",".join(SPECS))
    ap.add_argument("--peak-of", default=None, help=argparse.SUPPRESS)  # the PyTorch measurement's own process
    args = ap.parse_args()
    if args.peak_of:
        print(torch_peak(args.peak_of))
        return 0
    os.makedirs(args.work, exist_ok=True)
    mib = 1024.0 * 1024.0
    print("%-16s %-9s %10s %10s %12s %9s %14s" % ("model", "attention", "arena MiB", "LB MiB", "saved MiB",
                                                   "(L, L)", "PyTorch MiB"))
    for name in args.models.split(","):
        d = os.path.join(args.work, name)
        os.makedirs(d, exist_ok=True)
        path = export(name, d)
        peak = int(subprocess.run([sys.executable, os.path.abspath(__file__), "--peak-of", name], check=True,
                                  capture_output=True, text=True).stdout.split()[-1])
        for fuse in (True, False):
            arena, lb, saved, square = plan(os.path.abspath(args.vcc), path, d, fuse, token_counts(SPECS[name]))
            print("%-16s %-9s %10.1f %10.1f %12.1f %9d %14.1f   arena/PyTorch %.2f" % (
                name, "fused" if fuse else "unfused", arena / mib, lb / mib, saved / mib, square, peak / mib,
                arena / peak))
    return 0


if __name__ == "__main__":
    sys.exit(main())
