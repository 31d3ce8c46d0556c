"""`vcc plan`, --plan-trace and --plan-svg against the plan JSON and a recomputation made here.

    test_plan_views.py --vcc BUILD/vcc --model MODEL.onnx --work DIR [--attention-model M.onnx | --export-attention NAME]

Runs `vcc plan MODEL --plan-json --plan-trace --plan-svg` and checks:
  - the plan JSON itself with check_plan.py (overlaps, in-place order, its own lower-bound sweep) and
    against the --dump-ir=memplan dump;
  - the report's arena, lower bound, no-reuse and persistent bytes equal the JSON's, the lower bound also
    check_plan.py's sweep, and arena/LB is their ratio;
  - the peak step, the bytes by category at the peak step and without reuse, the tensors live at the peak
    (bytes, offset, category, largest first), the in-place and view counts: all recomputed here from the
    JSON (blocks: a tensor holds its buffer from its first step until the next in-place holder takes it);
  - the trace is trace-event JSON (a traceEvents list; every event has ph, ts, pid, tid, name; dur >= 0;
    thread names for the tracks), one complete event per tensor that holds bytes, its args as in the
    JSON, events on one track never overlap and share one offset, and the counter's peak plus the
    persistent bytes is the lower bound;
  - the SVG parses (xml.etree), has one class="b" rectangle per tensor that holds bytes, whose data
    attributes and geometry agree with the JSON, and no two rectangles that share a step share an
    address (in bytes and in drawn pixels), a title naming arena and lower bound, and a legend of the
    categories drawn;
  - bad output paths (a folder, a path under a regular file, a missing folder, the same file as
    --plan-json) are refused with a non-zero exit and leave no file, partial or temporary, behind;
  - --plan-trace /dev/stdout prints the trace with the report, also through a link to /proc/self/fd/1
    (what /dev/stdout is) with the standard output redirected to a file, which keeps the link a link;
  - under --memory-limit (the arena less one byte): the report's recomputation section lists the
    recomputed clones that `--dump-ir remat` shows, in schedule order, and the arenas of the unlimited
    and the limited plan JSON; without a limit there is no such section;
  - with --attention-model (or --export-attention NAME: models/export_video_nets.py exports that model
    of models/video_nets.py into DIR first): the report counts the FusedAttention nodes of `--dump-ir fuse` and prints
    the arena and lower bound of the --no-fuse-attention plan JSON.
Exits 1 on the first failure with what differs.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check_plan  # noqa: E402

SVG = "{http://www.w3.org/2000/svg}"
CATS = ["parameter", "gradient", "optimizer_state", "saved_activation", "activation", "workspace"]


def fail(msg):
    sys.exit("FAIL: " + msg)


def run(cmd, ok=True):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if ok and p.returncode:
        fail("%s exited %d: %s" % (" ".join(cmd), p.returncode, p.stderr[-2000:]))
    return p


def up(x):
    return (x + 255) // 256 * 256


def blocks_of(plan):
    """One block per tensor holding bytes (views excluded): (tensor, root, x0, x1), steps [x0, x1)."""
    by = {t["name"]: t for t in plan["tensors"]}

    def root(n):
        while (by[n]["inplace_of"] or by[n]["view_of"]) in by:
            n = by[n]["inplace_of"] or by[n]["view_of"]
        return n

    steps = plan["steps"]
    out = []
    for t in plan["tensors"]:
        if t["view_of"] is not None:
            continue
        r = root(t["name"])
        if by[r]["start"] is None:
            out.append([t, r, 0, steps + 1])
        else:
            out.append([t, r, t["start"], t["end"] + 1])
    holders = {}
    for b in out:
        if by[b[1]]["start"] is not None:
            holders.setdefault(b[1], []).append(b)
    for hs in holders.values():
        hs.sort(key=lambda b: b[2])
        for a, b in zip(hs, hs[1:]):
            a[3] = min(a[3], max(b[2], a[2]))
    return out, by


def expected(plan):
    blocks, by = blocks_of(plan)
    steps = plan["steps"]
    load = [0] * (steps + 1)
    for t, r, x0, x1 in blocks:
        if by[r]["start"] is not None:
            for k in range(x0, min(x1, steps + 1)):
                load[k] += up(by[r]["bytes"])
    peak = max(range(steps + 1), key=lambda k: (load[k], -k))
    cat_peak = dict.fromkeys(CATS, 0)
    live = []
    for t, r, x0, x1 in blocks:
        persistent = by[r]["start"] is None
        if persistent or x0 <= peak < x1:
            cat_peak[t["category"]] += up(by[r]["bytes"])
        if not persistent and x0 <= peak < x1:
            live.append(t)
    live.sort(key=lambda t: (-t["bytes"], t["offset"]))
    no_reuse = dict.fromkeys(CATS, 0)
    for t in plan["tensors"]:
        if t["view_of"] is None:
            no_reuse[t["category"]] += up(t["bytes"])
    return dict(blocks=blocks, by=by, load=load, peak=peak, cat_peak=cat_peak, live=live, no_reuse=no_reuse)


def check_report(text, plan, lb_here, e):
    def num(label):
        m = re.search(r"^  %s\s+(\d+) bytes" % label, text, re.M)
        if not m:
            fail("report has no %r line:\n%s" % (label, text))
        return int(m.group(1))

    for label, key in (("arena", "arena_bytes"), ("lower bound", "lower_bound_bytes"), ("no reuse", "no_reuse_bytes"),
                       ("persistent", "persistent_bytes")):
        if num(label) != plan[key]:
            fail("report %s %d, JSON %d" % (label, num(label), plan[key]))
    if num("lower bound") != lb_here:
        fail("report lower bound %d, check_plan.py's sweep %d" % (num("lower bound"), lb_here))
    ratio = float(re.search(r"arena/LB (\d+\.\d+)", text).group(1))
    if abs(ratio - plan["arena_bytes"] / lb_here) > 6e-5:
        fail("arena/LB %.4f, expected %.6f" % (ratio, plan["arena_bytes"] / lb_here))
    m = re.search(r"^peak step (\d+) ", text, re.M)
    if not m or int(m.group(1)) != e["peak"]:
        fail("peak step %s, expected %d" % (m and m.group(1), e["peak"]))
    if e["load"][e["peak"]] + plan["persistent_bytes"] != lb_here:
        fail("live bytes at the peak step + persistent != lower bound")
    total_peak = 0
    for c in CATS:
        m = re.search(r"^  %s\s+(\d+)\s+\S+\s+(\S+)%%\s+(\d+)" % c, text, re.M)
        if not m:
            if e["cat_peak"][c] or e["no_reuse"][c]:
                fail("no %s row in the category table" % c)
            continue
        if int(m.group(1)) != e["cat_peak"][c] or int(m.group(3)) != e["no_reuse"][c]:
            fail("category %s: report %s at peak / %s no reuse, expected %d / %d"
                 % (c, m.group(1), m.group(3), e["cat_peak"][c], e["no_reuse"][c]))
        if abs(float(m.group(2)) - 100.0 * e["cat_peak"][c] / plan["arena_bytes"]) > 0.051:
            fail("category %s: %s%% of the arena" % (c, m.group(2)))
        total_peak += int(m.group(1))
    free = int(re.search(r"^  \(free at peak\)\s+(\d+)", text, re.M).group(1))
    if total_peak + free != plan["arena_bytes"] or total_peak != lb_here:
        fail("categories at peak sum to %d (+ %d free), lower bound %d" % (total_peak, free, lb_here))
    if sum(e["no_reuse"].values()) != plan["no_reuse_bytes"]:
        fail("no-reuse by category sums to %d, JSON %d" % (sum(e["no_reuse"].values()), plan["no_reuse_bytes"]))
    rows = re.findall(r'^\s+(\d+)\s+\S+\s+(\d+) (\w+)\s+(\S+)\s+\[(\d+),(\d+)\]\s+"(.*)" / "(.*)"$', text, re.M)
    m = re.search(r"^tensors live at step \d+: (\d+), (\d+) bytes", text, re.M)
    if int(m.group(1)) != len(e["live"]) or int(m.group(2)) != e["load"][e["peak"]]:
        fail("tensors live at the peak: report %s, %s bytes; expected %d, %d"
             % (m.group(1), m.group(2), len(e["live"]), e["load"][e["peak"]]))
    want = [(t["bytes"], t["offset"], t["category"], t["name"]) for t in e["live"][:30]]
    got = [(int(r[0]), int(r[1]), r[2], r[7]) for r in rows]
    if got != want:
        fail("tensors live at the peak:\n  report   %s\n  expected %s" % (got[:5], want[:5]))
    for r in rows:
        t = e["by"][r[7]]
        if (int(r[4]), int(r[5])) != (t["start"], t["end"]):
            fail("tensor %r: live [%s,%s], JSON [%d,%d]" % (r[7], r[4], r[5], t["start"], t["end"]))
    ninp = sum(1 for t in plan["tensors"] if t["inplace_of"] is not None and t["view_of"] is None)
    inp_bytes = sum(t["bytes"] for t in plan["tensors"] if t["inplace_of"] is not None and t["view_of"] is None)
    nview = sum(1 for t in plan["tensors"] if t["view_of"] is not None)
    m = re.search(r"in place: (\d+) outputs .*: (\d+) bytes", text)
    if (int(m.group(1)), int(m.group(2))) != (ninp, inp_bytes):
        fail("in place: report %s, %s bytes; JSON %d, %d" % (m.group(1), m.group(2), ninp, inp_bytes))
    m = re.search(r"views: (\d+) tensors", text)
    if int(m.group(1)) != nview:
        fail("views: report %s, JSON %d" % (m.group(1), nview))


def check_trace(path, plan, e, lb_here):
    d = json.load(open(path))
    if not isinstance(d, dict) or not isinstance(d.get("traceEvents"), list):
        fail("trace: no traceEvents list")
    evs = d["traceEvents"]
    names = {}
    tracks = {}
    xs = []
    counter = []
    for ev in evs:
        for k in ("ph", "ts", "pid", "tid", "name"):
            if k not in ev:
                fail("trace event without %r: %s" % (k, ev))
        if not isinstance(ev["name"], str) or not isinstance(ev["pid"], int) or not isinstance(ev["tid"], int):
            fail("trace event with a bad name/pid/tid: %s" % ev)
        if not isinstance(ev["ts"], (int, float)) or ev["ts"] < 0:
            fail("trace event with a bad ts: %s" % ev)
        ph = ev["ph"]
        if ph == "M":
            if ev["name"] in ("thread_name", "process_name") and not isinstance(ev.get("args", {}).get("name"), str):
                fail("metadata event without args.name: %s" % ev)
            if ev["name"] == "thread_name":
                names[(ev["pid"], ev["tid"])] = ev["args"]["name"]
        elif ph == "X":
            if not isinstance(ev.get("dur"), (int, float)) or ev["dur"] < 0:
                fail("complete event with a bad dur: %s" % ev)
            a = ev.get("args", {})
            for k in ("name", "bytes", "offset", "category"):
                if k not in a:
                    fail("complete event without args.%s: %s" % (k, ev))
            xs.append(ev)
            tracks.setdefault((ev["pid"], ev["tid"]), []).append(ev)
        elif ph == "C":
            if not all(isinstance(v, (int, float)) for v in ev.get("args", {}).values()) or not ev.get("args"):
                fail("counter event without numeric args: %s" % ev)
            counter.append(ev)
        else:
            fail("unexpected phase %r" % ph)
    want = {b[0]["name"]: b for b in e["blocks"]}
    if len(xs) != len(want) or {x["name"] for x in xs} != set(want):
        fail("trace: %d complete events, %d tensors hold bytes" % (len(xs), len(want)))
    for x in xs:
        t, r, x0, x1 = want[x["name"]]
        a = x["args"]
        if (a["bytes"], a["offset"], a["category"], x["ts"], x["dur"]) != (t["bytes"], t["offset"], t["category"],
                                                                            x0, x1 - x0):
            fail("trace event %r: %s, expected %s" % (x["name"], (a["bytes"], a["offset"], a["category"], x["ts"],
                                                                  x["dur"]), (t["bytes"], t["offset"], t["category"],
                                                                              x0, x1 - x0)))
    for key, evs_ in tracks.items():
        if key not in names:
            fail("track %s has no thread_name" % (key,))
        if len({x["args"]["offset"] for x in evs_}) != 1:
            fail("track %s holds more than one offset" % (key,))
        evs_.sort(key=lambda x: x["ts"])
        for a, b in zip(evs_, evs_[1:]):
            if b["ts"] < a["ts"] + a["dur"]:
                fail("events %r and %r overlap on track %s" % (a["name"], b["name"], key))
    if not counter or max(c["args"]["bytes"] for c in counter) + plan["persistent_bytes"] != lb_here:
        fail("trace counter's peak + persistent bytes is not the lower bound")


def check_svg(path, plan, e, model):
    root = ET.parse(path).getroot()
    if root.tag != SVG + "svg":
        fail("SVG root is %s" % root.tag)
    rects = [r for r in root.iter(SVG + "rect") if r.get("class") == "b"]
    want = {b[0]["name"]: b for b in e["blocks"]}
    if len(rects) != len(want):
        fail("SVG: %d rectangles, %d tensors hold bytes" % (len(rects), len(want)))
    boxes = []
    for r in rects:
        title = r.find(SVG + "title").text
        name = title[:title.rindex(" (", 0, title.index("): "))]
        if name not in want:
            fail("SVG rectangle %r names no tensor of the plan" % name)
        t, _, x0, x1 = want.pop(name)
        d = (int(r.get("data-offset")), int(r.get("data-bytes")), int(r.get("data-x0")), int(r.get("data-x1")))
        if d != (t["offset"], t["bytes"], x0, x1):
            fail("SVG rectangle %r: %s, expected %s" % (name, d, (t["offset"], t["bytes"], x0, x1)))
        px = [float(r.get(k)) for k in ("x", "y", "width", "height")]
        boxes.append((d, px, name))
    # geometry: x grows with the step, y falls with the offset, sizes in proportion
    (d0, p0, _), (d1, p1, _) = min(boxes, key=lambda b: (b[0][2], b[0][0])), max(boxes, key=lambda b: (b[0][3], b[0][0]))
    sx = (p1[0] + p1[2] - p0[0]) / (d1[3] - d0[2]) if d1[3] != d0[2] else 0
    for d, px, name in boxes:
        if abs(px[2] - (d[3] - d[2]) * sx) > 1e-2:
            fail("SVG rectangle %r is %.3f px wide for %d steps" % (name, px[2], d[3] - d[2]))
    # no two rectangles that share a step share bytes, in the data and in the drawing (sweep by step)
    boxes.sort(key=lambda b: b[0][2])
    for i, (d, px, name) in enumerate(boxes):
        for d2, px2, name2 in boxes[i + 1:]:
            if d2[2] >= d[3]:
                break
            if d[0] < d2[0] + d2[1] and d2[0] < d[0] + d[1]:
                fail("SVG rectangles %r and %r share steps and bytes" % (name, name2))
            if px[1] < px2[1] + px2[3] - 1e-3 and px2[1] < px[1] + px[3] - 1e-3 and \
                    px[0] < px2[0] + px2[2] - 1e-3 and px2[0] < px[0] + px[2] - 1e-3:
                fail("SVG rectangles %r and %r overlap on the page" % (name, name2))
    texts = " ".join("".join(t.itertext()) for t in root.iter(SVG + "text"))
    if model not in texts or "arena" not in texts or "lower bound" not in texts:
        fail("SVG title does not name the model, arena and lower bound")
    drawn = {b[0]["category"] for b in e["blocks"]}
    keys = {"".join(t.itertext()) for g in root.iter(SVG + "g") if g.get("class") == "legend" for t in g.iter(SVG + "text")}
    if keys != drawn:
        fail("SVG legend %s, categories drawn %s" % (sorted(keys), sorted(drawn)))


def check_bad_paths(vcc, model, work):
    bad = os.path.join(work, "bad")
    os.makedirs(os.path.join(bad, "folder.svg"), exist_ok=True)
    with open(os.path.join(bad, "file"), "w") as f:
        f.write("x")
    before = sorted(os.listdir(bad))
    cases = [("--plan-svg", os.path.join(bad, "folder.svg")), ("--plan-trace", os.path.join(bad, "folder.svg")),
             ("--plan-svg", os.path.join(bad, "file", "x.svg")), ("--plan-trace", os.path.join(bad, "no", "t.json")),
             ("--plan-trace", os.path.join(bad, "same.json"), "--plan-json", os.path.join(bad, "same.json"))]
    for case in cases:
        p = run([vcc, "plan", model] + list(case), ok=False)
        if p.returncode == 0 or not p.stderr.strip():
            fail("vcc plan %s: exit %d, stderr %r" % (" ".join(case), p.returncode, p.stderr))
        if sorted(os.listdir(bad)) != before or os.listdir(os.path.join(bad, "folder.svg")):
            fail("vcc plan %s left files behind: %s" % (" ".join(case), sorted(os.listdir(bad))))
    if os.geteuid() != 0:  # root writes anywhere: the read-only folder case needs another user
        ro = os.path.join(bad, "ro")
        os.makedirs(ro, exist_ok=True)
        os.chmod(ro, 0o555)
        p = run([vcc, "plan", model, "--plan-svg", os.path.join(ro, "p.svg")], ok=False)
        os.chmod(ro, 0o755)
        if p.returncode == 0 or os.listdir(ro):
            fail("an unwritable folder: exit %d, left %s" % (p.returncode, os.listdir(ro)))


def check_attention(vcc, model, work):
    text = run([vcc, "plan", model]).stdout
    fused = run([vcc, model, "--dump-ir", "fuse"]).stdout
    n = len(re.findall(r"^node \d+ \w+ FusedAttention ", fused, re.M))
    m = re.search(r"fused attention: (\d+) FusedAttention sites", text)
    if not m or int(m.group(1)) != n or n == 0:
        fail("attention model: report %s sites, --dump-ir fuse has %d" % (m and m.group(1), n))
    up_json = os.path.join(work, "unfused.json")
    run([vcc, model, "--no-fuse-attention", "--plan-json", up_json])
    u = json.load(open(up_json))
    m = re.search(r"without fusion \(--no-fuse-attention\): arena (\d+) bytes .*lower bound (\d+) bytes", text)
    if not m or (int(m.group(1)), int(m.group(2))) != (u["arena_bytes"], u["lower_bound_bytes"]):
        fail("attention model: unfused arena/LB %s, the --no-fuse-attention plan %d/%d"
             % (m and m.groups(), u["arena_bytes"], u["lower_bound_bytes"]))


def check_recompute(vcc, model, work, extra, arena):
    """vcc plan under --memory-limit (the unlimited arena less one byte): its recomputation section names
    the nodes --dump-ir remat shows as recomputed clones, in schedule order, and the arenas of the
    unlimited and the limited --plan-json."""
    limit = str(arena - 1)
    text = run([vcc, "plan", model, "--memory-limit", limit] + extra).stdout
    lj = os.path.join(work, "limited.json")
    run([vcc, model, "--memory-limit", limit, "--plan-json", lj] + extra)
    limited = json.load(open(lj))["arena_bytes"]
    dump = run([vcc, model, "--memory-limit", limit, "--dump-ir", "remat"] + extra).stdout
    want = [(int(k), op, name) for k, op, name in
            re.findall(r'^node (\d+) backward (\w+) "([^"]*\.recompute)"', dump, re.M)]
    m = re.search(r"\nremoved by recomputation \(--memory-limit\)\n  (\d+) saved values? recomputed .*?, \+([0-9.]+)%"
                  r" FLOPs.*\n  arena without recomputation (\d+) bytes .*, with it (\d+) bytes", text)
    if not m or not want:
        fail("--memory-limit %s: no recomputation section (%s) or no recomputed node in --dump-ir remat (%d)"
             % (limit, bool(m), len(want)))
    if (int(m.group(3)), int(m.group(4))) != (arena, limited) or limited > arena - 1 or float(m.group(2)) <= 0:
        fail("--memory-limit %s: the report's arenas %s, FLOPs %s%%; the plans' %d and %d"
             % (limit, m.group(3, 4), m.group(2), arena, limited))
    got = [(int(k), op, name) for k, op, name in re.findall(r'^    +(\d+)  (\w+) +"([^"]*)"$', text, re.M)]
    if got != want[:30]:
        fail("--memory-limit %s: the report lists %s, --dump-ir remat has %s" % (limit, got, want))
    plain = run([vcc, "plan", model] + extra).stdout
    if "removed by recomputation" in plain:
        fail("the report without --memory-limit has a recomputation section")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vcc", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--attention-model")
    ap.add_argument("--export-attention", metavar="NAME")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    pj, tj, sv = (os.path.join(a.work, n) for n in ("plan.json", "trace.json", "plan.svg"))
    extra = []
    lf = os.path.join(os.path.dirname(a.model), "loss.txt")  # tiny_models.py names the model's --loss
    if os.path.exists(lf):
        extra = ["--loss", open(lf).read().strip()]
    text = run([a.vcc, "plan", a.model, "--plan-json", pj, "--plan-trace", tj, "--plan-svg", sv] + extra).stdout
    plan = json.load(open(pj))
    dump = run([a.vcc, a.model, "--dump-ir=memplan"] + extra).stdout
    fails = check_plan.dump_agrees(dump, plan) + check_plan.check(plan)
    if fails:
        fail("plan JSON: " + "; ".join(fails))
    lb_here = plan["_summary"][2]
    e = expected(plan)
    check_report(text, plan, lb_here, e)
    check_trace(tj, plan, e, lb_here)
    check_svg(sv, plan, e, a.model)
    # the report and files are the same whichever way the options come
    p = run([a.vcc, "plan", a.model, "--plan-trace=/dev/stdout"] + extra)
    if '"traceEvents"' not in p.stdout or "lower bound" not in p.stdout:
        fail("--plan-trace=/dev/stdout wrote no trace")
    # the same with the standard output redirected to a file, named through a private link to /proc/self/fd/1
    # (what /dev/stdout is): the trace lands in that file with the report, and the link stays a link
    link, cap = os.path.join(a.work, "stdout_link"), os.path.join(a.work, "captured.txt")
    if os.path.lexists(link):
        os.remove(link)
    os.symlink("/proc/self/fd/1", link)
    with open(cap, "w") as f:
        p = subprocess.run([a.vcc, "plan", a.model, "--plan-trace", link] + extra, stdout=f, stderr=subprocess.PIPE,
                           text=True)
    got = open(cap).read()
    if p.returncode != 0 or '"traceEvents"' not in got or "lower bound" not in got or not os.path.islink(link):
        fail("--plan-trace through a link to the redirected standard output: exit %d, link kept %s, %d bytes "
             "captured: %s" % (p.returncode, os.path.islink(link), len(got), p.stderr.strip()))
    check_bad_paths(a.vcc, a.model, a.work)
    check_recompute(a.vcc, a.model, a.work, extra, plan["arena_bytes"])
    if a.export_attention:
        out = os.path.join(a.work, "attention")
        run([sys.executable, os.path.join(HERE, "..", "..", "models", "export_video_nets.py"), "--model",
             a.export_attention, "--out", out])
        a.attention_model = os.path.join(out, a.export_attention + ".onnx")
    if a.attention_model:
        check_attention(a.vcc, a.attention_model, a.work)
    print("PASS: %s: %d tensors hold bytes, peak step %d, arena %d, lower bound %d"
          % (os.path.basename(a.model), len(e["blocks"]), e["peak"], plan["arena_bytes"], lb_here))


if __name__ == "__main__":
    main()
