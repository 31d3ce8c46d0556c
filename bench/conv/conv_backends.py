"""Time one 3-D convolution's forward, backward-data and backward-filter on the CPU three ways:
vcc's kernels (im2col + OpenBLAS sgemm, runtime/vcc_cpu.h), PyTorch with oneDNN (mkldnn) and PyTorch
without it (its own vol2col + BLAS path). Same threads for all (OPENBLAS_NUM_THREADS / torch threads).

    /usr/bin/python3 bench/conv/conv_backends.py [--threads 2] [--reps 5]

Shapes: the convolutions of torchvision's r3d_18 at input (2, 3, 8, 112, 112): the stem and one 3x3x3
conv of each stage. Prints per shape and pass the median milliseconds and the ratios vcc/oneDNN and
vcc/PyTorch-without-oneDNN.
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
    ("layer2 128->128 k3", 2, 128, 128, (4, 28, 28), (3, 3, 3), (1, 1, 1), (1, 1, 1)),
    ("layer3 256->256 k3", 2, 256, 256, (2, 14, 14), (3, 3, 3), (1, 1, 1), (1, 1, 1)),
    ("layer4 512->512 k3", 2, 512, 512, (1, 7, 7), (3, 3, 3), (1, 1, 1), (1, 1, 1)),
]


def torch_times(shape, reps, mkldnn):
    _, n, c, k, ins, ks, st, pd = shape
    torch.backends.mkldnn.enabled = mkldnn
    x = torch.randn(n, c, *ins, requires_grad=True)
    w = torch.randn(k, c, *ks, requires_grad=True)
    res = {"fwd": [], "bwd": []}
    for r in range(reps + 1):
        t0 = time.perf_counter()
        y = F.conv3d(x, w, stride=st, padding=pd)
        t1 = time.perf_counter()
        y.backward(torch.ones_like(y))
        t2 = time.perf_counter()
        x.grad = w.grad = None
        if r:
            res["fwd"].append(1e3 * (t1 - t0))
            res["bwd"].append(1e3 * (t2 - t1))
    return {key: statistics.median(v) for key, v in res.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    exe = os.path.join(tempfile.mkdtemp(), "conv_vcc")
    subprocess.run(["cc", "-O2", "-march=native", "-std=c11", os.path.join(HERE, "conv_vcc.c"), "-o", exe,
                    "-lopenblas", "-lm"], check=True)
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(args.threads), OMP_NUM_THREADS=str(args.threads))
    print("threads %d, median of %d runs, milliseconds (backward = data + filter)" % (args.threads, args.reps))
    print("%-26s %-4s %9s %9s %9s %9s %9s" % ("conv", "pass", "vcc", "oneDNN", "no-oneDNN", "vcc/1DNN", "vcc/noDNN"))
    for shape in SHAPES:
        name, n, c, k, ins, ks, st, pd = shape
        argv = [exe] + [str(v) for v in (n, c, k, *ins, *ks, *st, *pd, args.reps)]
        out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout.split()
        vcc = {"fwd": float(out[2]), "bwd": float(out[4]) + float(out[6])}
        dnn = torch_times(shape, args.reps, True)
        ref = torch_times(shape, args.reps, False)
        for p in ("fwd", "bwd"):
            print("%-26s %-4s %9.1f %9.1f %9.1f %9.2f %9.2f" % (name, p, vcc[p], dnn[p], ref[p], vcc[p] / dnn[p],
                                                              vcc[p] / ref[p]))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
