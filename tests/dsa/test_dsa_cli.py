"""tests/dsa/test_dsa_cli.py: `vcc dsa` end to end, judged by checks written here (stdlib only).

usage: test_dsa_cli.py --vcc PATH --work DIR

- A seeded random instance: `vcc dsa IN.csv -o OUT.csv` exits 0; OUT.csv has the header
  id,lower,upper,size,offset and the input's rows in order; no two buffers whose half-open
  lifetimes intersect share a byte; the printed arena is max(offset + size) and the printed LB is
  the max load computed here.
- A hand instance with optimum 4 (three buffers of 2 bytes, each overlapping the next): fits
  --capacity 4 (exit 0, plan checked, top <= 4); --capacity 3 exits 1, writes nothing and leaves
  an existing output file as it was.
- Bad input (negative size, upper <= lower, a number too large, a missing column, text, no size
  column, an empty file, sizes whose sum overflows 64 bits, a missing file, bad options): exit 2, a message naming the file (and the
  line for row errors), no output file, no temporary file left behind.
- A header after a UTF-8 byte order mark keeps its id column.
- Outputs: -o never over the input (also spelled with "./"); into a FIFO and into the standard output
  (through a link to /proc/self/fd/1, redirected to a file) directly, the FIFO and the link kept; a
  standard output that cannot be written (/dev/full) is an error (exit 2) and -o writes nothing.
"""
import argparse
import os
import random
import re
import stat
import subprocess
import sys

failures = 0


def expect(cond, msg):
    global failures
    if not cond:
        failures += 1
        print("FAILED:", msg, file=sys.stderr)


def run(vcc, *args):
    p = subprocess.run([vcc, "dsa", *args], capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def read_rows(path):
    with open(path) as f:
        lines = [l.rstrip("\n") for l in f if l.strip()]
    return lines[0].split(","), [l.split(",") for l in lines[1:]]


def max_load(bufs):
    events = []
    for lo, up, size in bufs:
        events.append((lo, 1, size))
        events.append((up, 0, -size))  # at equal times, ends (0) before starts (1)
    load = best = 0
    for _, _, d in sorted(events):
        load += d
        best = max(best, load)
    return best


def check_plan(bufs, offs, what):
    for i in range(len(bufs)):
        expect(offs[i] >= 0, f"{what}: negative offset")
        for j in range(i + 1, len(bufs)):
            (l1, u1, s1), (l2, u2, s2) = bufs[i], bufs[j]
            if l1 < u2 and l2 < u1 and s1 and s2:
                expect(offs[i] + s1 <= offs[j] or offs[j] + s2 <= offs[i],
                       f"{what}: buffers {i} and {j} overlap")
    return max([o + s for o, (_, _, s) in zip(offs, bufs)] or [0])


def field(out, name):
    m = re.search(rf"^\s*{re.escape(name)}\s+(\d+)", out, re.M)
    return int(m.group(1)) if m else None


def check_outputs(vcc, w):
    """-o is written as vcc's plan files are: never over the input (also spelled another way), through
    to a FIFO and to this process's standard output (a link to /proc/self/fd/1, what /dev/stdout is,
    with stdout redirected to a file), never replacing the FIFO or the link."""
    solution = "id,lower,upper,size,offset\n"
    write(w("in.csv"), "id,lower,upper,size\n0,0,2,4\n1,1,3,4\n")
    rc, out, err = run(vcc, w("in.csv"), "-o", os.path.join(os.path.dirname(w("in.csv")), ".", "in.csv"))
    expect(rc == 2 and "overwrite the input" in err, f"-o the input spelled with ./: exit {rc}: {err}")
    expect(open(w("in.csv")).read().startswith("id,lower,upper,size\n0,"), "-o the input: the input changed")
    fifo = w("out.fifo")
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", fifo], stdout=subprocess.PIPE, text=True)
    rc, out, err = run(vcc, w("in.csv"), "-o", fifo)
    try:
        got = reader.communicate(timeout=60)[0]
    except subprocess.TimeoutExpired:  # nothing was written into the FIFO
        reader.kill()
        got = reader.communicate()[0]
    expect(rc == 0 and got.startswith(solution), f"-o a FIFO: exit {rc}, read {got!r}: {err}")
    expect(os.path.exists(fifo) and stat.S_ISFIFO(os.lstat(fifo).st_mode), "-o a FIFO: the FIFO was replaced")
    link = w("stdout_link")
    os.symlink("/proc/self/fd/1", link)
    with open(w("captured.txt"), "w") as cap:
        p = subprocess.run([vcc, "dsa", w("in.csv"), "-o", link], stdout=cap, stderr=subprocess.PIPE, text=True,
                           timeout=300)
    got = open(w("captured.txt")).read()
    expect(p.returncode == 0 and solution in got and "arena" in got,
           f"-o the standard output redirected to a file: exit {p.returncode}, captured {got!r}: {p.stderr}")
    expect(os.path.islink(link), "-o the standard output: the link to /proc/self/fd/1 was replaced")
    if os.path.exists("/dev/full"):  # a report that cannot be written: exit 2 and no plan file
        with open("/dev/full", "w") as full:
            p = subprocess.run([vcc, "dsa", w("in.csv"), "-o", w("full_out.csv")], stdout=full,
                               stderr=subprocess.PIPE, text=True, timeout=300)
        left = [f for f in os.listdir(os.path.dirname(w("in.csv"))) if f.startswith("full_out")]
        expect(p.returncode == 2 and "standard output" in p.stderr and not left,
               f"standard output on /dev/full: exit {p.returncode}, left {left}: {p.stderr}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vcc", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    w = lambda name: os.path.join(a.work, name)
    for name in os.listdir(a.work):
        os.remove(w(name))

    # 1. a random instance
    rng = random.Random(2024)
    bufs = []
    for _ in range(60):
        lo = rng.randrange(0, 100)
        bufs.append((lo, lo + rng.randrange(1, 30), rng.randrange(0, 5000)))
    write(w("rand.csv"), "id,lower,upper,size\n" + "".join(
        f"b{i},{lo},{up},{s}\n" for i, (lo, up, s) in enumerate(bufs)))
    rc, out, err = run(a.vcc, w("rand.csv"), "-o", w("rand.out.csv"))
    expect(rc == 0, f"random: exit {rc}: {err}")
    header, rows = read_rows(w("rand.out.csv"))
    expect(header == ["id", "lower", "upper", "size", "offset"], f"random: header {header}")
    expect([r[:4] for r in rows] == [[f"b{i}", str(lo), str(up), str(s)]
                                     for i, (lo, up, s) in enumerate(bufs)], "random: rows differ")
    top = check_plan(bufs, [int(r[4]) for r in rows], "random")
    expect(field(out, "arena") == top, f"random: printed arena {field(out, 'arena')}, top {top}")
    expect(field(out, "LB") == max_load(bufs), f"random: printed LB {field(out, 'LB')}, "
           f"max load {max_load(bufs)}")

    # 2. a hand instance with optimum 4
    hand = [(0, 2, 2), (1, 3, 2), (2, 4, 2)]
    write(w("hand.csv"), "id,lower,upper,size\n0,0,2,2\n1,1,3,2\n2,2,4,2\n")
    rc, out, err = run(a.vcc, w("hand.csv"), "--capacity", "4", "-o", w("hand.out.csv"))
    expect(rc == 0 and "fits yes" in out, f"hand at 4: exit {rc}: {out} {err}")
    _, rows = read_rows(w("hand.out.csv"))
    expect(check_plan(hand, [int(r[4]) for r in rows], "hand") <= 4, "hand: above 4")
    write(w("keep.csv"), "untouched\n")
    rc, out, err = run(a.vcc, w("hand.csv"), "--capacity=3", "-o", w("keep.csv"))
    expect(rc == 1 and "fits no" in out, f"hand at 3: exit {rc}: {out}")
    expect(open(w("keep.csv")).read() == "untouched\n", "hand at 3: output file changed")

    # a header after a UTF-8 byte order mark (spreadsheet CSV): its id column is kept
    write(w("bom.csv"), "\ufeffid,lower,upper,size\nfirst,0,2,2\nsecond,1,3,2\n")
    rc, out, err = run(a.vcc, w("bom.csv"), "-o", w("bom.out.csv"))
    header, rows = read_rows(w("bom.out.csv")) if rc == 0 else ([], [])
    expect(rc == 0 and header[:1] == ["id"] and [r[0] for r in rows] == ["first", "second"],
           f"byte order mark: exit {rc}, header {header}, rows {rows}: {err}")

    # 3. bad input
    bad = {
        "neg.csv": ("id,lower,upper,size\n0,0,5,-3\n", ":2:"),
        "empty_life.csv": ("id,lower,upper,size\n0,0,5,3\n1,5,5,3\n", ":3:"),
        "huge.csv": ("id,lower,upper,size\n0,0,5,99999999999999999999999\n", ":2:"),
        "huge_time.csv": ("id,lower,upper,size\n0,0,9223372036854775808,1\n", ":2:"),
        "short.csv": ("id,lower,upper,size\n0,0,5\n", ":2:"),
        "long.csv": ("id,lower,upper,size\n0,0,5,3,4\n", ":2:"),
        "text.csv": ("id,lower,upper,size\n0,zero,5,3\n", ":2:"),
        "nosize.csv": ("id,lower,upper\n0,0,5\n", ":1:"),
        "empty.csv": ("", ""),
        "align.csv": ("id,lower,upper,size,alignment\n0,0,5,3,3\n", ":2:"),
        # sizes whose sum passes 64-bit offsets: the input's fault (status 2), not an internal error (3)
        "overflow.csv": ("id,lower,upper,size\n0,0,2,18446744073709551615\n1,0,2,1\n", ""),
    }
    for name, (text, where) in bad.items():
        write(w(name), text)
        rc, out, err = run(a.vcc, w(name), "-o", w(name + ".out"))
        expect(rc == 2, f"{name}: exit {rc}, expected 2")
        expect(w(name) + where in err, f"{name}: message {err!r} does not name {name}{where}")
        expect(not os.path.exists(w(name + ".out")), f"{name}: an output was written")
    rc, out, err = run(a.vcc, w("missing.csv"))
    expect(rc == 2 and "missing.csv" in err, f"missing file: exit {rc}: {err}")
    for args in (["--capacity", "x", w("hand.csv")], ["--bogus", w("hand.csv")], [],
                 [w("hand.csv"), "-o", w("hand.csv")]):
        rc, out, err = run(a.vcc, *args)
        expect(rc == 2 and err.startswith("vcc dsa:"), f"usage {args}: exit {rc}: {err}")
    rc, out, err = run(a.vcc, "--help")
    expect(rc == 0 and "usage: vcc dsa" in out, "--help")
    check_outputs(a.vcc, w)
    left = [n for n in os.listdir(a.work) if ".tmp." in n]
    expect(not left, f"temporary files left: {left}")

    if failures:
        print(f"{failures} check(s) failed", file=sys.stderr)
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
