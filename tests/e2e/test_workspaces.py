"""Conv workspaces shrunk where they set the peak (vcc's default) against fixed ones (--workspace-limit).

    test_workspaces.py --vcc BUILD/vcc --model NAME --work DIR [--shape NxCxTxHxW]

models/export_video_nets.py exports the model, vcc writes the plan twice with --plan-json: by default, and
with --workspace-limit 16MiB (the default's size, fixed for every conv). Each convolution's geometry comes
from the ONNX file itself (onnx's shape inference): rows = (C / group) * prod(kernel) of its im2col
columns, positions = prod(output spatial dims). Checked, from the two JSON files alone:
  precondition  a workspace is live at the fixed plan's peak step (else there is nothing to shrink and
                the test would prove nothing)
  columns       every workspace of the default plan is a whole number of its conv's im2col columns (bytes
                a multiple of 4 * rows), at least min(positions, 64) of them, and no larger than the fixed
                plan's
  peak          the default plan's peak (persistent bytes plus the largest sum of live buffers, each rounded
                up to 256 and live over its tensors' intervals, in place ones included, swept here) is lower than the fixed plan's by at least 0.5% of the fixed one
  report        "workspace_shrunk_bytes" is the sum of the bytes the default plan's workspaces have less
The numbers the shrunk chunks compute are checked against PyTorch by test_model_steps.py on the same models
(e2e_model_steps_*), which compile with the defaults. Prints the figures; exits 1 on a failure.
"""

import argparse
import json
import os
import subprocess
import sys

import onnx
from onnx import shape_inference

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS_DIR = os.path.join(HERE, "..", "..", "models")
ALIGN = 256  # VCC_ARENA_ALIGN
MIN_COLS = 64  # VCC_WORKSPACE_MIN_COLS


def up(b):
    return (b + ALIGN - 1) // ALIGN * ALIGN


def run(cmd, cwd):
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if p.returncode:
        sys.exit("FAIL: %s exited %d\n%s%s" % (cmd, p.returncode, p.stdout[-3000:], p.stderr[-3000:]))
    return p.stdout


def conv_geometry(path):
    """{node name: (rows, positions)} for every Conv of the model, from its weights and inferred shapes."""
    m = shape_inference.infer_shapes(onnx.load(path))
    g = m.graph
    dims = {}
    for v in list(g.value_info) + list(g.output) + list(g.input):
        dims[v.name] = [d.dim_value for d in v.type.tensor_type.shape.dim]
    for t in g.initializer:
        dims[t.name] = list(t.dims)
    out = {}
    for n in g.node:
        if n.op_type != "Conv":
            continue
        w = dims[n.input[1]]
        rows = w[1]
        for k in w[2:]:
            rows *= k
        pos = 1
        for k in dims[n.output[0]][2:]:
            pos *= k
        out[n.name] = (rows, pos)
    return out


def peak(plan):
    """(persistent + largest live sum, the step): every buffer (a tensor that is no view and took no other's
    bytes in place) live over the union of its tensors' intervals, swept over the schedule."""
    tensors = {t["name"]: t for t in plan["tensors"]}

    def root(t):
        while t["inplace_of"] is not None:
            t = tensors[t["inplace_of"]]
        return t

    span, pers = {}, 0
    for t in plan["tensors"]:
        if t["view_of"] is not None:
            continue
        if t["start"] is None:
            pers += up(t["bytes"]) if t["inplace_of"] is None else 0
            continue
        r = root(t)["name"]
        s, e = span.get(r, (t["start"], t["end"]))
        span[r] = (min(s, t["start"]), max(e, t["end"]))
    live = [0] * (plan["steps"] + 2)
    for r, (s, e) in span.items():
        live[s] += up(tensors[r]["bytes"])
        live[e + 1] -= up(tensors[r]["bytes"])
    best, at, cur = 0, 0, 0
    for s, v in enumerate(live):
        cur += v
        if cur > best:
            best, at = cur, s
    return pers + best, at


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vcc", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--shape", help="the export's batch shape (default: video_nets.DEFAULT_SHAPES)")
    a = ap.parse_args()
    d = os.path.abspath(a.work)
    os.makedirs(d, exist_ok=True)
    run([sys.executable, os.path.join(MODELS_DIR, "export_video_nets.py"), "--model", a.model, "--out", d,
         "--dropout", "0", "--num-classes", "5"] + (["--shape", a.shape] if a.shape else []), d)
    onnx_path = os.path.join(d, a.model + ".onnx")
    plans = {}
    for tag, extra in (("default", []), ("fixed", ["--workspace-limit", "16MiB"])):
        run([os.path.abspath(a.vcc), onnx_path, "--plan-json", "plan_%s.json" % tag] + extra, d)
        with open(os.path.join(d, "plan_%s.json" % tag)) as f:
            plans[tag] = json.load(f)
    geo = conv_geometry(onnx_path)
    fails = []

    def ws_of(plan):
        return {t["name"]: t for t in plan["tensors"] if t["category"] == "workspace" and t["name"].endswith(".ws")}

    ws_d, ws_f = ws_of(plans["default"]), ws_of(plans["fixed"])
    pf, at_f = peak(plans["fixed"])
    pd, _ = peak(plans["default"])
    at_peak = [n for n, t in ws_f.items() if t["start"] is not None and t["start"] <= at_f <= t["end"]]
    print("%s: fixed peak %d at step %d (workspaces live there: %s); default peak %d (%.2f%% lower)"
          % (a.model, pf, at_f, ", ".join(at_peak) or "none", pd, 100.0 * (pf - pd) / pf))
    if not at_peak:
        fails.append("precondition: no workspace is live at the fixed plan's peak step %d" % at_f)
    if (pf - pd) * 200 < pf:
        fails.append("peak: the default plan's %d is not 0.5%% below the fixed plan's %d" % (pd, pf))
    less, shrunk = 0, 0
    for name, t in sorted(ws_d.items()):
        conv = name[:-3]
        for suffix in (".grad_data", ".grad_filter"):
            if conv.endswith(suffix):
                conv = conv[: -len(suffix)]
        if conv not in geo:
            fails.append("%s: no Conv named %s in the model" % (name, conv))
            continue
        rows, pos = geo[conv]
        fixed = ws_f.get(name)
        if fixed is None:
            fails.append("%s: not in the fixed plan" % name)
            continue
        b = t["bytes"]
        if b % (4 * rows) or b // (4 * rows) < min(pos, MIN_COLS) or b > fixed["bytes"]:
            fails.append("%s: %d bytes is not a whole number of columns of %d rows from min(%d, %d) up to the "
                         "fixed %d bytes" % (name, b, rows, pos, MIN_COLS, fixed["bytes"]))
        if b < fixed["bytes"]:
            shrunk += 1
            less += fixed["bytes"] - b
            print("  %-50s %9d -> %9d bytes (%d -> %d of %d columns)"
                  % (name, fixed["bytes"], b, fixed["bytes"] // (4 * rows), b // (4 * rows), pos))
    rep = plans["default"].get("workspace_shrunk_bytes")
    if rep != less:
        fails.append("report: workspace_shrunk_bytes %s, the workspaces have %d bytes less" % (rep, less))
    print("%d workspaces shrunk, %d bytes less; arena %d (default) against %d (fixed)"
          % (shrunk, less, plans["default"]["arena_bytes"], plans["fixed"]["arena_bytes"]))
    for f in fails:
        print("FAIL " + f)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
