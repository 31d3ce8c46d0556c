#!/usr/bin/python3
"""vcc's memory plans for the models in models/, next to PyTorch's measured peak for the same step, and
the planner on the public DSA instances.

    .venv/bin/python bench/memplan.py                         # every model at two batch sizes, then DSA
    .venv/bin/python bench/memplan.py --models r3d_18,c3d_tiny --no-dsa
    .venv/bin/python bench/memplan.py --vcc-args "--memory-limit 1GiB"   # extra vcc options

Models (default: the torchvision ResNets and every small model of models/video_nets.py; the full s3d,
mvit_v1_b and mvit_v2_s only when named in --models):
  r3d_18, mc3_18, r2plus1d_18   torchvision, (N, 3, 8, 56, 56), 400 classes, N = 2 and 4
  the video_nets models          their DEFAULT_SHAPES clip at its N and at 2N, the paper's dropout
Each is exported once into --work (default build/bench/memplan/<model>_n<N>/) by models/export_torchvision.py
or models/export_video_nets.py, then compiled with `vcc <model>.onnx --plan-json plan.json` (SGD with
momentum, cross-entropy; unet3d_block with its loss in the graph, `--loss graph`).

Printed per model and batch:
  arena, LB, arena/LB, no-reuse   from the plan JSON (MiB)
  plan s                          the CPU seconds of the offset planning (plan_seconds)
  torch CPU                       PyTorch's peak for the same step on the CPU (bench/torch_peak.py:
                                  torch.profiler's allocator records, parameters, gradients, momentum,
                                  input and activations), in a separate process
  arena/torch                     the ratio vcc is judged by
  floor/torch                     the plan's saved floor (saved_floor_bytes: persistent bytes + every
                                  saved activation, all live when backward starts) over PyTorch's peak:
                                  no order of the same nodes goes below it without recomputation
  saved/torch saved               the plan's saved activations (the input left out) over the bytes
                                  PyTorch's autograd saves for backward in the same forward
                                  (torch.autograd.graph.saved_tensors_hooks, each storage once, the
                                  parameters and the input left out): above 1, vcc keeps more than
                                  PyTorch for backward
  recompute: arena, +FLOPs, /torch  the smallest arena --memory-limit's recomputation reaches within
                                  --recompute-flops PCT (default 5) percent more FLOPs (vcc --memory-limit 1
                                  --recompute-flops PCT names it), its extra FLOPs and its ratio to PyTorch's
                                  peak; --recompute-flops -1 leaves these columns out. An arena marked *
                                  needed conv workspaces at the peak halved too (smaller im2col chunks,
                                  or cuDNN algorithms within less workspace: its numbers round differently
                                  from the unlimited plan's); unmarked, the
                                  limited trainer computes the unlimited one's numbers exactly
  torch GPU                       torch.cuda.max_memory_allocated for the same step, where a GPU is present
Then, unless --no-dsa, each instance of ../shared/dsa-benchmarks (bench/dsa/dsa_bench, built by CMake as
the target dsa_bench): vcc's plan height over the lower bound (the greedy portfolio's, or the exact
search's at the published capacity where it fits), whether it fits the published capacity,
and in the same harness the greedy-by-size heuristic of TFLite Micro's GreedyMemoryPlanner and XLA's
heap simulator heuristic (the better of its size and lifetime orders).
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

TORCHVISION = ("r3d_18", "mc3_18", "r2plus1d_18")
LARGE = ("s3d", "mvit_v1_b", "mvit_v2_s")
MIB = 1024.0 * 1024.0


def default_models():
    import video_nets
    return list(TORCHVISION) + [m for m in video_nets.MODELS if m not in LARGE]


def base_shape(model):
    if model in TORCHVISION:
        return (2, 3, 8, 56, 56)
    import video_nets
    return tuple(video_nets.DEFAULT_SHAPES[model])


def run(cmd, cwd=None):
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError("%s exited %d: %s%s" % (" ".join(cmd), p.returncode, p.stdout[-1500:], p.stderr[-1500:]))
    return p.stdout


def export(model, shape, d):
    """The model's ONNX file in d, exported unless export_info.json there says the same model and shape."""
    path = os.path.join(d, model + ".onnx")
    info = os.path.join(d, "export_info.json")
    if os.path.exists(path) and os.path.exists(info):
        i = json.load(open(info))
        if i.get("model") == model and list(i.get("shape", [])) == list(shape):
            return path
    os.makedirs(d, exist_ok=True)
    s = "x".join(map(str, shape))
    if model in TORCHVISION:
        run([sys.executable, os.path.join(ROOT, "models", "export_torchvision.py"), "--model", model, "--shape", s,
             "--samples", str(shape[0]), "--out", d])
    else:
        run([sys.executable, os.path.join(ROOT, "models", "export_video_nets.py"), "--model", model, "--shape", s,
             "--samples", str(shape[0]), "--out", d])
    return path


def make_step(model, shape):
    """(make, step) for bench/torch_peak.py: the model as exported, random input and labels, the loss vcc
    compiles (cross-entropy; unet3d_block's own)."""
    import torch

    def make():
        if model in TORCHVISION:
            import torchvision
            m = getattr(torchvision.models.video, model)(num_classes=400)
            k = 400
        else:
            import video_nets
            m = video_nets.build_model(model, num_classes=10, clip=shape)
            k = 10
        x = torch.randn(*shape)
        if model == "unet3d_block":
            return m.train(), x, torch.randn(*shape)
        return m.train(), x, torch.randint(0, k, (shape[0],))

    def step(state, opt):
        m, x, y = state
        if model == "unet3d_block":
            m(x, y).backward()
        else:
            torch.nn.functional.cross_entropy(m(x), y).backward()
    return make, step


def torch_saved(make):
    """Bytes PyTorch's autograd saves for backward in one forward of make()'s model: every tensor packed
    through torch.autograd.graph.saved_tensors_hooks, each storage once, the parameters and the input
    left out (vcc's plan keeps those apart from its saved activations too)."""
    import torch
    torch.manual_seed(0)
    m, x, y = make()
    skip = {p.data_ptr() for p in m.parameters()} | {x.data_ptr()}
    seen = {}

    def pack(t):
        st = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
        if st.data_ptr() not in skip:
            seen[st.data_ptr()] = max(seen.get(st.data_ptr(), 0), st.nbytes())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        m(x, y) if isinstance(y, torch.Tensor) and y.is_floating_point() else m(x)
    return sum(seen.values())


def peaks(model, shape):
    """(CPU peak bytes, GPU peak bytes or None, bytes PyTorch saves for backward), measured in this process
    (run with --peak-of)."""
    from torch_peak import cpu_peak, cuda_peak
    import torch
    torch.set_num_threads(2)
    make, step = make_step(model, shape)
    return cpu_peak(make, step), cuda_peak(make, step), torch_saved(make)


def dsa_table(dsa_bench, folder):
    """Rows (instance, best/LB, fits, TFLM/LB, XLA/LB) parsed from dsa_bench's Markdown table."""
    out = run([dsa_bench, folder])
    rows, head = [], None
    for line in out.splitlines():
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if head is None:
            head = cells
            continue
        if set(cells[0]) <= set("-: "):
            continue
        c = dict(zip(head, cells))

        def ratio(col):
            v = c.get(col, "")
            return float(v.split("(")[1].rstrip(")")) if "(" in v else float("nan")

        lb = float(c["LB"])
        best = float(c["best (/LB)"].split()[0])
        fit = c.get("fit at capacity", "")  # the exact search at the published capacity: "N (fits)" or not
        if "(fits)" in fit:
            best = min(best, float(fit.split()[0]))
        cap = c.get("capacity", "-")
        fits = "-" if cap in ("-", "") else ("yes" if best <= float(cap) else "no")
        rows.append((c["instance"], best / lb if lb else float("nan"), fits, ratio("size (/LB)"),
                     min(ratio("size (/LB)"), ratio("length (/LB)"))))
    return rows


def smallest(a, path, extra):
    """(bytes, extra FLOPs percent, workspaces halved) of the smallest arena vcc's recomputation reaches
    within a.recompute_flops percent more FLOPs: vcc --memory-limit 1 refuses and names it, and after it,
    where halving conv workspaces at the peak goes lower, that arena too."""
    p = subprocess.run([os.path.abspath(a.vcc), path, "--memory-limit", "1", "--recompute-flops",
                        "%g" % a.recompute_flops] + extra + a.vcc_args.split(), capture_output=True, text=True)
    m = re.search(r"smallest arena reachable by recomputation.*? is (\d+) bytes \(.*?\+([0-9.]+)% FLOPs\)", p.stderr)
    if p.returncode != 1 or not m:
        raise RuntimeError("vcc --memory-limit 1 --recompute-flops %g: exit %d: %s"
                           % (a.recompute_flops, p.returncode, p.stderr.strip()))
    w = re.search(r"workspaces at the peak shrunk too .*? it is (\d+) bytes \(.*?\+([0-9.]+)% FLOPs\)", p.stderr)
    if w:
        return int(w.group(1)), float(w.group(2)), True
    return int(m.group(1)), float(m.group(2)), False


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vcc", default=os.path.join(ROOT, "build", "vcc"))
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "bench", "memplan"))
    ap.add_argument("--models", help="comma-separated (default: see above; empty: none, the DSA table alone)")
    ap.add_argument("--vcc-args", default="", help="extra vcc options, split on spaces")
    ap.add_argument("--no-dsa", action="store_true", help="skip the DSA instances")
    ap.add_argument("--recompute-flops", type=float, default=5.0,
                    help="the recomputation columns' FLOPs bound, percent of the step (negative: no columns)")
    ap.add_argument("--dsa-bench", default=os.path.join(ROOT, "build", "bench", "dsa", "dsa_bench"))
    ap.add_argument("--dsa-dir", default=os.path.join(ROOT, "..", "shared", "dsa-benchmarks"))
    ap.add_argument("--peak-of", nargs=2, help=argparse.SUPPRESS)  # MODEL NxCxTxHxW: the measuring process
    a = ap.parse_args()
    if a.peak_of:
        shape = tuple(int(v) for v in a.peak_of[1].split("x"))
        print(json.dumps(peaks(a.peak_of[0], shape)))
        return 0
    models = [m for m in a.models.split(",") if m] if a.models is not None else default_models()
    rc_cols = a.recompute_flops >= 0
    print("| model | N | arena MiB | LB MiB | arena/LB | no-reuse MiB | plan s | torch CPU MiB | arena/torch | "
          "floor/torch | saved/torch saved | torch GPU MiB |" + (" recompute <= %g%%: arena MiB | +FLOPs %% | /torch |" % a.recompute_flops
                               if rc_cols else ""))
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|" + ("---:|---:|---:|" if rc_cols else ""))
    for model in models:
        base = base_shape(model)
        for n in (base[0], 2 * base[0]):
            shape = (n,) + base[1:]
            d = os.path.join(a.work, "%s_n%d" % (model, n))
            try:
                path = export(model, shape, d)
                pj = os.path.join(d, "plan.json")
                extra = ["--loss", "graph"] if model == "unet3d_block" else []
                run([os.path.abspath(a.vcc), path, "--plan-json", pj] + extra + a.vcc_args.split())
                p = json.load(open(pj))
                peak = json.loads(run([sys.executable, os.path.abspath(__file__), "--peak-of", model,
                                       "x".join(map(str, shape))]).strip().splitlines()[-1])
                rc = smallest(a, path, extra) if rc_cols else None
            except RuntimeError as e:
                print("| %s | %d | failed: %s |" % (model, n, str(e).splitlines()[0][:200]))
                continue
            cpu, gpu, tsaved = peak
            vsaved = sum(t["bytes"] for t in p["tensors"]
                         if t["category"] == "saved_activation" and t["view_of"] is None and t["name"] != "input")
            row = "| %s | %d | %.1f | %.1f | %.4f | %.1f | %.3f | %.1f | %.3f | %.3f | %.2f | %s |" % (
                model, n, p["arena_bytes"] / MIB, p["lower_bound_bytes"] / MIB,
                p["arena_bytes"] / max(p["lower_bound_bytes"], 1), p["no_reuse_bytes"] / MIB,
                p.get("plan_seconds") or 0.0, cpu / MIB, p["arena_bytes"] / max(cpu, 1),
                p["saved_floor_bytes"] / max(cpu, 1), vsaved / max(tsaved, 1),
                "%.1f" % (gpu / MIB) if gpu is not None else "-")
            if rc_cols:
                row += " %.1f%s | %.2f | %.3f |" % (rc[0] / MIB, "*" if rc[2] else "", rc[1], rc[0] / max(cpu, 1))
            print(row, flush=True)
    if a.no_dsa:
        return 0
    if not os.path.exists(a.dsa_bench):
        print("\n(no %s: build the dsa_bench target for the DSA table)" % a.dsa_bench)
        return 0
    print("\n| instance | vcc best/LB | fits capacity | TFLM greedy by size /LB | XLA (best of size, length) /LB |")
    print("|---|---:|:---:|---:|---:|")
    for name, best, fits, tflm, xla in dsa_table(a.dsa_bench, a.dsa_dir):
        print("| %s | %.4f | %s | %.4f | %.4f |" % (name, best, fits, tflm, xla))
    return 0


if __name__ == "__main__":
    sys.exit(main())
