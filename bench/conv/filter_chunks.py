"""Time the C trainer's weight gradient on im2col (runtime/cpu/conv.h, conv_backward_filter) four ways, on
r3d_18's convolutions at input (2, 3, 8, 112, 112), next to PyTorch's (with oneDNN, its gemm convolution
where the CPU has no direct kernel):

  openblas-16M   im2col chunks of up to 16 MiB of columns (what vcc's default 16 MiB workspace gave before
                 the chunk cap), each product through OpenBLAS
  openblas-4M    chunks capped at 4 MiB (VCC_CONV_FILTER_CHUNK_BYTES, the runtime's default)
  dnnl-16M       products through oneDNN's dnnl_sgemm (a -DVCC_CONV_DNNL build, as --cpu-conv dnnl
                 writes), chunks of up to 16 MiB
  dnnl-4M        dnnl_sgemm, chunks capped at 4 MiB: what a --cpu-conv dnnl trainer runs where oneDNN
                 has no direct weight-gradient kernel (3x3x3 convolutions on AVX2)

    /usr/bin/python3 bench/conv/filter_chunks.py [--threads 1] [--rounds 7]

Each variant is bench/conv/conv_vcc.c built with those defines and linked like the trainers (-fopenmp,
OpenBLAS's OpenMP build where installed). The variants run in turn, one process of 2 repetitions each
per round, so a drift of the machine's speed reaches all of them alike; printed are the medians over the
rounds of conv_vcc's bwd_filter milliseconds, each variant's time over openblas-16M's, the sum over
r3d_18's convolutions (each row times the convolutions it stands for, COUNT), and the
implementation the oneDNN builds ran ("im2col": oneDNN refused or has only its gemm convolution, so
the im2col path above ran; a oneDNN name: its direct kernel ran and the chunks do not apply).
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import conv_backends as cb  # noqa: E402

OMP_BLAS = "/usr/lib/x86_64-linux-gnu/openblas-openmp"
MIB = 1 << 20
# how many of r3d_18's convolutions each row of conv_backends.SHAPES stands for, by its name (the strided
# entries of layer3 and layer4 have no row)
COUNT = {"stem 3->64 k3x7x7 s1x2x2": 1, "layer1 64->64 k3": 4, "layer2.0 64->128 k3 s2": 1,
         "layer2.0 down 64->128 k1 s2": 1, "layer2 128->128 k3": 3, "layer3 256->256 k3": 3,
         "layer4 512->512 k3": 3}
VARIANTS = [  # name, defines
    ("openblas-16M", ["-DVCC_CONV_FILTER_CHUNK_BYTES=%d" % (16 * MIB)]),
    ("openblas-4M", []),
    ("dnnl-16M", ["-DVCC_CONV_DNNL", "-DVCC_CONV_FILTER_CHUNK_BYTES=%d" % (16 * MIB)]),
    ("dnnl-4M", ["-DVCC_CONV_DNNL"]),
]


def build(exe, defines):
    libs = ["-ldnnl"] if "-DVCC_CONV_DNNL" in defines else []
    if os.path.isdir(OMP_BLAS):
        libs += ["-L" + OMP_BLAS, "-Wl,-rpath," + OMP_BLAS]
    subprocess.run(["cc", "-O2", "-march=native", "-std=c11", "-fopenmp", *defines,
                    os.path.join(cb.HERE, "conv_vcc.c"), "-o", exe, *libs, "-lopenblas", "-lm"], check=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp()
    exes = {}
    for name, defines in VARIANTS:
        exes[name] = os.path.join(tmp, name)
        build(exes[name], defines)
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(args.threads), OMP_NUM_THREADS=str(args.threads))
    cb.torch.set_num_threads(args.threads)
    print("threads %d, bwd_filter milliseconds, median of %d rounds (variants in turn, 2 repetitions each)"
          % (args.threads, args.rounds))
    print("%-28s" % "conv" + "".join("%14s" % n for n, _ in VARIANTS) + "%10s" % "torch" +
          "".join("%14s" % ("/" + n) for n, _ in VARIANTS[1:]) + "  impl (oneDNN builds)")
    total = {n: 0.0 for n, _ in VARIANTS}
    for shape in cb.SHAPES:
        times = {n: [] for n, _ in VARIANTS}
        impl = "-"
        for _ in range(args.rounds):
            for name, _ in VARIANTS:
                r = cb.vcc_times(exes[name], shape, 2, env)
                times[name].append(r["bwd_filter"])
                impl = r.get("impl_bwd_filter", impl)
        med = {n: statistics.median(t) for n, t in times.items()}
        for n in total:
            total[n] += COUNT[shape[0]] * med[n]
        torch_ms = cb.torch_times(shape, 3, True)["bwd_filter"]
        base = med[VARIANTS[0][0]]
        print("%-28s" % shape[0] + "".join("%14.1f" % med[n] for n, _ in VARIANTS) + "%10.1f" % torch_ms +
              "".join("%14.3f" % (med[n] / base) for n, _ in VARIANTS[1:]) + "  " + impl)
        sys.stdout.flush()
    base = total[VARIANTS[0][0]]
    print("%-28s" % "r3d_18 (x COUNT)" + "".join("%14.1f" % total[n] for n, _ in VARIANTS) + "%10s" % "" +
          "".join("%14.3f" % (total[n] / base) for n, _ in VARIANTS[1:]))


if __name__ == "__main__":
    main()
