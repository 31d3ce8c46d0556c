#!/usr/bin/python3
"""Time vcc's C trainer step against PyTorch's on this machine, side by side.

    .venv/bin/python bench/train_step.py                 # r3d_18 and mc3_18 at 2x3x8x112x112, 2 threads
    .venv/bin/python bench/train_step.py --models mc3_18 --shape 2x3x8x56x56 --pairs 1

For each model:
  1. export it with models/export_torchvision.py into WORK/<model>/ (cached: redone only when
     export_info.json's model, shape, samples or seed differ); s3d is torchvision's S3D at full width
     from models/export_video_nets.py (its s3d_small: the final average pool sized to the clip's
     feature map, which 8x112x112 needs; dropout 0, 400 classes), and torch_step.py builds the same;
  2. compile it with vcc (`vcc <model>.onnx -o train.c` plus --vcc-args, always redone: it takes about a second)
     and build the trainer with the command vcc printed on train.c's first line;
  3. run each program once with 0 steps (peak RSS after loading, and a warm page cache), then
     PAIRS pairs of runs of the C trainer (A) and bench/torch_step.py (B, the same loop in
     PyTorch eager: same weights, same data.npy/labels.npy batches, same SGD), WARMUP + STEPS
     training steps each.

Method (step-interleaved pairs): both programs print a flushed `step k loss v` line after each
step. A starts and runs its WARMUP steps alone, then is stopped (SIGSTOP); B does the same. Then
the timed steps alternate A B A B ...: a program is resumed (SIGCONT), timed until its next step
line arrives, and stopped again, so only one of them runs at any moment and the two steps of a pair
are seconds apart (a shared machine's load changes slowly compared with that). Start-up (weight
loading, the torch import, arena allocation) and the warm-up steps (first-touch page faults,
allocator warm-up) are not timed. Figures: median step seconds of each over all PAIRS x STEPS
steps, and the median of the step-by-step ratios vcc/PyTorch. CPU seconds per step (user + system,
all threads, from /proc/<pid>/stat at the same instants) are printed too.

Other load: this machine is shared, and PyTorch's OpenMP step slows far more than the C trainer's
when another process takes a core. For every step the busy CPU seconds of the whole machine
(/proc/stat) minus the stepping process's own are divided by the step's wall time: the cores other
work took meanwhile. Each pair's line shows it per step pair (the larger of the two), and a
second ratio is printed over the "quiet" step pairs only (other load < --quiet cores in both
steps), with the ratio of the fastest steps. Peak memory is each
process's maximum resident set size (wait4's ru_maxrss when it is reaped), median over the pairs.
Both programs get the same thread count: OPENBLAS_NUM_THREADS, OMP_NUM_THREADS and
MKL_NUM_THREADS in the environment of both, the trainer's --threads and torch.set_num_threads.
"""

import argparse
import atexit
import json
import os
import re
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "models"))
from clipshape import parse_shape  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = ("r3d_18", "mc3_18", "r2plus1d_18", "s3d")
# s3d: torchvision's S3D at its full widths, exported by models/export_video_nets.py as s3d_small (the
# final average pool sized to the clip's feature map, the one change that lets it run below 16x224x224),
# with dropout 0 so both programs train the same function
VIDEO_NETS = {"s3d": "s3d_small"}
STEP_RE = re.compile(r"^step (\d+) loss (\S+)$")
LIVE = []  # Trainers started and not yet reaped


def log(msg):
    print(msg, flush=True)


def run_checked(cmd, cwd=None, env=None, what=""):
    r = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        sys.stderr.write(r.stdout)
        sys.exit(f"train_step: error: {what or cmd[0]} failed with exit status {r.returncode}")
    return r.stdout


def proc_cpu_seconds(pid):
    """user + system CPU seconds of all threads of a live (or not yet reaped) process; None off Linux."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def machine_busy_seconds():
    """CPU seconds all processors of the machine have spent busy since boot (/proc/stat: user, nice,
    system, irq, softirq, steal); None off Linux."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:9]]
        return (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


class Trainer:
    """One training process (the C trainer or torch_step.py) driven step by step: it runs only
    between resume() and the arrival of its next `step k` line, and is stopped (SIGSTOP) otherwise."""

    def __init__(self, name, cmd, env, cwd):
        self.name, self.cmd = name, cmd
        self.err = tempfile.TemporaryFile(mode="w+")
        self.p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=self.err,
                                  text=True, bufsize=1)
        self.loss = {}
        LIVE.append(self)

    def fail(self, why):
        self.p.kill()
        self.err.seek(0)
        sys.stderr.write(self.err.read()[-4000:])
        sys.exit(f"train_step: error: {self.name} ({' '.join(self.cmd)}) {why}")

    def until_step(self, k):
        """Read its output until the `step k` line."""
        for line in self.p.stdout:
            m = STEP_RE.match(line.strip())
            if m:
                self.loss[int(m.group(1))] = float(m.group(2))
                if int(m.group(1)) == k:
                    return
        self.p.wait()
        self.fail(f"ended (exit status {self.p.returncode}) before printing `step {k}`")

    def pause(self):
        os.kill(self.p.pid, signal.SIGSTOP)

    def step(self, k, then_pause=True):
        """Resume, wait for the `step k` line, pause again. Returns (wall s, its CPU s, other load):
        other load = the machine's busy CPU seconds not spent by this process, per wall second,
        i.e. how many cores other work took during the step (None where /proc is missing)."""
        c0, m0 = proc_cpu_seconds(self.p.pid), machine_busy_seconds()
        t0 = time.perf_counter()
        os.kill(self.p.pid, signal.SIGCONT)
        self.until_step(k)
        t = time.perf_counter() - t0
        c1, m1 = proc_cpu_seconds(self.p.pid), machine_busy_seconds()
        if then_pause:
            self.pause()
        if None in (c0, c1, m0, m1):
            return t, None, None
        return t, c1 - c0, max(0.0, (m1 - m0) - (c1 - c0)) / t

    def finish(self):
        """Let it run to its exit; returns its peak resident set size in bytes (wait4's ru_maxrss)."""
        os.kill(self.p.pid, signal.SIGCONT)
        for _ in self.p.stdout:
            pass
        self.p.stdout.close()
        _, status, ru = os.wait4(self.p.pid, 0)
        self.p.returncode = os.waitstatus_to_exitcode(status)
        if self.p.returncode != 0:
            self.fail(f"exited with status {self.p.returncode}")
        self.err.close()
        LIVE.remove(self)
        return ru.ru_maxrss * 1024


def kill_live():
    """At exit (an error, the --timeout alarm, ^C): no trainer is left behind, stopped or running."""
    for t in list(LIVE):
        if t.p.returncode is None:
            t.p.kill()
            t.p.wait()


def on_alarm(signum, frame):
    sys.exit("train_step: error: a run took longer than --timeout seconds")


def export(args, model, mdir):
    info_path = os.path.join(mdir, "export_info.json")
    want = {"model": model, "shape": args.shape, "samples": args.samples, "seed": args.seed}
    files = [f"{model}.onnx", f"{model}.pt", "data.npy", "labels.npy"]
    if os.path.isfile(info_path) and all(os.path.isfile(os.path.join(mdir, f)) for f in files):
        with open(info_path) as f:
            info = json.load(f)
        if all(json.dumps(info.get(k)) == json.dumps(v) for k, v in want.items()):
            log(f"  export: cached in {mdir}")
            return
    shape = ["--shape", "x".join(map(str, args.shape)), "--samples", str(args.samples), "--seed", str(args.seed),
             "--threads", str(args.threads), "--out", mdir]
    if model in VIDEO_NETS:
        net = VIDEO_NETS[model]
        log(f"  export: models/export_video_nets.py --model {net} --dropout 0 -> {mdir}")
        run_checked([sys.executable, os.path.join(ROOT, "models", "export_video_nets.py"), "--model", net,
                     "--dropout", "0", "--num-classes", "400"] + shape, what="export")
        for ext in ("onnx", "pt"):
            os.replace(os.path.join(mdir, f"{net}.{ext}"), os.path.join(mdir, f"{model}.{ext}"))
        with open(info_path, "w") as f:
            json.dump(want, f)
    else:
        log(f"  export: models/export_torchvision.py --model {model} -> {mdir}")
        run_checked([sys.executable, os.path.join(ROOT, "models", "export_torchvision.py"), "--model", model]
                    + shape, what="export")


def build(args, model, mdir):
    """vcc <model>.onnx -o train.c, then the build command on its first line; returns the arena size line."""
    run_checked([args.vcc, f"{model}.onnx", "-o", "train.c"] + shlex.split(args.vcc_args), cwd=mdir, what="vcc")
    with open(os.path.join(mdir, "train.c")) as f:
        head = [line for _, line in zip(range(12), f)]
    prefix = "// build (from this file's folder): "
    if not head or not head[0].startswith(prefix):
        sys.exit(f"train_step: error: {mdir}/train.c has no `{prefix.strip()}` first line")
    cmd = head[0][len(prefix):].strip()
    log(f"  build: {cmd}")
    run_checked(shlex.split(cmd), cwd=mdir, what="the trainer's build command")
    arena = next((l.strip(" *\n") for l in head if "VCC_ARENA_BYTES" in l), "VCC_ARENA_BYTES = ?")
    return arena


def mib(b):
    return b / 2**20


def bench_model(args, model, env):
    mdir = os.path.join(args.work, model)
    os.makedirs(mdir, exist_ok=True)
    log(f"== {model}  shape {'x'.join(map(str, args.shape))}  threads {args.threads}")
    export(args, model, mdir)
    arena = build(args, model, mdir)
    log(f"  {arena}")

    def cmds(steps):
        a = [os.path.join(mdir, "train"), "--data", "data.npy", "--labels", "labels.npy",
             "--weights", "train.safetensors", "--steps", str(steps), "--threads", str(args.threads),
             "--lr", repr(args.lr), "--momentum", repr(args.momentum)]
        b = [sys.executable, os.path.join(ROOT, "bench", "torch_step.py"), "--model", model,
             "--state", f"{model}.pt", "--data", "data.npy", "--labels", "labels.npy",
             "--batch", str(args.shape[0]), "--steps", str(steps), "--threads", str(args.threads),
             "--lr", repr(args.lr), "--momentum", repr(args.momentum)]
        return a, b

    # after-load floor: each program once with 0 steps (also warms the page cache)
    a0, b0 = cmds(0)
    floor_a = Trainer("the C trainer", a0, env, mdir).finish()
    floor_b = Trainer("torch_step.py", b0, env, mdir).finish()

    w, last = args.warmup, args.warmup + args.steps
    a, b = cmds(last)
    ta, tb, ca, cb, ratios, ra, rb = [], [], [], [], [], [], []
    quiet = []  # ratios of the step pairs during which other work took < --quiet cores
    for i in range(args.pairs):
        signal.alarm(int(args.timeout))
        # start-up and warm-up of each, alone; then stopped
        A = Trainer("the C trainer", a, env, mdir)
        A.until_step(w)
        A.pause()
        B = Trainer("torch_step.py", b, env, mdir)
        B.until_step(w)
        B.pause()
        row_a, row_b, row_o = [], [], []
        for k in range(w + 1, last + 1):
            sa, xa, oa = A.step(k, then_pause=k < last)
            if k == last:
                ra.append(A.finish())
            sb, xb, ob = B.step(k, then_pause=k < last)
            if k == last:
                rb.append(B.finish())
            ta.append(sa); tb.append(sb); ratios.append(sa / sb)
            row_a.append(sa); row_b.append(sb)
            if oa is not None and ob is not None:
                row_o.append(max(oa, ob))
                if max(oa, ob) < args.quiet:
                    quiet.append(sa / sb)
            if xa is not None and xb is not None:
                ca.append(xa); cb.append(xb)
        signal.alarm(0)
        log(f"  pair {i + 1}: step s vcc {' '.join(f'{t:.2f}' for t in row_a)}  pytorch "
            f"{' '.join(f'{t:.2f}' for t in row_b)}  ratios "
            f"{' '.join(f'{x / y:.2f}' for x, y in zip(row_a, row_b))}  other load "
            f"{' '.join(f'{o:.1f}' for o in row_o) or 'n/a'}   peak RSS MiB vcc {mib(ra[-1]):.0f}  "
            f"pytorch {mib(rb[-1]):.0f}")
    res = {
        "model": model,
        "vcc_s": statistics.median(ta), "torch_s": statistics.median(tb), "ratio": statistics.median(ratios),
        "min_ratio": min(ratios), "max_ratio": max(ratios), "n": len(ratios),
        "fast_ratio": min(ta) / min(tb),
        "quiet_ratio": statistics.median(quiet) if quiet else None, "n_quiet": len(quiet),
        "vcc_cpu": statistics.median(ca) if ca else None, "torch_cpu": statistics.median(cb) if cb else None,
        "vcc_rss": statistics.median(ra), "torch_rss": statistics.median(rb),
        "vcc_floor": floor_a, "torch_floor": floor_b,
        "loss1": (A.loss.get(1), B.loss.get(1)), "loss_last": (A.loss.get(last), B.loss.get(last)),
    }
    res["rss_ratio"] = res["vcc_rss"] / res["torch_rss"]
    log(f"  median step s: vcc {res['vcc_s']:.3f}  pytorch {res['torch_s']:.3f}  "
        f"vcc/pytorch {res['ratio']:.2f} (median of {res['n']} step pairs, range "
        f"{res['min_ratio']:.2f}..{res['max_ratio']:.2f})")
    quiet_txt = (f"median of the {len(quiet)} step pairs with other load < {args.quiet} cores: {res['quiet_ratio']:.2f}"
                 if quiet else f"no step pair had other load < {args.quiet} cores")
    log(f"  fastest step: vcc {min(ta):.3f}  pytorch {min(tb):.3f}  ratio {res['fast_ratio']:.2f};  {quiet_txt}")
    if ca:
        log(f"  median CPU s per step (all threads): vcc {res['vcc_cpu']:.2f}  pytorch {res['torch_cpu']:.2f}")
    log(f"  median peak RSS MiB: vcc {mib(res['vcc_rss']):.0f}  pytorch {mib(res['torch_rss']):.0f}  "
        f"vcc/pytorch {res['rss_ratio']:.2f}   (after load, 0 steps: vcc {mib(floor_a):.0f}  "
        f"pytorch {mib(floor_b):.0f})")
    log(f"  loss step 1: vcc {res['loss1'][0]}  pytorch {res['loss1'][1]};  "
        f"step {last}: vcc {res['loss_last'][0]}  pytorch {res['loss_last'][1]}")
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Time vcc's C trainer step against PyTorch's (CPU), side by side, and print the ratio.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--models", default="r3d_18,mc3_18", help="comma-separated: " + ", ".join(MODELS))
    ap.add_argument("--shape", type=parse_shape, default=parse_shape("2x3x8x112x112"),
                    help="one batch, N x C x T x H x W")
    ap.add_argument("--threads", type=int, default=2,
                    help="OPENBLAS/OMP/MKL_NUM_THREADS for both, torch.set_num_threads for PyTorch")
    ap.add_argument("--pairs", type=int, default=3, help="pairs of processes per model (one C trainer, one PyTorch), STEPS interleaved timed steps each")
    ap.add_argument("--warmup", type=int, default=1, help="untimed steps at the start of every run")
    ap.add_argument("--steps", type=int, default=3, help="timed steps of every run")
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "bench"),
                    help="work folder: exports (cached), trainers")
    ap.add_argument("--vcc", default=os.path.join(ROOT, "build", "vcc"), help="the vcc binary")
    ap.add_argument("--vcc-args", default="",
                    help="more vcc options for every trainer, e.g. \"--cpu-conv dnnl --workspace-limit 48MiB\" "
                         "(give such runs their own --work: the trainers are rebuilt there, the exports cached)")
    ap.add_argument("--samples", type=int, default=4, help="samples in the exported data set")
    ap.add_argument("--seed", type=int, default=0, help="export seed (weights and data)")
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--timeout", type=float, default=900, help="seconds allowed to one pair of processes")
    ap.add_argument("--quiet", type=float, default=0.25,
                    help="a step pair counts as quiet when other processes took fewer cores than this "
                         "during both of its steps")
    ap.add_argument("--prepare-only", action="store_true",
                    help="export (if not cached), compile and build each model's trainer; time nothing")
    args = ap.parse_args(argv)
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    for m in models:
        if m not in MODELS:
            ap.error(f"--models: unknown model {m!r} (choose from {', '.join(MODELS)})")
    if args.threads <= 0 or args.pairs <= 0 or args.warmup <= 0 or args.steps <= 0:
        ap.error("--threads, --pairs, --warmup and --steps must be positive")
    if not os.access(args.vcc, os.X_OK):
        ap.error(f"--vcc {args.vcc}: not an executable (build vcc first: cd build && make)")
    signal.signal(signal.SIGALRM, on_alarm)
    atexit.register(kill_live)
    args.work = os.path.abspath(args.work)
    args.vcc = os.path.abspath(args.vcc)

    env = dict(os.environ)
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = str(args.threads)

    if args.prepare_only:
        for m in models:
            mdir = os.path.join(args.work, m)
            os.makedirs(mdir, exist_ok=True)
            log(f"== {m}")
            export(args, m, mdir)
            log(f"  {build(args, m, mdir)}")
            log(f"  trainer: {os.path.join(mdir, 'train')}")
        return 0

    log(f"method: per pair, both processes start and run {args.warmup} warm-up step(s) alone (not timed), "
        f"then steps {args.warmup + 1}..{args.warmup + args.steps} alternate vcc, pytorch, vcc, ... "
        f"(the other process stopped); a step's time = resume to its `step k` line; medians over "
        f"{args.pairs} pairs x {args.steps} steps; peak RSS = ru_maxrss of each process")
    t0 = time.perf_counter()
    results = [bench_model(args, m, env) for m in models]

    shape = "x".join(map(str, args.shape))
    log("")
    log(f"| model | shape | threads | vcc step s | PyTorch step s | vcc/PyTorch | quiet vcc/PyTorch | "
        f"fastest vcc/PyTorch | vcc peak RSS MiB | PyTorch peak RSS MiB | RSS vcc/PyTorch |")
    log("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        q = f"{r['quiet_ratio']:.2f} ({r['n_quiet']})" if r["quiet_ratio"] is not None else "- (0)"
        log(f"| {r['model']} | {shape} | {args.threads} | {r['vcc_s']:.2f} | {r['torch_s']:.2f} | "
            f"{r['ratio']:.2f} | {q} | {r['fast_ratio']:.2f} | {mib(r['vcc_rss']):.0f} | "
            f"{mib(r['torch_rss']):.0f} | {r['rss_ratio']:.2f} |")
    log(f"(medians of {args.pairs} pairs x {args.steps} interleaved steps; quiet: step pairs (count) during which "
        f"other processes took < {args.quiet} cores; fastest: fastest vcc step / fastest PyTorch step; "
        f"total {time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
