"""Recomputation under a memory limit (vcc --memory-limit, passes/remat.c) against the unlimited plan.

    test_remat.py --vcc BUILD/vcc --model NAME --work DIR [--steps 3] [--cuda] [--fit]
    test_remat.py --vcc BUILD/vcc --model r3d_18 --work DIR --fit-only 1073741824
    test_remat.py --vcc BUILD/vcc --model r3d_18 --work DIR --double-batch 2x3x8x56x56 [--workspace-limit 2MiB]
                  [--max-flops 15]

models/export_video_nets.py exports the model (dropout 0; torchvision's r3d_18, mc3_18 and r2plus1d_18:
models/export_torchvision.py at (2, 3, 8, 56, 56)), and vcc compiles it:
  refused       with --memory-limit 1 (no arena is that small) vcc exits non-zero, writes neither the
                trainer nor its weights, and its message names the smallest arena reachable, S bytes
  limited       with --memory-limit S it compiles: the plan's arena is at most S and below the unlimited
                one, the plan JSON counts the recomputed values (> 0, with extra FLOPs > 0) and names the
                arena without recomputation as the unlimited plan's arena, and the IR after remat has
                backward clones "<node>.recompute" (with --expect-second-copies, some of a clone too:
                "<node>.recompute.recompute", a recomputed value made again after the peak; with
                --expect-op OP, some clone is of op OP, e.g. MaxPool)
  same numbers  both trainers (the limited one built with -DVCC_POISON -Wall -Wextra -Werror: every dead
                tensor poisoned, so a recomputed value read after its bytes were reused would show) run
                --steps steps from the same weights: the "step <k> loss <value>" lines are the same text
                and the --out files byte-identical
  CUDA          with --cuda, the limited CUDA trainer builds with nvcc without a diagnostic
                (tests/e2e/cuda_build.sh; where nvcc or cuDNN are absent that check alone is skipped)
  --fit         with --fit, the model exported again with a symbolic batch (export_video_nets.py
                --dynamic-batch; export_torchvision.py --dynamic-batch at clip 8x56x56 for r3d_18,
                mc3_18 and r2plus1d_18) and vcc --fit L (L twice the unlimited batch-N arena): the batch it names
                without recomputation compiles (--shape batch=B) within L and B+1 does not; the batch it
                names with recomputation compiles with --memory-limit L and one more is refused; each
                arena printed is that compilation's, and recomputation fits at least B
                (--fit-only L: this check alone, at limit L)
  --double-batch  this check alone: the torchvision model exported (export_torchvision.py) at the shape
                and at twice its batch; the larger trainer compiled with --memory-limit set to the smaller
                one's arena (vcc's defaults) fits it with at most --max-flops percent more FLOPs, and trains
                2 steps to the same losses and bytes as the larger trainer without the limit (both with
                --workspace-limit when given)
Prints the figures; exits 1 on a failure.
"""

import argparse
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS_DIR = os.path.join(HERE, "..", "..", "models")
TORCHVISION = ("r3d_18", "mc3_18", "r2plus1d_18")  # exported by models/export_torchvision.py


def run(cmd, cwd, shell=False, ok=True):
    p = subprocess.run(cmd, cwd=cwd, shell=shell, capture_output=True, text=True)
    if ok and p.returncode:
        sys.exit("FAIL: %s exited %d\n%s%s" % (cmd, p.returncode, p.stdout[-3000:], p.stderr[-3000:]))
    return p


def check_fit(vcc, model, d, limit):
    """vcc --fit limit on the model exported with a symbolic batch, checked by compiling at the batches it
    names and one more; returns the failures."""
    os.makedirs(d, exist_ok=True)
    if model in TORCHVISION:
        run([sys.executable, os.path.join(MODELS_DIR, "export_torchvision.py"), "--model", model, "--shape",
             "2x3x8x56x56", "--samples", "2", "--out", d, "--dynamic-batch"], d)
    else:
        run([sys.executable, os.path.join(MODELS_DIR, "export_video_nets.py"), "--model", model, "--out", d,
             "--dropout", "0", "--num-classes", "5", "--dynamic-batch"], d)
    onnx = model + ".onnx"
    out = run([vcc, onnx, "--fit", str(limit)], d).stdout
    print(out.strip())
    found = re.findall(r"(without|with) recomputation *: largest batch=(\d+), arena (\d+) bytes", out)
    if len(found) != 2:
        return ["vcc --fit printed %r" % out]
    fails = []
    best = {}
    for how, b, arena in found:
        b, arena = int(b), int(arena)
        best[how] = b
        extra = ["--memory-limit", str(limit)] if how == "with" else []
        for n, want in ((b, True), (b + 1, False)):
            p = run([vcc, onnx, "--shape", "batch=%d" % n] + extra, d, ok=False)
            m = re.search(r"arena (\d+) bytes", p.stdout)  # the summary: the arena as planned
            got = p.returncode == 0 and m is not None and int(m.group(1)) <= limit
            if got != want:
                fails.append("--fit %s recomputation: batch %d %s, but vcc --shape batch=%d %s"
                             % (how, b, "fits", n, "fits" if got else "does not"))
            if n == b and m and int(m.group(1)) != arena:
                fails.append("--fit %s recomputation: arena %d printed, %d compiled" % (how, arena, int(m.group(1))))
    if best.get("with", 0) < best.get("without", 0):
        fails.append("recomputation fits a smaller batch (%s)" % best)
    return fails


def same_numbers(vcc, onnx, d, limit, common, steps):
    """The trainer compiled without and with --memory-limit limit (both with the vcc options common), the
    limited one built with -DVCC_POISON -Wall -Wextra -Werror, each run steps steps from the same weights:
    returns (failures, unlimited plan JSON, limited plan JSON). The step lines must be the same text and
    the --out files byte-identical."""
    hyper = ["--lr", "0.01", "--momentum", "0.9", "--weight-decay", "0.0001"]
    losses, weights, plans = {}, {}, {}
    for tag, extra in (("plain", []), ("remat", ["--memory-limit", str(limit)])):
        p = run([vcc, onnx, "-o", "train_%s.c" % tag, "--plan-json", "plan_%s.json" % tag] + common + extra, d)
        build = p.stdout.strip().splitlines()[-1]
        if tag == "remat":
            build = build.replace("-std=c11", "-std=c11 -DVCC_POISON -Wall -Wextra -Werror")
            print(p.stderr.strip())
        run(build, d, shell=True)
        out = run(["./train_" + tag, "--data", "data.npy", "--labels", "labels.npy", "--steps", str(steps)] + hyper +
                  ["--out", "out_%s.safetensors" % tag], d).stdout
        losses[tag] = [ln for ln in out.splitlines() if ln.startswith("step ")]
        weights[tag] = open(os.path.join(d, "out_%s.safetensors" % tag), "rb").read()
        plans[tag] = json.load(open(os.path.join(d, "plan_%s.json" % tag)))
        print("%-5s arena %d  %s" % (tag, plans[tag]["arena_bytes"], " | ".join(losses[tag])))
    fails = []
    if len(losses["plain"]) != steps or losses["plain"] != losses["remat"]:
        fails.append("the losses differ: %s vs %s" % (losses["plain"], losses["remat"]))
    if weights["plain"] != weights["remat"]:
        fails.append("the --out files differ")
    return fails, plans["plain"], plans["remat"]


def check_double_batch(vcc, a, d):
    """The twice-the-batch check: the model exported at shape a.double_batch (batch N) and at batch 2N; the
    2N trainer compiled with --memory-limit set to the N trainer's arena (vcc's defaults) and with
    a.workspace_limit when given: it compiles, its arena is within that limit, its recomputation costs at
    most a.max_flops percent of the step, and it trains to the same losses and bytes as the 2N trainer
    without the limit (same --workspace-limit). Returns the failures."""
    dims = [int(v) for v in a.double_batch.split("x")]
    base = {}
    for tag, n in (("base", dims[0]), ("double", 2 * dims[0])):
        dd = os.path.join(d, tag)
        os.makedirs(dd, exist_ok=True)
        shape = "x".join(map(str, [n] + dims[1:]))
        run([sys.executable, os.path.join(MODELS_DIR, "export_torchvision.py"), "--model", a.model, "--shape", shape,
             "--samples", str(n), "--seed", "0", "--out", dd], dd)
        base[tag] = dd
    onnx = a.model + ".onnx"
    run([vcc, onnx, "--plan-json", "plan.json"], base["base"])
    limit = json.load(open(os.path.join(base["base"], "plan.json")))["arena_bytes"]
    print("batch %d arena (vcc's defaults): %d bytes" % (dims[0], limit))
    common = ["--workspace-limit", a.workspace_limit] if a.workspace_limit else []
    fails, plain, rem = same_numbers(vcc, onnx, base["double"], limit, common, 2)
    print("batch %d%s: arena %d without recomputation, %d with %d values recomputed, +%.2f%% FLOPs (limit %d)"
          % (2 * dims[0], " --workspace-limit %s" % a.workspace_limit if a.workspace_limit else "",
             plain["arena_bytes"], rem["arena_bytes"], rem["recomputed_values"], rem["recompute_flops_percent"],
             limit))
    if rem["arena_bytes"] > limit:
        fails.append("arena %d above the limit %d" % (rem["arena_bytes"], limit))
    if rem["recompute_flops_percent"] > a.max_flops:
        fails.append("+%.2f%% FLOPs, above %.1f%%" % (rem["recompute_flops_percent"], a.max_flops))
    return fails


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vcc", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--cuda", action="store_true")
    ap.add_argument("--expect-second-copies", action="store_true",
                    help="fail unless some recomputed value is made a second time after the peak")
    ap.add_argument("--expect-op", metavar="OP", help="fail unless some backward clone is of op OP")
    ap.add_argument("--fit", action="store_true")
    ap.add_argument("--fit-only", type=int, metavar="BYTES",
                    help="only the --fit check, at this limit (a torchvision model: clip 8x56x56)")
    ap.add_argument("--double-batch", metavar="NxCxTxHxW",
                    help="only the twice-the-batch check: a torchvision model at this shape and at twice its batch")
    ap.add_argument("--workspace-limit", help="vcc --workspace-limit of the twice-the-batch trainers")
    ap.add_argument("--max-flops", type=float, default=15.0,
                    help="the twice-the-batch trainer's extra FLOPs allowed, percent of the step (default 15)")
    a = ap.parse_args()
    d = os.path.abspath(a.work)
    vcc = os.path.abspath(a.vcc)
    os.makedirs(d, exist_ok=True)
    if a.fit_only:
        fails = check_fit(vcc, a.model, os.path.join(d, "fit"), a.fit_only)
        for f in fails:
            print("FAIL: " + f)
        print("%s: %s, --fit %d" % ("FAIL" if fails else "PASS", a.model, a.fit_only))
        return 1 if fails else 0
    if a.double_batch:
        fails = check_double_batch(vcc, a, d)
        for f in fails:
            print("FAIL: " + f)
        print("%s: %s at twice the batch of %s" % ("FAIL" if fails else "PASS", a.model, a.double_batch))
        return 1 if fails else 0
    onnx = a.model + ".onnx"
    for f in os.listdir(d):
        if f.startswith(("train_", "out_", "plan_", "refused")):
            os.remove(os.path.join(d, f))
    if a.model in TORCHVISION:
        run([sys.executable, os.path.join(MODELS_DIR, "export_torchvision.py"), "--model", a.model, "--shape",
             "2x3x8x56x56", "--samples", "2", "--seed", "0", "--out", d], d)
    else:
        run([sys.executable, os.path.join(MODELS_DIR, "export_video_nets.py"), "--model", a.model, "--out", d,
             "--dropout", "0", "--num-classes", "5"], d)
    fails = []

    # refused: the smallest reachable arena is named, nothing is written
    p = run([vcc, onnx, "-o", "refused.c", "--memory-limit", "1"], d, ok=False)
    m = re.search(r"smallest arena reachable by recomputation is (\d+) bytes", p.stderr)
    if p.returncode == 0 or not m:
        sys.exit("FAIL: --memory-limit 1: exit %d, message %r" % (p.returncode, p.stderr))
    if os.path.exists(os.path.join(d, "refused.c")) or os.path.exists(os.path.join(d, "refused.safetensors")):
        fails.append("--memory-limit 1 wrote files")
    smallest = int(m.group(1))
    print("refused: %s" % p.stderr.strip())

    f, plain, rem = same_numbers(vcc, onnx, d, smallest, [], a.steps)
    fails += f
    if not rem["arena_bytes"] <= smallest < plain["arena_bytes"]:
        fails.append("arena %d with --memory-limit %d, %d without" % (rem["arena_bytes"], smallest, plain["arena_bytes"]))
    if rem["arena_unlimited_bytes"] != plain["arena_bytes"] or plain["recomputed_values"] != 0:
        fails.append("the plan JSON's arena without recomputation %d, the unlimited plan's %d (recomputed %d)"
                     % (rem["arena_unlimited_bytes"], plain["arena_bytes"], plain["recomputed_values"]))
    if not (rem["recomputed_values"] > 0 and rem["recompute_flops"] > 0 and 0 < rem["recompute_flops_percent"] < 100):
        fails.append("recomputed %s values, %s FLOPs (%s%%)" % (rem["recomputed_values"], rem["recompute_flops"],
                                                                rem["recompute_flops_percent"]))
    clones = [t["name"] for t in rem["tensors"] if t["name"].endswith(".recompute")]
    dump = run([vcc, onnx, "--memory-limit", str(smallest), "--dump-ir", "remat"], d).stdout
    nodes = [ln for ln in dump.splitlines() if ln.startswith("node ") and ".recompute\"" in ln.split("(")[0]]
    if not clones or not nodes or any(" backward " not in ln for ln in nodes):
        fails.append("no recomputed values in the plan or no backward clones in the IR")
    # second copies: a recomputed value made again for its readers after the peak (a clone of a clone)
    again = [ln for ln in nodes if ".recompute.recompute\"" in ln.split("(")[0]]
    print("recomputed %d values (%d clone nodes, %d of them second copies), +%.3f%% FLOPs; arena %d -> %d"
          % (rem["recomputed_values"], len(nodes), len(again), rem["recompute_flops_percent"], plain["arena_bytes"],
             rem["arena_bytes"]))
    if a.expect_second_copies and not again:
        fails.append("no recomputed value was made a second time")
    if a.expect_op and not any(ln.split()[3] == a.expect_op for ln in nodes):
        fails.append("no %s among the recomputed nodes: %s" % (a.expect_op, sorted({ln.split()[3] for ln in nodes})))

    if a.cuda:
        p = run(["sh", os.path.join(HERE, "cuda_build.sh"), vcc, os.path.join(d, onnx), os.path.join(d, "cuda"),
                 "--memory-limit", str(smallest)], d, ok=False)
        print(p.stdout.strip())
        if p.returncode not in (0, 77):  # 77: no nvcc or cuDNN here, reported as the line above
            fails.append("the CUDA trainer with recomputation: %s" % p.stdout.strip().splitlines()[-1:])
    if a.fit:
        fails += check_fit(vcc, a.model, os.path.join(d, "fit"), 2 * plain["arena_bytes"])
    for f in fails:
        print("FAIL: " + f)
    if fails:
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
