#!/usr/bin/python3
"""Every tensor pointer in a CUDA bf16 trainer's step has the element type its plan gives the bytes there.

    check_bf16_pointers.py --vcc build/vcc --model M.onnx --work DIR [vcc options...]

Compiles `vcc M.onnx --precision bf16 -o t.cu --plan-json plan.json` and reads the step code node by
node (the `/* k: Op 'name' */` comment before each node's code). Each `VCC_B(off)` (a __nv_bfloat16
pointer) and `VCC_F(off)` (a float one) must point into a tensor the plan places over that byte at that
step (an offset from its start up to its end, views included), on one of its element boundaries (2 bytes
for a bfloat16 value, its dtype's size otherwise), and its type must be that tensor's: VCC_B for a value
the plan marks "bf16", VCC_F for any other. A bfloat16 value reached through a float pointer (or sized at
4 bytes per element, as a Concat part's offset) fails. The plan JSON is vcc's own account of its layout,
and the code another account of it: the two have to agree. Exits 1 on a mismatch.
"""

import argparse
import json
import os
import re
import subprocess
import sys

SIZES = {"f32": 4, "i64": 8, "bool": 1, "f64": 8, "i32": 4}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vcc", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--work", required=True)
    args, extra = ap.parse_known_args()
    os.makedirs(args.work, exist_ok=True)
    p = subprocess.run([os.path.abspath(args.vcc), os.path.abspath(args.model), "--precision", "bf16", "-o", "t.cu",
                        "--plan-json", "plan.json"] + extra, cwd=args.work, capture_output=True, text=True)
    if p.returncode:
        sys.exit("FAIL: vcc exited %d: %s" % (p.returncode, p.stderr.strip()))
    plan = json.load(open(os.path.join(args.work, "plan.json")))["tensors"]
    placed = [t for t in plan if t["offset"] is not None and t["offset"] >= 0]
    head = re.compile(r"^    /\* (\d+): (\S+) '([^']*)' \*/")
    ptr = re.compile(r"VCC_([BF])\((\d+)\)")
    node, checked, bad = None, 0, []
    for line in open(os.path.join(args.work, "t.cu")):
        m = head.match(line)
        if m:
            node = (int(m.group(1)), m.group(2), m.group(3))
            continue
        if node is None or line.startswith("}"):
            node = None
            continue
        for kind, off in ptr.findall(line):
            off, k = int(off), node[0]
            checked += 1
            live = [t for t in placed if t["offset"] <= off < t["offset"] + max(t["bytes"], 1) and
                    (t["start"] is None or t["start"] <= k <= t["end"])]
            ok = False
            for t in live:
                size = 2 if t["bf16"] else t["bytes"] // max(t["elements"], 1) if t["elements"] else 4
                if (off - t["offset"]) % max(size, 1) == 0 and (kind == "B") == bool(t["bf16"]):
                    ok = True
            if not ok:
                bad.append("node %d (%s '%s'): VCC_%s(%d) against %s" % (
                    k, node[1], node[2], kind, off,
                    [(t["name"], "bf16" if t["bf16"] else "f32", t["offset"]) for t in live][:3] or "no live tensor"))
    print("%s: %d tensor pointers in the step checked against the plan, %d mismatches" % (
        os.path.basename(args.model), checked, len(bad)))
    for b in bad[:10]:
        print("  " + b)
    if bad or not checked:
        sys.exit("FAIL: pointers disagree with the plan" if bad else "FAIL: no pointer found in the step")
    print("OK")


if __name__ == "__main__":
    main()
