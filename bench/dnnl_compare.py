#!/usr/bin/env python3
"""Where the oneDNN time of one training step goes, in vcc's C trainer and in PyTorch, side by side.

    .venv/bin/python bench/dnnl_compare.py --model mc3_18 --threads 1
    .venv/bin/python bench/dnnl_compare.py --model r3d_18 --threads 2 --top 30

Both programs of bench/train_step.py (the trainer it built under --work, which must have been built with
`--vcc-args "--cpu-conv dnnl"`, and bench/torch_step.py on the same state and data) run WARMUP + 1 steps,
one after the other, with oneDNN's verbose log on (DNNL_VERBOSE=1: one line per primitive execution
with its implementation, problem and wall milliseconds). Each program's stdout is line-buffered
(stdbuf -oL) so the log lines and the programs' own `step k loss v` lines stay in order; the lines
between `step WARMUP` and `step WARMUP+1` are the measured step. Printed:

- per program, the step's wall time (from the step lines' arrival) and oneDNN's time by primitive kind
  and propagation (convolution forward, backward_data, backward_weights, reorder, pooling, gemm_api,
  ...), count and milliseconds: what is oneDNN's and what is the program's own;
- the convolutions matched by problem (oneDNN's problem descriptor without the minibatch, since vcc
  may run a convolution one sample at a time): each program's implementation and milliseconds, the
  largest differences first.

The verbose log's own cost (a clock read and a line per primitive) is in both times alike. Timings
are one step of each: run it twice before reading small differences.
"""
import argparse
import collections
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STEP = re.compile(r"^step (\d+) loss ")


def run(cmd, env, cwd, warmup):
    """Runs cmd; returns (the measured step's verbose records, that step's wall seconds)."""
    t_prev = None
    t_step = None
    records = []
    inside = False
    p = subprocess.Popen(["stdbuf", "-oL"] + cmd, env=env, cwd=cwd, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, bufsize=1)
    for line in p.stdout:
        m = STEP.match(line)
        if m:
            k = int(m.group(1))
            now = time.perf_counter()
            if k == warmup:
                inside, t_prev = True, now
            elif k == warmup + 1:
                inside, t_step = False, now - t_prev
            continue
        if inside and (line.startswith("dnnl_verbose,exec,") or line.startswith("onednn_verbose,exec,")):
            records.append(line.rstrip("\n").split(","))
    err = p.stderr.read()
    if p.wait() != 0 or t_step is None:
        sys.exit(f"dnnl_compare: {' '.join(cmd)} failed (exit {p.returncode}):\n{err[-2000:]}")
    return records, t_step


def fields(r):
    """(kind, impl, prop, problem, ms) of one verbose exec record (oneDNN 2.x layout)."""
    kind, impl, prop = r[3], r[4], r[5]
    ms = float(r[-1])
    problem = r[-2]
    return kind, impl, prop, problem, ms


def by_kind(records):
    out = collections.OrderedDict()
    for r in records:
        kind, impl, prop, problem, ms = fields(r)
        key = f"{kind} {prop}"
        n, t = out.get(key, (0, 0.0))
        out[key] = (n + 1, t + ms)
    return out


def convs(records):
    """problem without minibatch -> [count, ms, impls, minibatches] for the convolutions."""
    out = {}
    for r in records:
        kind, impl, prop, problem, ms = fields(r)
        if kind != "convolution":
            continue
        m = re.match(r"mb(\d+)_?(.*)", problem)
        mb, rest = (m.group(1), m.group(2)) if m else ("?", problem)
        e = out.setdefault((prop, rest), [0, 0.0, set(), set()])
        e[0] += 1
        e[1] += ms
        e[2].add(impl)
        e[3].add(mb)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--model", default="mc3_18")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=2, help="the batch the trainer was exported at")
    ap.add_argument("--warmup", type=int, default=1, help="steps before the measured one")
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "bench"))
    ap.add_argument("--top", type=int, default=20, help="convolution rows printed")
    args = ap.parse_args(argv)
    mdir = os.path.join(os.path.abspath(args.work), args.model)
    train = os.path.join(mdir, "train")
    if not os.access(train, os.X_OK):
        ap.error(f"{train}: no trainer (build it: bench/train_step.py --models {args.model} "
                 f"--prepare-only --vcc-args \"--cpu-conv dnnl\")")
    env = dict(os.environ, DNNL_VERBOSE="1")
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = str(args.threads)
    steps = str(args.warmup + 1)
    a = [train, "--data", "data.npy", "--labels", "labels.npy", "--weights", "train.safetensors",
         "--steps", steps, "--threads", str(args.threads), "--lr", "0.01", "--momentum", "0.9"]
    b = [sys.executable, os.path.join(ROOT, "bench", "torch_step.py"), "--model", args.model,
         "--state", f"{args.model}.pt", "--data", "data.npy", "--labels", "labels.npy",
         "--batch", str(args.batch), "--steps", steps, "--threads", str(args.threads),
         "--lr", "0.01", "--momentum", "0.9"]
    ra, sa = run(a, env, mdir, args.warmup)
    rb, sb = run(b, env, mdir, args.warmup)
    if not ra:
        sys.exit(f"dnnl_compare: the trainer logged no oneDNN primitive: was it built with --cpu-conv dnnl?")

    print(f"# {args.model}, {args.threads} thread(s), step {args.warmup + 1}: vcc {sa:.3f} s, PyTorch {sb:.3f} s "
          f"(wall, verbose log on)")
    print()
    ka, kb = by_kind(ra), by_kind(rb)
    print("| oneDNN primitive | vcc calls | vcc ms | PyTorch calls | PyTorch ms |")
    print("|---|---:|---:|---:|---:|")
    for key in list(ka) + [k for k in kb if k not in ka]:
        na, ta = ka.get(key, (0, 0.0))
        nb, tb = kb.get(key, (0, 0.0))
        print(f"| {key} | {na} | {ta:.1f} | {nb} | {tb:.1f} |")
    tta = sum(t for _, t in ka.values())
    ttb = sum(t for _, t in kb.values())
    print(f"| **all oneDNN** | {len(ra)} | {tta:.1f} | {len(rb)} | {ttb:.1f} |")
    print(f"| **rest of the step** | | {1000 * sa - tta:.1f} | | {1000 * sb - ttb:.1f} |")
    print()
    ca, cb = convs(ra), convs(rb)
    keys = sorted(set(ca) | set(cb), key=lambda k: -abs(ca.get(k, [0, 0.0])[1] - cb.get(k, [0, 0.0])[1]))
    print("| convolution (no minibatch) | prop | vcc impl | vcc calls x mb | vcc ms | PyTorch impl | "
          "PyTorch calls x mb | PyTorch ms | vcc - PyTorch ms |")
    print("|---|---|---|---|---:|---|---|---:|---:|")
    for key in keys[:args.top]:
        prop, prob = key
        ea = ca.get(key, [0, 0.0, set(), set()])
        eb = cb.get(key, [0, 0.0, set(), set()])
        print(f"| {prob} | {prop} | {'/'.join(sorted(ea[2])) or '-'} | {ea[0]} x {'/'.join(sorted(ea[3])) or '-'} | "
              f"{ea[1]:.1f} | {'/'.join(sorted(eb[2])) or '-'} | {eb[0]} x {'/'.join(sorted(eb[3])) or '-'} | "
              f"{eb[1]:.1f} | {ea[1] - eb[1]:+.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
