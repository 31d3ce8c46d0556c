"""The plan checked at run time: C trainers built with -DVCC_POISON (runtime/vcc_poison.h).

    test_poison.py --vcc BUILD/vcc --work DIR --model-dir TINY/res3d [--export NAME ...] [--steps 2]

For the tiny CNN in --model-dir (model.onnx, data.npy, labels.npy) and each models/video_nets.py model
named by --export (exported into DIR by models/export_video_nets.py; vivit_tiny is a transformer):
  - vcc -o train.c; the trainer built as vcc prints it, again with -DVCC_POISON (every dead tensor's
    bytes overwritten with NaN, every read checked against its definition's owner and bytes), and with
    -DVCC_POISON_SWEEP too (every live tensor re-checked after every node) runs --steps steps: the
    poisoned builds exit 0 and print the same losses, to the last digit, as the plain one (no node read
    a byte after its tensor's interval ended, none wrote over a live one);
  - a planted overlap: in a copy of the CNN's train.c, one forward node's output address is moved onto
    a tensor that is live across that node (what an emitter or planner bug would do; vcc's own plan
    check refuses such a plan, so the edit is made to the generated C). The poisoned build must abort
    (non-zero exit) with a VCC_POISON line naming the tensor that was written over and the node that
    wrote it (or a range of nodes holding it); the plain build of the same edit runs to the end, which
    is why the check is needed. Built with -DVCC_POISON_SWEEP too, it must stop at that node, naming it.
Exits 1 on a failure.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def fail(msg):
    sys.exit("FAIL: " + msg)


def run(cmd, cwd, ok=True, shell=False):
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, shell=shell)
    if ok and p.returncode:
        fail("%s exited %d: %s%s" % (cmd, p.returncode, p.stdout[-1500:], p.stderr[-1500:]))
    return p


def losses(out):
    return [l for l in out.splitlines() if l.startswith("step ")]


def build(d, src, exe, poison, sweep=False):
    """The build command vcc printed for train.c, for src -> exe, with -DVCC_POISON when poison (and
    -DVCC_POISON_SWEEP when sweep)."""
    cmd = open(os.path.join(d, "build.txt")).read().strip()
    cmd = cmd.replace(" train.c ", " %s " % src).replace("-o train ", "-o %s " % exe)
    if poison:
        cmd = cmd.replace("-std=c11", "-std=c11 -DVCC_POISON -Wall -Wextra -Werror" + (" -DVCC_POISON_SWEEP" if sweep else ""))
    run(cmd, d, shell=True)


def compile_model(vcc, model, d, steps, data_args):
    os.makedirs(d, exist_ok=True)
    printed = run([vcc, os.path.abspath(model), "-o", "train.c", "--plan-json", "plan.json"], d).stdout
    open(os.path.join(d, "build.txt"), "w").write(printed.strip().splitlines()[-1])
    build(d, "train.c", "train", False)
    build(d, "train.c", "train_poison", True)
    build(d, "train.c", "train_sweep", True, sweep=True)
    args = data_args + ["--steps", str(steps), "--lr", "0.01", "--seed", "3"]
    plain = run(["./train"] + args, d).stdout
    for exe in ("train_poison", "train_sweep"):
        p = run(["./" + exe] + args, d, ok=False)
        if p.returncode:
            fail("%s: %s exited %d: %s" % (model, exe, p.returncode, p.stderr[-1500:]))
        if losses(p.stdout) != losses(plain) or len(losses(plain)) != steps:
            fail("%s: losses differ:\n  plain  %s\n  %s %s" % (model, losses(plain), exe, losses(p.stdout)))
    print("%s: %d steps, the poisoned builds' losses equal the plain build's (%s)"
          % (os.path.basename(model), steps, losses(plain)[-1]))
    return args


def plant_overlap(d, args):
    """Move one forward node's output onto a tensor live across that node; the poisoned build must say so."""
    plan = json.load(open(os.path.join(d, "plan.json")))
    src = open(os.path.join(d, "train.c")).read()
    planned = [t for t in plan["tensors"] if t["start"] is not None and t["view_of"] is None]
    for x in sorted(planned, key=lambda t: t["start"]):
        if x["inplace_of"] is not None or x["category"] == "workspace":
            continue
        k = x["start"]
        m = re.search(r"^    /\* %d: (\w+) .*?\n(.*?)(?=^    /\* %d: )" % (k, k + 1), src, re.M | re.S)
        if not m or m.group(1) not in ("Conv", "Relu", "Add", "BatchNormalization"):
            continue
        block = m.group(2)
        if block.count("VCC_F(%d)" % x["offset"]) != 1:
            continue
        # a victim live before and after step k, large enough to take the output, sharing no bytes with it
        victims = [y for y in planned if y["start"] < k < y["end"] and y["bytes"] >= x["bytes"]
                   and y["offset"] != x["offset"] and y["category"] != "workspace"]
        if not victims:
            continue
        y = victims[0]
        edited = src[:m.start(2)] + block.replace("VCC_F(%d)" % x["offset"], "VCC_F(%d)" % y["offset"]) + \
            src[m.end(2):]
        open(os.path.join(d, "planted.c"), "w").write(edited)
        build(d, "planted.c", "planted", False)
        build(d, "planted.c", "planted_poison", True)
        p = run(["./planted"] + args, d, ok=False)
        if p.returncode:
            fail("the plain build of the planted overlap failed (%d), so the test shows nothing: %s"
                 % (p.returncode, p.stderr[-500:]))
        p = run(["./planted_poison"] + args, d, ok=False)
        line = [l for l in p.stderr.splitlines() if l.startswith("VCC_POISON:")]
        if p.returncode == 0 or not line or ("'%s'" % y["name"]) not in line[0]:
            fail("planted overlap (node %d writes '%s' over '%s'): exit %d, stderr %r"
                 % (k, x["name"], y["name"], p.returncode, p.stderr[-800:]))
        # the writer is named, or lies in the range of nodes named
        one = re.search(r"written over by node (\d+) ", line[0])
        rng = re.search(r"written over by one of nodes (\d+) .* to (\d+) ", line[0])
        lo, hi = (int(one.group(1)),) * 2 if one else (int(rng.group(1)), int(rng.group(2))) if rng else (-1, -1)
        if not lo <= k <= hi:
            fail("planted overlap: node %d wrote over '%s', the poisoned build names nodes %d..%d: %s"
                 % (k, y["name"], lo, hi, line[0]))
        print("planted overlap: node %d writes '%s' over '%s'; the poisoned build stops: %s"
              % (k, x["name"], y["name"], line[0]))
        # -DVCC_POISON_SWEEP names the writer at once
        build(d, "planted.c", "planted_sweep", True, sweep=True)
        p = run(["./planted_sweep"] + args, d, ok=False)
        want = "VCC_POISON: step 1, node %d (" % k
        if p.returncode == 0 or not p.stderr.startswith(want) or ("wrote over '%s'" % y["name"]) not in p.stderr:
            fail("planted overlap, -DVCC_POISON_SWEEP: exit %d, stderr %r (expected %r ... wrote over '%s')"
                 % (p.returncode, p.stderr[-800:], want, y["name"]))
        print("with -DVCC_POISON_SWEEP: %s" % p.stderr.splitlines()[0])
        return
    fail("found no node whose output could be moved onto a live tensor")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vcc", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--export", action="append", default=[])
    ap.add_argument("--steps", type=int, default=2)
    a = ap.parse_args()
    vcc = os.path.abspath(a.vcc)
    work = os.path.abspath(a.work)
    if os.path.isdir(work):
        shutil.rmtree(work)
    md = os.path.abspath(a.model_dir)
    cnn = os.path.join(work, "cnn")
    args = compile_model(vcc, os.path.join(md, "model.onnx"), cnn, a.steps,
                         ["--data", os.path.join(md, "data.npy"), "--labels", os.path.join(md, "labels.npy")])
    for name in a.export:
        d = os.path.join(work, name)
        run([sys.executable, os.path.join(HERE, "..", "..", "models", "export_video_nets.py"), "--model", name,
             "--out", d], work)
        compile_model(vcc, os.path.join(d, name + ".onnx"), d, a.steps,
                      ["--data", os.path.join(d, "data.npy"), "--labels", os.path.join(d, "labels.npy")])
    plant_overlap(cnn, args)
    print("PASS")


if __name__ == "__main__":
    main()
