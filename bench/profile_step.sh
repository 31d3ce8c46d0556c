#!/bin/sh
# profile_step.sh - where a vcc C trainer's training step spends its time.
#
#   bench/profile_step.sh [--model r3d_18] [--shape 2x3x8x112x112] [--threads 2] [--steps 2]
#                         [--work build/bench] [--top 15] [--vcc-args "--cpu-conv dnnl ..."]
#
# 1. Exports and builds the trainer like bench/train_step.py (same work folder, same cache).
# 2. perf record (event cpu-clock, 999 Hz, all threads of the trainer) over --steps training
#    steps: the trainer runs 1 + STEPS steps and sampling is switched on (perf --control) only
#    when its `step 1` line appears, so start-up, weight loading and the first step's page
#    faults are not in the profile. Prints perf report's top symbols (self, % of samples),
#    by shared object, by thread (the main thread vs OpenBLAS's worker), and the main thread's
#    symbols outside OpenBLAS (what runs on one core while the worker waits).
#    Without a working perf (or with --callgrind): valgrind --tool=callgrind on one step at
#    --small-shape instead (an AVX2 build, OpenBLAS's Haswell kernels on one thread, counted
#    only inside vcc_step; Ir = instructions executed).
# 3. sgemm accounting: the trainer rebuilt with bench/sgemm_wrap.c (-Wl,--wrap=cblas_sgemm) is run
#    with 1 and with 1 + STEPS steps; the difference gives, per step, the wall seconds inside
#    cblas_sgemm by transpose flags (NN conv forward, TN conv backward-data, NT conv
#    backward-filter), their GFLOP/s, and sgemm's share of the step's wall time. A --cpu-conv dnnl
#    trainer (-ldnnl) also gets bench/sgemm_wrap_dnnl.c: its weight gradients' dnnl_sgemm calls
#    (dnnl-NT).
set -eu

MODEL=r3d_18
SHAPE=2x3x8x112x112
SMALL_SHAPE=1x3x4x56x56
THREADS=2
STEPS=2
TOP=15
VCC_ARGS=
FORCE_CALLGRIND=0
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$ROOT/build/bench

usage() {
    sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
    echo "  --small-shape DIMS   the shape of the callgrind fallback (default $SMALL_SHAPE)"
}
while [ $# -gt 0 ]; do
    case $1 in
    --model) MODEL=$2; shift 2 ;;
    --shape) SHAPE=$2; shift 2 ;;
    --small-shape) SMALL_SHAPE=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    --top) TOP=$2; shift 2 ;;
    --vcc-args) VCC_ARGS=$2; shift 2 ;;
    --callgrind) FORCE_CALLGRIND=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; echo "profile_step.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
case $WORK in /*) ;; *) WORK=$(pwd)/$WORK ;; esac
export OPENBLAS_NUM_THREADS=$THREADS OMP_NUM_THREADS=$THREADS MKL_NUM_THREADS=$THREADS

# The project's venv (scripts/setup.sh) has onnx for the export; Debian's python3 otherwise.
PY=/usr/bin/python3
[ -x "$ROOT/.venv/bin/python" ] && PY=$ROOT/.venv/bin/python
prepare() { # prepare SHAPE DIR
    "$PY" "$ROOT/bench/train_step.py" --prepare-only --models "$MODEL" --shape "$1" \
        --threads "$THREADS" --work "$2" --vcc-args "$VCC_ARGS"
}

perf_works() {
    command -v perf >/dev/null 2>&1 &&
        perf record -q -e cpu-clock -o /dev/null -- true >/dev/null 2>&1
}

if [ "$FORCE_CALLGRIND" = 0 ] && perf_works; then
    prepare "$SHAPE" "$WORK"
    D=$WORK/$MODEL
    cd "$D"
    echo
    echo "== perf: $MODEL $SHAPE, threads $THREADS, steps 2..$((STEPS + 1)) sampled (cpu-clock, 999 Hz)"
    rm -f perf.ctl perf.ack perf.data
    mkfifo perf.ctl perf.ack
    # Sampling starts disabled (-D -1); the reader enables it when `step 1` is printed.
    perf record -q -e cpu-clock -F 999 -D -1 --control fifo:perf.ctl,perf.ack -o perf.data -- \
        ./train --data data.npy --labels labels.npy --weights train.safetensors --threads "$THREADS" \
        --steps $((STEPS + 1)) --lr 0.01 --momentum 0.9 |
        while IFS= read -r line; do
            echo "  $line"
            case $line in
            "step 1 "*) echo enable >perf.ctl && head -c 5 perf.ack >/dev/null ;;
            esac
        done
    rm -f perf.ctl perf.ack
    echo
    echo "-- top $TOP symbols (self % of all samples, all threads)"
    perf report -i perf.data --no-children --sort dso,sym --stdio 2>/dev/null |
        grep -v '^#' | grep -v '^$' | head -n "$TOP"
    echo
    echo "-- by shared object"
    perf report -i perf.data --no-children --sort dso --stdio 2>/dev/null |
        grep -v '^#' | grep -v '^$' | head -n 6
    echo
    echo "-- by thread and shared object (the lowest tid is the trainer's main thread)"
    perf report -i perf.data --no-children --sort pid,dso --stdio 2>/dev/null |
        grep -v '^#' | grep -v '^$' | head -n 8
    MAIN=$(perf report -i perf.data --no-children --sort pid --stdio 2>/dev/null | grep -v '^#' |
        awk 'NF { split($2, t, ":"); print t[1] }' | sort -n | head -n 1)
    echo
    echo "-- main thread ($MAIN) outside OpenBLAS: the serial part of the step (% of all samples)"
    perf report -i perf.data --no-children --sort pid,dso,sym --stdio 2>/dev/null | grep -v '^#' |
        awk -v tid="$MAIN:" '$2 ~ "^" tid && $3 !~ /openblas/' | head -n "$TOP"
else
    echo "callgrind (perf unavailable or --callgrind): 1 step at $SMALL_SHAPE, OpenBLAS on 1 thread"
    prepare "$SMALL_SHAPE" "$WORK/small"
    D=$WORK/small/$MODEL
    cd "$D"
    rm -f callgrind.out
    # valgrind has no AVX-512: an AVX2 build of the trainer, OpenBLAS's Haswell kernels
    BUILD=$(sed -n "1s|^// build (from this file's folder): ||p" train.c | sed 's|-march=native|-march=x86-64-v3|; s|-o train |-o train_cg |')
    echo "  build: $BUILD"
    sh -c "$BUILD"
    OPENBLAS_CORETYPE=Haswell OPENBLAS_NUM_THREADS=1 valgrind --tool=callgrind --toggle-collect=vcc_step \
        --callgrind-out-file=callgrind.out ./train_cg --threads 1 --data data.npy \
        --labels labels.npy --weights train.safetensors --steps 1 2>&1 | grep '^step' || true
    echo "-- top $TOP functions by instructions executed (self cost)"
    callgrind_annotate callgrind.out 2>/dev/null | grep -E '^ *[0-9,]+ +\(' | head -n $((TOP + 1))
fi

echo
echo "== sgemm accounting: $MODEL, per step over steps 2..$((STEPS + 1)) (wall seconds in cblas_sgemm, and dnnl_sgemm in a oneDNN build)"
cd "$D"
BUILD=$(sed -n "1s|^// build (from this file's folder): ||p" train.c)
BUILD=$(printf '%s\n' "$BUILD" | sed "s| train.c | train.c $ROOT/bench/sgemm_wrap.c -Wl,--wrap=cblas_sgemm |; s|-o train |-o train_sgemm |")
case $BUILD in *-ldnnl*) # a --cpu-conv dnnl trainer: its weight gradients' products are dnnl_sgemm calls
    BUILD=$(printf '%s\n' "$BUILD" | sed "s| -Wl,--wrap=cblas_sgemm | $ROOT/bench/sgemm_wrap_dnnl.c -Wl,--wrap=cblas_sgemm -Wl,--wrap=dnnl_sgemm |") ;;
esac
echo "  build: $BUILD"
sh -c "$BUILD"
./train_sgemm --data data.npy --labels labels.npy --weights train.safetensors --threads "$THREADS" --steps 1 \
    2>sgemm.1 >/dev/null
./train_sgemm --data data.npy --labels labels.npy --weights train.safetensors --threads "$THREADS" --steps $((STEPS + 1)) \
    2>sgemm.n >/dev/null
awk -v steps="$STEPS" '
    FNR == NR { a[$1 " " $2] = $0; next }
    {
        split(a[$1 " " $2], o, " ")
        if ($1 == "sgemm_process_wall") { wall = ($3 - o[3]) / steps; next }
        calls = ($4 - o[4]) / steps; sec = ($6 - o[6]) / steps; gf = ($8 - o[8]) / steps
        if (calls == 0) next
        kind[++n] = $2; c[n] = calls; s[n] = sec; g[n] = gf; tot += sec; totg += gf
    }
    END {
        printf "  %-7s %8s %10s %10s %9s %8s\n", "kind", "calls", "seconds", "GFLOP", "GFLOP/s", "of step"
        for (i = 1; i <= n; i++)
            printf "  %-7s %8d %10.3f %10.2f %9.1f %7.1f%%\n", kind[i], c[i], s[i], g[i], g[i] / s[i], 100 * s[i] / wall
        printf "  %-7s %8s %10.3f %10.2f %9.1f %7.1f%%\n", "all", "", tot, totg, totg / tot, 100 * tot / wall
        printf "  step wall %.3f s; outside sgemm %.3f s (%.1f%%: im2col, col2im, batch norm, ReLU, adds, SGD...)\n",
            wall, wall - tot, 100 * (wall - tot) / wall
    }' sgemm.1 sgemm.n
rm -f sgemm.1 sgemm.n
