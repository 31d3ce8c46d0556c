#!/usr/bin/python3
"""How long vcc takes to compile a large exported model, and the C compiler to build what it wrote.

    .venv/bin/python bench/compile_time.py                       # torchvision mvit_v2_s, 1x3x16x224x224
    .venv/bin/python bench/compile_time.py --model mvit_v1_b --runs 5

1. Exports the model with models/export_video_nets.py into --work (default build/bench/compile/<model>/),
   once: the export is reused while its export_info.json names the same model (mvit_v2_s's export takes
   about 4 minutes and 5 GB, torch's export-time shape inference off; see that script).
2. Runs `vcc <model>.onnx -o train.c` --runs times (default 3) and prints the median wall time and the
   median CPU time (user + system) of the vcc process, with the node count of the ONNX graph and the
   size of train.c.
3. Runs the build command vcc prints (`cc -O2 -march=native ...`) once, in the same folder, and prints
   its wall and CPU time.

Nothing is asserted: these are measurements, and the machine's other load shows in the wall times (the
CPU times are the steadier figure).
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timed(cmd, cwd, shell=False):
    """(wall seconds, child CPU seconds, stdout) of one run of cmd; exits on failure."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.run(cmd, cwd=cwd, shell=shell, capture_output=True, text=True)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode:
        sys.exit("%s exited %d:\n%s%s" % (cmd if shell else " ".join(cmd), p.returncode, p.stdout[-2000:],
                                          p.stderr[-2000:]))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="mvit_v2_s", help="a models/video_nets.py model")
    ap.add_argument("--vcc", default=os.path.join(ROOT, "build", "vcc"))
    ap.add_argument("--work", help="folder for the export and the program (default build/bench/compile/MODEL)")
    ap.add_argument("--runs", type=int, default=3, help="vcc runs (the median is printed)")
    a = ap.parse_args()
    work = os.path.abspath(a.work or os.path.join(ROOT, "build", "bench", "compile", a.model))
    os.makedirs(work, exist_ok=True)
    onnx_path = os.path.join(work, a.model + ".onnx")
    info = os.path.join(work, "export_info.json")
    cached = os.path.exists(onnx_path) and os.path.exists(info) and json.load(open(info)).get("model") == a.model
    if not cached:
        print("exporting %s into %s ..." % (a.model, work), flush=True)
        timed([sys.executable, os.path.join(ROOT, "models", "export_video_nets.py"), "--model", a.model, "--out",
               work, "--dropout", "0", "--samples", "1"], work)
    import onnx
    nodes = len(onnx.load(onnx_path, load_external_data=False).graph.node)
    walls, cpus, out = [], [], ""
    for _ in range(a.runs):
        w, c, out = timed([os.path.abspath(a.vcc), onnx_path, "-o", "train.c"], work)
        walls.append(w)
        cpus.append(c)
    build = out.strip().splitlines()[-1]
    cw, cc, _ = timed(build, work, shell=True)
    size = os.path.getsize(os.path.join(work, "train.c"))
    print("| model | ONNX nodes | vcc wall s (median of %d) | vcc CPU s | train.c | C build wall s | C build CPU s |"
          % a.runs)
    print("|---|---:|---:|---:|---:|---:|---:|")
    print("| %s | %d | %.2f | %.2f | %.1f MB | %.1f | %.1f |" % (a.model, nodes, statistics.median(walls),
                                                             statistics.median(cpus), size / 1e6, cw, cc))
    print("C build: %s" % build)
    return 0


if __name__ == "__main__":
    sys.exit(main())
