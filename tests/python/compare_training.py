#!/usr/bin/python3
"""End-to-end check of a vcc-generated C trainer against PyTorch (used from CTest).

    .venv/bin/python tests/python/compare_training.py --vcc build/vcc --model mc3_18 \
        --workdir build/e2e/mc3_18 --shape 2x3x8x56x56 --samples 4 --steps 5 [--check-grads]

What it does, in --workdir (DIR):

 1. exports the model: models/export_torchvision.py -> DIR/<model>.onnx, <model>.pt, data.npy,
    labels.npy (random init and data from --seed);
 2. compiles it: `vcc DIR/<model>.onnx -o DIR/train.c`; the first line of train.c is
    `// build (from this file's folder): <shell command>`, which is run inside DIR to build the
    trainer (default ./train);
 3. trains: `./train --data data.npy --labels labels.npy --steps S --lr 0.01 --momentum 0.9
    --weight-decay 0`, reading the stdout lines `step <k> loss <value>` (k = 1..S);
 4. runs the PyTorch reference models/reference_sgd.py with the same state, data, batch (N of
    --shape) and optimizer settings;
 5. compares: every step's loss within --rtol relative (|a-b| <= rtol*|b|, b the reference); with
    --assert-steps K only the first K, the rest printed.
    With --check-grads it also runs `./train ... --steps 1 --save-grads DIR/vcc_grads.safetensors`
    and compares each parameter's first-step gradient with the reference's:
    max|a-b| / max|b| <= --grad-rtol; a tensor present on one side only is a failure.

Optional --noise-floor K also runs the reference in float64 and widens each tolerance to
max(rtol, K * e), e being how far PyTorch's own float32 result is from its float64 one for that
step / tensor. Video ResNets with small BatchNorm populations are chaotic in float32 (a ReLU whose
input rounds to the other side of zero changes the gradient of everything below it), so two correct
float32 implementations can disagree by more than 1e-3; this option shows and allows for that.

Prints the figures (loss pairs; worst gradient tensors and a count) and exits 0 when everything
passes, 1 otherwise (including when a step cannot run: missing binary, build error, bad output).
Subprocess output is kept in DIR/logs/.
"""

import argparse
import json
import math
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "models"))
from clipshape import parse_shape  # noqa: E402

HERE = Path(__file__).resolve().parent
DEFAULT_MODELS_DIR = HERE.parent.parent / "models"
STEP_RE = re.compile(r"^\s*step\s+(\d+)\s+loss\s+(\S+)\s*$")
BUILD_PREFIX = "// build (from this file's folder):"


class Failure(Exception):
    """A stage could not run or produced unusable output; the message says which and why."""


def log(msg=""):
    print(msg, flush=True)


def tail(text, lines=30):
    parts = text.rstrip().splitlines()
    cut = parts[-lines:]
    prefix = [f"    ... ({len(parts) - lines} earlier lines in the log)"] if len(parts) > lines else []
    return "\n".join(prefix + ["    " + p for p in cut])


def run(stage, cmd, cwd, logdir, timeout, env=None, shell=False):
    """Run one stage; keep its output in logdir/<stage>.{stdout,stderr}; raise Failure on error."""
    shown = cmd if shell else " ".join(shlex.quote(str(c)) for c in cmd)
    log(f"[{stage}] $ {shown}   (in {cwd})")
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd if shell else [str(c) for c in cmd], cwd=cwd, env=env, shell=shell,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           errors="replace", timeout=timeout)
    except FileNotFoundError as e:
        raise Failure(f"{stage}: cannot execute {cmd[0] if not shell else cmd!r}: {e.strerror}")
    except PermissionError as e:
        raise Failure(f"{stage}: cannot execute {cmd[0] if not shell else cmd!r}: {e.strerror}")
    except subprocess.TimeoutExpired:
        raise Failure(f"{stage}: timed out after {timeout} s: {shown}")
    dt = time.monotonic() - t0
    (logdir / f"{stage}.stdout").write_text(p.stdout)
    (logdir / f"{stage}.stderr").write_text(p.stderr)
    if p.returncode != 0:
        how = (f"killed by signal {-p.returncode}" if p.returncode < 0
               else f"exit status {p.returncode}")
        msg = f"{stage}: {how} after {dt:.1f} s: {shown}"
        if p.stderr.strip():
            msg += "\n  stderr:\n" + tail(p.stderr)
        if p.stdout.strip():
            msg += "\n  stdout:\n" + tail(p.stdout, 10)
        raise Failure(msg)
    log(f"[{stage}] ok, {dt:.1f} s")
    return p.stdout, dt


def fmt_num(x):
    return "%.6g" % x if isinstance(x, float) and math.isfinite(x) else str(x)


# --------------------------------------------------------------------------------------------
# stages
# --------------------------------------------------------------------------------------------

def export(args, d, logdir):
    info_path = d / "export_info.json"
    want = {"model": args.model, "shape": args.shape, "samples": args.samples, "seed": args.seed}
    if args.reuse_export and info_path.is_file():
        info = json.loads(info_path.read_text())
        files = [d / f"{args.model}.onnx", d / f"{args.model}.pt", d / "data.npy", d / "labels.npy"]
        if all(info.get(k) == v for k, v in want.items()) and all(f.is_file() for f in files):
            log(f"[export] reusing {d / (args.model + '.onnx')} (same model, shape, samples, seed)")
            return 0.0
    script = args.models_dir / "export_torchvision.py"
    if not script.is_file():
        raise Failure(f"export: {script} not found (set --models-dir)")
    cmd = [sys.executable, script, "--model", args.model, "--shape", "x".join(map(str, args.shape)),
           "--samples", str(args.samples), "--seed", str(args.seed), "--out", d,
           "--threads", str(args.threads)]
    _, dt = run("export", cmd, d, logdir, args.timeout)
    return dt


def compile_and_build(args, d, logdir):
    vcc = Path(args.vcc)
    if not vcc.exists():
        raise Failure(f"vcc: binary {vcc} does not exist (build vcc first, or pass --vcc)")
    if not os.access(vcc, os.X_OK):
        raise Failure(f"vcc: {vcc} is not executable")
    src = d / "train.c"
    if src.exists():
        src.unlink()
    # --save-grads (--check-grads) needs a trainer that keeps its gradients
    keep = ["--keep-grads"] if args.check_grads and "--keep-grads" not in args.vcc_arg else []
    cmd = [vcc.resolve(), d / f"{args.model}.onnx", "-o", src] + list(args.vcc_arg) + keep
    out, t_vcc = run("vcc", cmd, d, logdir, args.timeout)
    if out.strip():
        log(tail(out, 8))
    if not src.is_file():
        raise Failure(f"vcc: exited 0 but did not write {src}")
    with open(src, "r", errors="replace") as f:
        first = f.readline().rstrip("\n")
    if not first.startswith(BUILD_PREFIX):
        raise Failure(f"{src}:1: expected the first line to be '{BUILD_PREFIX} <command>', "
                      f"found {first[:120]!r}")
    build = first[len(BUILD_PREFIX):].strip()
    if not build:
        raise Failure(f"{src}:1: the '{BUILD_PREFIX}' line has no command")
    exe = "train"
    try:
        words = shlex.split(build)
    except ValueError as e:
        raise Failure(f"{src}:1: cannot parse the build command {build!r}: {e}")
    for i, w in enumerate(words):
        if w == "-o" and i + 1 < len(words):
            exe = words[i + 1]
        elif w.startswith("-o") and len(w) > 2:
            exe = w[2:]
    exe_path = (d / exe).resolve()
    if exe_path.exists():
        exe_path.unlink()
    _, t_cc = run("build", build, d, logdir, args.timeout, shell=True)
    if not exe_path.is_file() or not os.access(exe_path, os.X_OK):
        raise Failure(f"build: '{build}' succeeded but {exe_path} is not an executable file")
    return exe_path, t_vcc, t_cc


def trainer_env(args):
    env = dict(os.environ)
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env.setdefault(k, str(args.threads))
    return env


def parse_losses(stdout, steps, source):
    """`step <k> loss <value>` lines -> [loss_1, ..., loss_S]; other lines are ignored."""
    seen = {}
    for ln, line in enumerate(stdout.splitlines(), 1):
        m = STEP_RE.match(line)
        if not m:
            continue
        k = int(m.group(1))
        try:
            v = float(m.group(2))
        except ValueError:
            raise Failure(f"{source}: stdout line {ln}: loss {m.group(2)!r} is not a number")
        if k in seen:
            raise Failure(f"{source}: stdout line {ln}: step {k} reported twice")
        seen[k] = v
    if not seen:
        raise Failure(f"{source}: printed no 'step <k> loss <value>' line; stdout was:\n" + tail(stdout, 10))
    missing = [k for k in range(1, steps + 1) if k not in seen]
    extra = sorted(k for k in seen if not 1 <= k <= steps)
    if missing or extra:
        raise Failure(f"{source}: expected steps 1..{steps}; missing {missing or 'none'}, "
                      f"unexpected {extra or 'none'}")
    return [seen[k] for k in range(1, steps + 1)]


def train_args(args):
    return ["--data", "data.npy", "--labels", "labels.npy", "--lr", repr(args.lr),
            "--momentum", repr(args.momentum), "--weight-decay", repr(args.weight_decay)]


def run_reference(args, d, logdir, dtype, tag):
    script = args.models_dir / "reference_sgd.py"
    if not script.is_file():
        raise Failure(f"reference: {script} not found (set --models-dir)")
    losses = d / f"{tag}_losses.json"
    cmd = [sys.executable, script, "--state", d / f"{args.model}.pt", "--model", args.model,
           "--data", d / "data.npy", "--labels", d / "labels.npy", "--batch", str(args.shape[0]),
           "--steps", str(args.steps), "--lr", repr(args.lr), "--momentum", repr(args.momentum),
           "--weight-decay", repr(args.weight_decay), "--losses-out", losses,
           "--threads", str(args.threads), "--dtype", dtype, "--quiet"]
    grads = None
    if args.check_grads:
        grads = d / f"{tag}_grads.safetensors"
        cmd += ["--grads-out", grads, "--grads-step", "1"]
    _, dt = run(tag, cmd, d, logdir, args.timeout)
    vals = json.loads(losses.read_text())
    if len(vals) != args.steps:
        raise Failure(f"{tag}: {losses} has {len(vals)} losses, expected {args.steps}")
    return vals, grads, dt


def load_safetensors(path, who):
    try:
        from safetensors.numpy import load_file
    except ImportError:
        raise Failure(f"the safetensors package is missing from {sys.executable}: run with the project's "
                      ".venv/bin/python (sh scripts/setup.sh --deps makes it)")
    if not Path(path).is_file():
        raise Failure(f"{who}: {path} was not written")
    try:
        return load_file(str(path))
    except Exception as e:
        raise Failure(f"{who}: {path} is not a valid safetensors file: {e}")


# --------------------------------------------------------------------------------------------
# comparisons
# --------------------------------------------------------------------------------------------

def compare_losses(got, ref, rtol, noise, k_noise, assert_steps=None):
    log("")
    log("losses (vcc vs PyTorch reference), pass when |a-b| <= tol*|b|"
        + ("" if assert_steps is None else f" (steps 1..{assert_steps}; later steps reported, not asserted)"))
    hdr = f"  {'step':>4}  {'vcc':>14}  {'reference':>14}  {'|a-b|':>10}  {'rel':>9}  {'tol':>9}"
    if noise is not None:
        hdr += f"  {'f32-vs-f64':>10}"
    log(hdr + "  ok")
    ok_all = True
    for k, (a, b) in enumerate(zip(got, ref), 1):
        diff = abs(a - b)
        rel = diff / abs(b) if b != 0 else (0.0 if a == 0 else math.inf)
        tol = rtol if noise is None else max(rtol, k_noise * noise[k - 1])
        ok = math.isfinite(a) and (diff <= tol * abs(b) if b != 0 else a == 0)
        asserted = assert_steps is None or k <= assert_steps
        ok_all &= ok or not asserted
        line = f"  {k:>4}  {fmt_num(a):>14}  {fmt_num(b):>14}  {diff:>10.3e}  {rel:>9.2e}  {tol:>9.2e}"
        if noise is not None:
            line += f"  {noise[k - 1]:>10.2e}"
        log(line + ("  ok" if ok else "  FAIL" if asserted else "  (over, not asserted)"))
    return ok_all


def grad_error(a, b):
    import numpy as np

    a = a.astype(np.float64)
    b = b.astype(np.float64)
    if not np.all(np.isfinite(a)):
        return math.inf, float(np.max(np.abs(b))) if b.size else 0.0
    den = float(np.max(np.abs(b))) if b.size else 0.0
    num = float(np.max(np.abs(a - b))) if b.size else 0.0
    if den == 0.0:
        return (0.0 if num == 0.0 else math.inf), den
    return num / den, den


def compare_grads(got, ref, rtol, noise, k_noise):
    rows, problems = [], []
    for name in sorted(set(got) | set(ref)):
        if name not in ref:
            problems.append(f"  '{name}': written by the trainer, not a parameter of the reference")
            continue
        if name not in got:
            problems.append(f"  '{name}': parameter has no gradient in the trainer's file")
            continue
        a, b = got[name], ref[name]
        if tuple(a.shape) != tuple(b.shape):
            problems.append(f"  '{name}': shape {list(a.shape)} in the trainer's file, "
                            f"{list(b.shape)} in the reference")
            continue
        err, den = grad_error(a, b)
        n = None if noise is None else noise.get(name, 0.0)
        tol = rtol if n is None else max(rtol, k_noise * n)
        rows.append((err / tol if tol > 0 else math.inf, name, list(b.shape), den, err, tol, n))
    rows.sort(key=lambda r: (-r[0] if math.isfinite(r[0]) else -math.inf, r[1]))
    failed = [r for r in rows if not r[4] <= r[5]]
    log("")
    log(f"gradients after step 1 (vcc vs reference), pass when max|a-b| / max|b| <= tol; "
        f"worst {min(10, len(rows))} of {len(rows)}:")
    hdr = f"  {'tensor':<40} {'shape':<22} {'max|b|':>9}  {'rel':>9}  {'tol':>9}"
    if noise is not None:
        hdr += f"  {'f32-vs-f64':>10}"
    log(hdr + "  ok")
    for r in rows[:10]:
        _, name, shape, den, err, tol, n = r
        line = f"  {name:<40} {str(shape):<22} {den:>9.2e}  {err:>9.2e}  {tol:>9.2e}"
        if n is not None:
            line += f"  {n:>10.2e}"
        log(line + ("  ok" if err <= tol else "  FAIL"))
    hidden = sum(1 for r in rows[10:] if not r[4] <= r[5])
    if hidden:
        log(f"  ... and {hidden} more out of tolerance (not shown)")
    if problems:
        log(f"tensors present on one side only, or of different shapes ({len(problems)}):")
        for p in problems[:20]:
            log(p)
        if len(problems) > 20:
            log(f"  ... and {len(problems) - 20} more")
    log(f"gradients: {len(rows) - len(failed)} of {len(rows) + len(problems)} tensors within tolerance; "
        f"{len(failed)} out of tolerance, {len(problems)} missing/mismatched")
    if not rows and not problems:
        log("gradients: neither file holds any tensor")
        return False
    return not failed and not problems


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Export a torchvision video model, compile it with vcc, train it, and compare "
                    "losses (and first-step gradients) with PyTorch. Exit 0 on pass, 1 on fail.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--vcc", required=True, help="path to the vcc binary")
    ap.add_argument("--model", required=True, choices=("r3d_18", "mc3_18", "r2plus1d_18"))
    ap.add_argument("--workdir", required=True, help="directory for the export, trainer and logs")
    ap.add_argument("--shape", type=parse_shape, default=parse_shape("2x3x8x56x56"),
                    help="one batch, N x C x T x H x W (N is the training batch size)")
    ap.add_argument("--samples", type=int, default=4, help="samples in data.npy")
    ap.add_argument("--steps", type=int, default=5, help="training steps to compare")
    ap.add_argument("--assert-steps", type=int, default=None,
                    help="assert the first K steps' losses and report the rest (default: all): free-running "
                         "runs of two correct float32 trainers part at the first ReLU input that rounds to the "
                         "other side of zero, so only the steps before any can be held to a tolerance")
    ap.add_argument("--check-grads", action="store_true",
                    help="also compare every parameter's first-step gradient")
    ap.add_argument("--seed", type=int, default=0, help="weights and data seed")
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--weight-decay", type=float, default=0.0)
    ap.add_argument("--rtol", type=float, default=1e-3, help="relative tolerance on each loss")
    ap.add_argument("--grad-rtol", type=float, default=1e-3,
                    help="tolerance on max|a-b|/max|b| per gradient tensor")
    ap.add_argument("--noise-floor", type=float, default=0.0, metavar="K",
                    help="if > 0, also run the reference in float64 and accept errors up to "
                         "K times PyTorch's own float32-vs-float64 error (per step / tensor)")
    ap.add_argument("--threads", type=int, default=2,
                    help="threads for the reference (torch) and the trainer (OMP/OPENBLAS_NUM_THREADS)")
    ap.add_argument("--timeout", type=int, default=3600, help="seconds allowed to each stage")
    ap.add_argument("--vcc-arg", action="append", default=[],
                    help="extra argument passed to vcc (repeatable)")
    ap.add_argument("--reuse-export", action="store_true",
                    help="skip the export when DIR already holds one with the same settings")
    ap.add_argument("--models-dir", type=Path, default=DEFAULT_MODELS_DIR,
                    help="where export_torchvision.py and reference_sgd.py live")
    args = ap.parse_args(argv)
    if args.samples <= 0 or args.steps <= 0 or args.threads <= 0:
        ap.error("--samples, --steps and --threads must be positive")
    if args.rtol < 0 or args.grad_rtol < 0 or args.noise_floor < 0:
        ap.error("tolerances must not be negative")
    args.models_dir = args.models_dir.resolve()

    d = Path(args.workdir).resolve()
    logdir = d / "logs"
    try:
        logdir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        log(f"FAIL: cannot create {logdir}: {e}")
        return 1
    log(f"compare_training: {args.model}, batch {'x'.join(map(str, args.shape))}, "
        f"{args.samples} samples, {args.steps} steps, lr {args.lr}, momentum {args.momentum}, "
        f"weight decay {args.weight_decay}, workdir {d}")

    times = {}
    try:
        times["export"] = export(args, d, logdir)
        exe, times["vcc"], times["build"] = compile_and_build(args, d, logdir)
        env = trainer_env(args)
        out, times["train"] = run("train", [exe] + train_args(args) + ["--steps", str(args.steps)],
                                  d, logdir, args.timeout, env=env)
        got = parse_losses(out, args.steps, f"{exe.name} (train)")
        got_grads = None
        if args.check_grads:
            gpath = d / "vcc_grads.safetensors"
            if gpath.exists():
                gpath.unlink()
            run("train_grads", [exe] + train_args(args) + ["--steps", "1", "--save-grads", gpath],
                d, logdir, args.timeout, env=env)
            got_grads = load_safetensors(gpath, "train --save-grads")
        ref, ref_gpath, times["reference"] = run_reference(args, d, logdir, "float32", "ref")
        ref_grads = load_safetensors(ref_gpath, "reference") if args.check_grads else None
        loss_noise = grad_noise = None
        if args.noise_floor > 0:
            ref64, ref64_gpath, times["reference_f64"] = run_reference(args, d, logdir, "float64", "ref64")
            loss_noise = [abs(a - b) / abs(b) if b else 0.0 for a, b in zip(ref, ref64)]
            if args.check_grads:
                g64 = load_safetensors(ref64_gpath, "reference float64")
                grad_noise = {k: grad_error(ref_grads[k], g64[k])[0] for k in ref_grads if k in g64}
    except Failure as e:
        log("")
        log(f"FAIL: {e}")
        return 1

    ok = compare_losses(got, ref, args.rtol, loss_noise, args.noise_floor, args.assert_steps)
    if args.check_grads:
        ok = compare_grads(got_grads, ref_grads, args.grad_rtol, grad_noise, args.noise_floor) and ok
    log("")
    log("times: " + ", ".join(f"{k} {v:.1f} s" for k, v in times.items()))
    log(f"{'PASS' if ok else 'FAIL'}: {args.model} vcc trainer vs PyTorch "
        f"({args.steps} steps{', gradients' if args.check_grads else ''})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
