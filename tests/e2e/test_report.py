"""torchvision's s3d, exported for training: one report of every problem, or a trainer.

    test_report.py --vcc BUILD/vcc --work DIR

s3d (torchvision 0.14, training export, opset 17) holds a BOOL Constant (Dropout's training_mode, which
vcc reads) and the ops MaxPool, Concat, Pad, AveragePool, Dropout and ReduceMean besides Conv, BN and
Relu. Whatever ops of it vcc does not have (vcc --ops lists those it has), `vcc s3d.onnx` must exit 1
with ONE report: one "error:" line naming the file, then every unsupported op type with its count as
the model has it (counted here from the ONNX file itself), a few node names each, every line at most 80
columns; the BOOL constant must not stop the report (it is a supported constant type). Nothing is
written. When vcc has every op of it, the trainer must be written instead (exit 0).
"""

import argparse
import collections
import os
import subprocess
import sys

import onnx


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vcc", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    work = os.path.abspath(args.work)
    os.makedirs(work, exist_ok=True)
    path = os.path.join(work, "s3d.onnx")
    if not os.path.exists(path):
        import torch
        import torchvision
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
        from vcc_torch import export_for_training
        torch.manual_seed(0)
        export_for_training(torchvision.models.video.s3d(), torch.randn(1, 3, 16, 224, 224), path)
    have = {line.split()[0] for line in subprocess.run([os.path.abspath(args.vcc), "--ops"], capture_output=True,
                                                         text=True, check=True).stdout.splitlines()}
    counts = collections.Counter(n.op_type for n in onnx.load(path).graph.node if n.op_type not in have)
    if not counts:
        p = subprocess.run([os.path.abspath(args.vcc), path, "-o", os.path.join(work, "train.c")], capture_output=True,
                           text=True)
        ok = p.returncode == 0 and os.path.exists(os.path.join(work, "train.c"))
        print(p.stdout + p.stderr + ("PASS: vcc has every op of s3d and wrote its trainer" if ok else "FAIL"))
        sys.exit(0 if ok else 1)
    p = subprocess.run([os.path.abspath(args.vcc), path, "-o", os.path.join(work, "train.c")], capture_output=True,
                       text=True)
    print(p.stderr)
    lines = p.stderr.rstrip("\n").split("\n")
    fails = []
    if p.returncode != 1:
        fails.append("exit status %d, expected 1" % p.returncode)
    if sum("error:" in line for line in lines) != 1 or not lines[0].startswith(path):
        fails.append("not one report headed by a line naming the file")
    for op, n in counts.items():
        head = "%s x%d:" % (op, n) if n > 1 else "%s:" % op
        if not any(line.strip().startswith(head) for line in lines):
            fails.append("no line for %s (%d in the model)" % (op, n))
    wide = [line for line in lines[1:] if len(line) > 80]
    if wide:
        fails.append("%d lines over 80 columns" % len(wide))
    if "BOOL" in p.stderr:
        fails.append("the BOOL constant is reported")
    if os.path.exists(os.path.join(work, "train.c")):
        fails.append("train.c written")
    print("unsupported op types in the file: %s" % dict(counts))
    for f in fails:
        print("FAIL: " + f)
    print("FAIL" if fails else "PASS")
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
