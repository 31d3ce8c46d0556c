#!/usr/bin/python3
"""Cross-checks runtime/vcc_io.h against numpy and the `safetensors` package.

    /usr/bin/python3 tests/runtime/io_check.py OUTDIR CHECKER

1. numpy writes valid .npy files (float32 / int64; format versions 1.0, 2.0, 3.0; 0-d, empty,
   rank 5; and one (2, 3) file of each other element type vcc reads: float64, int8/16/32, uint8/16/32/64,
   bool) whose values follow formulas the C checker recomputes, and .npy files the loader must
   reject (float16, complex, big-endian, Fortran order, structured, object).
2. If safetensors (pinned 0.4.5) is importable, it writes py.safetensors for the C side to read.
3. Runs `CHECKER OUTDIR [--st]`: it checks all of the above, rejects malformed files it crafts
   itself, fuzzes, and writes c.safetensors with vcc_st_save.
4. If safetensors is importable, reads c.safetensors back with it and checks every tensor.
"""

import os
import subprocess
import sys

import numpy as np

OUT, CHECKER = sys.argv[1], sys.argv[2]
os.makedirs(OUT, exist_ok=True)


def p(name):
    return os.path.join(OUT, name)


def f4(shape):
    n = int(np.prod(shape))
    return ((np.arange(n) % 17) * 0.25 - 1.5).astype("<f4").reshape(shape)


def i8(shape):
    n = int(np.prod(shape))
    return (np.arange(n, dtype=np.int64) * 1000000007 - 3).astype("<i8").reshape(shape)


def write(name, arr, version=None):
    with open(p(name), "wb") as f:
        np.lib.format.write_array(f, arr, version=version, allow_pickle=True)


write("f4_v1.npy", f4((2, 3, 4)), (1, 0))
write("i8_v1.npy", i8((5,)), (1, 0))
write("f4_v2.npy", f4((3, 5)), (2, 0))
write("i8_v2.npy", i8((2, 2)), (2, 0))
write("f4_v3.npy", f4((4,)), (3, 0))
write("f4_scalar.npy", f4(()))
write("f4_empty.npy", f4((0, 3)))
write("f4_rank5.npy", f4((1, 2, 3, 2, 2)))
np.save(p("f4_default.npy"), f4((2, 3, 2, 2, 2)))

# typed files: element k of (2, 3) is k * step + base in the type (test_io.c, npy_typed)
for code, step, base in [("<f8", 0.25, -1.5), ("i1", 37, -100), ("<i2", 1000, -3000), ("<i4", 100000, -7),
                         ("u1", 50, 0), ("<u2", 13000, 1), ("<u4", 800000000, 3),
                         ("<u8", 3000000000000000000, 5)]:
    t = np.dtype(code)
    k = np.arange(6, dtype=np.float64 if t.kind == "f" else t.type)
    write("t_%s.npy" % t.str[1:], (k * t.type(step) + t.type(base)).astype(t).reshape(2, 3))
write("t_b1.npy", (np.arange(6) % 3 == 0).reshape(2, 3))
write("bad_f2.npy", np.zeros((2, 3), "<f2"))
write("bad_c8.npy", np.zeros((2, 3), "<c8"))
write("bad_be_f4.npy", np.zeros((2, 3), ">f4"))
write("bad_be_i8.npy", np.zeros((3,), ">i8"))
write("bad_fortran.npy", np.asfortranarray(np.zeros((2, 3), "<f4")))
write("bad_struct.npy", np.zeros((2,), dtype=[("a", "<f4"), ("b", "<i8")]))
write("bad_object.npy", np.array([1, "x"], dtype=object))

try:
    import safetensors
    from safetensors.numpy import load_file, save_file
    have_st = True
    print(f"io_check: safetensors {safetensors.__version__}")
except ImportError:
    have_st = False
    print("io_check: the safetensors package is not installed; skipping the cross-checks with it "
          "(install: /usr/bin/python3 -m pip install --break-system-packages safetensors==0.4.5)")

if have_st:
    save_file({
        "layer1.0.conv1.weight": f4((4, 3, 3, 3, 3)),
        "labels": i8((5,)),
        "half": np.array([1.0, -2.0], dtype="<f2"),
        "scalar": f4(()),
        "empty": f4((0, 2)),
    }, p("py.safetensors"), metadata={"format": "np", "note": "vcc io test"})

args = [CHECKER, OUT] + (["--st"] if have_st else [])
sys.stdout.flush()
rc = subprocess.call(args)
if rc != 0:
    print(f"io_check: {CHECKER} failed with status {rc}")
    sys.exit(1)

if have_st:
    t = load_file(p("c.safetensors"))
    expect = {
        "conv1.weight": f4((4, 3, 3, 3, 3)),
        "fc.bias": f4((5,)),
        "bn1.num_batches_tracked": np.array(7, dtype=np.int64),
        "labels": i8((2, 3)),
        "weird \"name\" \\ \n \u00e9\u6f22": f4((2,)),
        "empty": f4((0,)),
    }
    bad = 0
    if sorted(t.keys()) != sorted(expect.keys()):
        print(f"FAIL c.safetensors keys {sorted(t.keys())} != {sorted(expect.keys())}")
        bad = 1
    for k, v in expect.items():
        if k not in t:
            continue
        got = t[k]
        if got.dtype != v.dtype or got.shape != v.shape or not np.array_equal(got, v):
            print(f"FAIL c.safetensors[{k!r}]: got {got.dtype} {got.shape}, expected {v.dtype} {v.shape}")
            bad = 1
    # An empty file written by vcc_st_save must load too.
    if load_file(p("c_empty.safetensors")) != {}:
        print("FAIL c_empty.safetensors is not empty")
        bad = 1
    if bad:
        sys.exit(1)
    print(f"ok   safetensors {safetensors.__version__} reads the {len(expect)} tensors vcc_st_save wrote "
          "(names, dtypes, shapes, values exact)")
print("io_check: all passed")
