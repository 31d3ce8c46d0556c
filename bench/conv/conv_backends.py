"""Time one 3-D convolution's forward, backward-data and backward-filter on the CPU five ways: vcc's
kernels (im2col + OpenBLAS sgemm, runtime/cpu/conv.h); the same kernels built with -DVCC_CONV_DNNL, i.e.
through oneDNN's C API (runtime/cpu/conv_dnnl.h), with format_tag any (blocked layouts, the reorders
from and to the plain tensors timed with the pass) and with -DVCC_DNNL_PLAIN (the plain layouts, which
oneDNN runs through its gemm convolution); PyTorch with oneDNN (mkldnn) and PyTorch without it (its own
vol2col + BLAS path). Same threads for all (OPENBLAS_NUM_THREADS, OMP_NUM_THREADS, torch threads).

    /usr/bin/python3 bench/conv/conv_backends.py [--threads 2] [--reps 5] [--no-native]

Shapes: the convolutions of torchvision's r3d_18 at input (2, 3, 8, 112, 112): the stem, one 3x3x3
conv of each stage and layer2's strided conv and downsample. Prints per shape and pass the median
milliseconds, the ratios blocked-oneDNN/PyTorch and vcc/PyTorch, and the workspace oneDNN needed
(MiB) and the implementation it picked.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
# N, C, K, (T, H, W), (kT, kH, kW), (sT, sH, sW), (pT, pH, pW)
SHAPES = [
    ("stem 3->64 k3x7x7 s1x2x2", 2, 3, 64, (8, 112, 112), (3, 7, 7), (1, 2, 2), (1, 3, 3)),
    ("layer1 64->64 k3", 2, 64, 64, (8, 56, 56), (3, 3, 3), (1, 1, 1), (1, 1, 1)),
    ("layer2.0 64->128 k3 s2", 2, 64, 128, (8, 56, 56), (3, 3, 3), (2, 2, 2), (1, 1, 1)),
    ("layer2.0 down 64->128 k1 s2", 2, 64, 128, (8, 56, 56), (1, 1, 1), (2, 2, 2), (0, 0, 0)),
    ("layer2 128->128 k3", 2, 128, 128, (4, 28, 28), (3, 3, 3), (1, 1, 1), (1, 1, 1)),
    ("layer3 256->256 k3", 2, 256, 256, (2, 14, 14), (3, 3, 3), (1, 1, 1), (1, 1, 1)),
    ("layer4 512->512 k3", 2, 512, 512, (1, 7, 7), (3, 3, 3), (1, 1, 1), (1, 1, 1)),
]


def torch_times(shape, reps, mkldnn):
    """PyTorch's median milliseconds per pass: fwd (F.conv3d), bwd_data and bwd_filter
    (aten.convolution_backward with one output each, the op autograd calls)."""
    _, n, c, k, ins, ks, st, pd = shape
    torch.backends.mkldnn.enabled = mkldnn
    x = torch.randn(n, c, *ins)
    w = torch.randn(k, c, *ks)
    y = F.conv3d(x, w, stride=st, padding=pd)
    dy = torch.randn_like(y)
    conv_bwd = torch.ops.aten.convolution_backward
    calls = {
        "fwd": lambda: F.conv3d(x, w, stride=st, padding=pd),
        "bwd_data": lambda: conv_bwd(dy, x, w, None, st, pd, (1, 1, 1), False, (0, 0, 0), 1, (True, False, False)),
        "bwd_filter": lambda: conv_bwd(dy, x, w, None, st, pd, (1, 1, 1), False, (0, 0, 0), 1, (False, True, False)),
    }
    res = {}
    with torch.no_grad():
        for key, fn in calls.items():
            t = []
            for r in range(reps + 1):
                t0 = time.perf_counter()
                fn()
                t1 = time.perf_counter()
                if r:
                    t.append(1e3 * (t1 - t0))
            res[key] = statistics.median(t)
    return res


def build(exe, defines, libs):
    subprocess.run(["cc", "-O2", "-march=native", "-std=c11", *defines, os.path.join(HERE, "conv_vcc.c"), "-o", exe,
                    *libs, "-lopenblas", "-lm"], check=True)


def vcc_times(exe, shape, reps, env):
    """conv_vcc's medians per pass, and (oneDNN builds) each pass's workspace bytes and implementation."""
    name, n, c, k, ins, ks, st, pd = shape
    argv = [exe] + [str(v) for v in (n, c, k, *ins, *ks, *st, *pd, reps)]
    lines = subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout.splitlines()
    out = lines[0].split()
    res = {"fwd": float(out[2]), "bwd_data": float(out[4]), "bwd_filter": float(out[6])}
    if len(lines) > 1:  # "dnnl ws A B C impl X Y Z"
        f = lines[1].split()
        for i, p in enumerate(PASSES):
            res["ws_" + p] = int(f[2 + i])
            res["impl_" + p] = f[6 + i]
    return res


PASSES = ("fwd", "bwd_data", "bwd_filter")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--no-native", action="store_true", help="skip PyTorch without oneDNN")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    tmp = tempfile.mkdtemp()
    exes = {"vcc": os.path.join(tmp, "conv_vcc"), "blocked": os.path.join(tmp, "conv_dnnl_blocked"),
            "plain": os.path.join(tmp, "conv_dnnl_plain")}
    build(exes["vcc"], [], [])
    build(exes["blocked"], ["-DVCC_CONV_DNNL"], ["-ldnnl"])
    build(exes["plain"], ["-DVCC_CONV_DNNL", "-DVCC_DNNL_PLAIN"], ["-ldnnl"])
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(args.threads), OMP_NUM_THREADS=str(args.threads))
    print("threads %d, median of %d runs, milliseconds; vcc = im2col + OpenBLAS; dnnl-blk / dnnl-plain = vcc's "
          "kernels through oneDNN's C API (blocked layouts with reorders, timed with them / plain layouts); "
          "torch = PyTorch with oneDNN; ws = oneDNN's workspace MiB (blocked copies + scratchpad)"
          % (args.threads, args.reps))
    cols = ("vcc", "dnnl-blk", "dnnl-plain", "torch") + (() if args.no_native else ("no-1DNN",))
    print("%-26s %-10s" % ("conv", "pass") + "".join("%11s" % c for c in cols) +
          "%10s %10s %8s %8s  %s" % ("blk/torch", "vcc/torch", "ws-blk", "ws-plain", "impl blk / plain"))
    for shape in SHAPES:
        vcc = vcc_times(exes["vcc"], shape, args.reps, env)
        blk = vcc_times(exes["blocked"], shape, args.reps, env)
        pln = vcc_times(exes["plain"], shape, args.reps, env)
        dnn = torch_times(shape, args.reps, True)
        ref = None if args.no_native else torch_times(shape, args.reps, False)
        for p in PASSES:
            vals = [vcc[p], blk[p], pln[p], dnn[p]] + ([] if ref is None else [ref[p]])
            print("%-26s %-10s" % (shape[0], p) + "".join("%11.1f" % v for v in vals) +
                  "%10.2f %10.2f %8.1f %8.1f  %s / %s" % (blk[p] / dnn[p], vcc[p] / dnn[p], blk["ws_" + p] / 2**20,
                                                         pln["ws_" + p] / 2**20, blk["impl_" + p], pln["impl_" + p]))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
