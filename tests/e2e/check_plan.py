"""The memory plan is consistent and safe, checked outside vcc.

    check_plan.py --vcc BUILD/vcc MODEL.onnx [--shape NAME=DIMS ...] [--work DIR]
    check_plan.py --plan plan.json          (a plan JSON as it is, e.g. hand-made; no dump comparison)

Runs `vcc MODEL --dump-ir=memplan --plan-json plan.json` and checks:
  - the dump's per-tensor lines (bytes, live interval, offset) and arena line agree with the JSON;
  - no two buffers that are live at the same step share a byte (tensors joined by inplace_of or view_of
    share one buffer; persistent tensors are live at every step), every offset is 256-byte aligned and inside
    the arena — an overlap check written here, independent of vcc's own checker;
  - within a buffer shared in place (inplace_of), the tensors hold it one after another: each interval
    starts no earlier than the previous holder's ends, so a value read later — above all one the host
    reads after the step (interval end == "steps": graph outputs, the loss) — is never written over;
  - lower_bound_bytes equals this script's own sweep (persistent bytes + the largest sum of live planned
    buffer sizes, each rounded up to 256 bytes, at any step) and arena_bytes >= lower_bound_bytes;
  - saved_floor_bytes (where given) equals persistent bytes + the saved activations' bytes (each rounded
    up to 256), every saved activation is live at one common step (so the floor is a real lower bound:
    defined before the loss, read after it) and the lower bound is no less than it;
  - schedule_peak_bytes (where given) equals the same sweep with each tensor its own buffer (before
    in-place reuse), and lies between the lower bound and given_order_peak_bytes, the peak of the order
    the schedule kept from the graph (the memory-aware order replaces it only when lower).
Prints arena, lower bound, no-reuse sum and their ratios.
"""

import argparse
import json
import os
import re
import subprocess
import sys

ALIGN = 256


def up(x):
    return (x + ALIGN - 1) // ALIGN * ALIGN


def sweep(buffers, steps):
    """The largest sum of the buffers ({"start", "end", "bytes"}, each rounded up to 256) live at one step."""
    live = [0] * (steps + 2)
    for b in buffers:
        live[b["start"]] += up(b["bytes"])
        live[b["end"] + 1] -= up(b["bytes"])
    peak, cur = 0, 0
    for v in live:
        cur += v
        peak = max(peak, cur)
    return peak


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vcc")
    ap.add_argument("model", nargs="?")
    ap.add_argument("--shape", action="append", default=[])
    ap.add_argument("--work", default=".")
    ap.add_argument("--plan", help="check this plan JSON instead of running vcc")
    args = ap.parse_args()
    if args.plan:
        plan, dump = json.load(open(args.plan)), None
    else:
        if not args.vcc or not args.model:
            ap.error("--vcc and MODEL are needed unless --plan is given")
        os.makedirs(args.work, exist_ok=True)
        plan_path = os.path.join(args.work, "plan.json")
        cmd = [args.vcc, args.model, "--dump-ir=memplan", "--plan-json", plan_path]
        lf = os.path.join(os.path.dirname(args.model), "loss.txt")  # tiny_models.py names the model's --loss
        if os.path.exists(lf):
            cmd += ["--loss", open(lf).read().strip()]
        for s in args.shape:
            cmd += ["--shape", s]
        dump = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        plan = json.load(open(plan_path))
    fails = []
    if dump is not None:
        fails += dump_agrees(dump, plan)
    fails += check(plan)
    report(plan, args.plan or args.model, fails)


def dump_agrees(dump, plan):
    """The dump's plan lines and arena line say what the JSON says."""
    fails = []
    lines = {}
    for m in re.finditer(r'^plan "((?:[^"\\]|\\.)*)" (\w+) bytes=(\d+) live=(\S+) offset=(-?\d+)', dump, re.M):
        name = m.group(1).replace('\\"', '"').replace("\\\\", "\\")
        live = None if m.group(4) == "persistent" else tuple(int(v) for v in m.group(4)[1:-1].split(","))
        lines[name] = (m.group(2), int(m.group(3)), live, int(m.group(5)))
    arena = re.search(r"^arena bytes=(\d+) persistent=(\d+) planned=(\d+) lower_bound=(\d+) no_reuse=(\d+)", dump, re.M)
    if not arena or int(arena.group(1)) != plan["arena_bytes"] or int(arena.group(4)) != plan["lower_bound_bytes"]:
        fails.append("arena line of the dump disagrees with the JSON")
    for t in plan["tensors"]:
        d = lines.get(t["name"])
        live = None if t["start"] is None else (t["start"], t["end"])
        if d is None or d != (t["category"], t["bytes"], live, t["offset"]):
            fails.append("tensor %r: dump %s, JSON %s" % (t["name"], d, (t["category"], t["bytes"], live, t["offset"])))
    if len(fails) > 5:
        fails = fails[:5] + ["..."]
    return fails


def check(plan):
    """Overlaps, in-place order, alignment and the lower bound; returns the failures."""
    fails = []
    # --- buffers: follow inplace_of to the tensor that owns the bytes
    by = {t["name"]: t for t in plan["tensors"]}

    def root(name):
        seen = 0
        while True:
            nxt = by[name]["inplace_of"] or by[name]["view_of"]
            if nxt is None or nxt not in by:
                return name
            name = nxt
            seen += 1
            assert seen < len(by), "inplace_of/view_of cycle"

    bufs = {}
    for t in plan["tensors"]:
        r = root(t["name"])
        b = bufs.setdefault(r, {"offset": by[r]["offset"], "bytes": by[r]["bytes"], "start": None, "end": None})
        if t["offset"] != b["offset"]:
            fails.append("tensor %r shares %r's bytes but has another offset" % (t["name"], r))
        if t["start"] is not None:
            b["start"] = t["start"] if b["start"] is None else min(b["start"], t["start"])
            b["end"] = t["end"] if b["end"] is None else max(b["end"], t["end"])
    persistent = {n: b for n, b in bufs.items() if by[n]["start"] is None}
    planned = {n: b for n, b in bufs.items() if by[n]["start"] is not None}
    items = sorted(bufs.items(), key=lambda kv: kv[1]["offset"])
    for n, b in items:
        if b["offset"] % ALIGN or b["offset"] + b["bytes"] > plan["arena_bytes"]:
            fails.append("buffer %r misaligned or outside the arena" % n)
    # sweep in offset order: a pair overlaps in bytes only if the later one starts before the earlier ends
    for i, (na, a) in enumerate(items):
        for nb, b in items[i + 1:]:
            if b["offset"] >= a["offset"] + a["bytes"]:
                break
            both_live = na in persistent or nb in persistent or not (a["end"] < b["start"] or b["end"] < a["start"])
            if both_live:
                fails.append("buffers %r and %r are live together and share bytes" % (na, nb))

    # --- in-place order: the holders of one buffer (views excluded: they are their base's value) in
    # interval order; each must start at or after the previous holder's end, and a holder the host
    # reads after the step (end == steps) can have no successor
    holders = {}
    for t in plan["tensors"]:
        if t["view_of"] is None and t["start"] is not None:
            holders.setdefault(root(t["name"]), []).append(t)
    for r, ts in holders.items():
        ts.sort(key=lambda t: (t["start"], t["end"]))
        for a, b in zip(ts, ts[1:]):
            if b["start"] < a["end"] or (b["start"] == a["end"] and a["end"] >= plan["steps"]):
                what = "read by the host after the step" if a["end"] >= plan["steps"] else "still live"
                fails.append("%r (live [%d,%d]) is written over %r (live [%d,%d]), which is %s"
                             % (b["name"], b["start"], b["end"], a["name"], a["start"], a["end"], what))

    # --- lower bound, computed here
    pers = sum(up(b["bytes"]) for b in persistent.values())
    steps = max((b["end"] for b in planned.values()), default=-1) + 1
    peak = sweep(planned.values(), steps)
    lb = pers + peak
    if lb != plan["lower_bound_bytes"]:
        fails.append("lower bound: vcc says %d, this sweep %d" % (plan["lower_bound_bytes"], lb))
    if plan["arena_bytes"] < lb:
        fails.append("arena below the lower bound")
    # --- the saved floor: every saved activation is live at one step, so no plan of these nodes is below
    # the persistent bytes plus theirs
    fl = plan.get("saved_floor_bytes")
    if fl is not None:
        saved = [t for t in plan["tensors"] if t["category"] == "saved_activation" and t["view_of"] is None]
        own = pers + sum(up(t["bytes"]) for t in saved)
        if fl != own:
            fails.append("saved floor: vcc says %d, this sum %d" % (fl, own))
        if saved and max(t["start"] for t in saved) > min(t["end"] for t in saved):
            fails.append("the saved activations are not all live at one step")
        if lb < fl:
            fails.append("lower bound %d below the saved floor %d" % (lb, fl))
    # --- the schedule's peak: the same sweep with every tensor its own buffer (before in-place reuse;
    # views are their base's bytes), which the memory-aware order may only lower
    sp = plan.get("schedule_peak_bytes")
    if sp is not None:
        speak = sweep([t for t in plan["tensors"] if t["view_of"] is None and t["start"] is not None], steps)
        if sp != pers + speak:
            fails.append("schedule peak: vcc says %d, this sweep %d" % (sp, pers + speak))
        if not lb <= sp <= plan["given_order_peak_bytes"]:
            fails.append("schedule peak %d not between the lower bound %d and the given order's peak %d"
                         % (sp, lb, plan["given_order_peak_bytes"]))
    plan["_summary"] = (len(bufs), steps, lb, pers, peak)
    return fails


def report(plan, what, fails):
    nbufs, steps, lb, pers, peak = plan.get("_summary", (0, 0, 1, 0, 0))
    mib = 1 << 20
    print("%s: %d tensors, %d buffers, %d steps" % (os.path.basename(what), len(plan["tensors"]), nbufs, steps))
    print("  arena        %10.1f MiB" % (plan["arena_bytes"] / mib))
    print("  lower bound  %10.1f MiB   arena/LB      %.4f" % (lb / mib, plan["arena_bytes"] / lb))
    print("  no reuse     %10.1f MiB   arena/noreuse %.4f" % (plan["no_reuse_bytes"] / mib,
                                                             plan["arena_bytes"] / plan["no_reuse_bytes"]))
    print("  persistent   %10.1f MiB   planned peak  %.1f MiB" % (pers / mib, peak / mib))
    if fails:
        print("\n".join("FAIL: " + f for f in fails))
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
