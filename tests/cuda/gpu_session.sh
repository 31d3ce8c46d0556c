#!/bin/sh
# gpu_session.sh - every GPU check of the project in one run, for a GPU machine that is lent for a few
# minutes and has nvcc and PyTorch (with cuDNN and cuBLAS in its wheels) but no vcc build, no registry.
#
#   sh tests/cuda/gpu_session.sh prepare        # here, with vcc built in build/: writes build/device
#                                               # and build/gpu_step (bench/gpu_step.py prepare)
#   sh tests/cuda/gpu_session.sh run OUTDIR     # on the GPU machine, with build/device and
#                                               # build/gpu_step carried beside the tracked files
#
# prepare: copies build/vcc and the libprotobuf-c it loads into build/device/bin, exports the
# models/video_nets.py models that the CUDA step checks train (models/export_video_nets.py, as
# tests/e2e/test_model_steps.py exports them) into build/device/export/<model>, and runs
# `bench/gpu_step.py prepare`. The folders together stay well under the 64 MiB a carry may hold.
#
# run, in three phases, each with its own time limit (seconds, from the environment):
#   1. (PHASE1_S, default 170) at once:
#      - tests/cuda/run_gpu_checks.sh without the sanitizer: the runtime's compile test and its
#        numeric test (every CUDA kernel against the CPU runtime);
#      - the CUDA trainers step by step against PyTorch float64 (tests/e2e/test_model_steps.py
#        --target cu --export-from build/device/export/<model>), STEPS_JOBS at a time;
#   2. (GPU_STEP_S, default 230) alone on the GPU: bench/gpu_step.py run (speed, memory, step-1 loss
#      against PyTorch), with --budget GPU_STEP_S less 20 and GPU_STEP_ARGS (--no-compile, say);
#      - PyTorch's peak memory for the training step of every bench/memplan.py model at its two batch
#        sizes, on the CPU and on the GPU (memplan.py --peak-of), into OUTDIR/torch_peaks.txt;
#   3. (SANITIZER_S, default 60) compute-sanitizer memcheck on the numeric test's groups, then
#      racecheck on the hand-written kernels, in the time left.
# OUTDIR gets summary.txt (what passed and failed, with the figures' lines), logs.tar.gz (every log)
# and the logs of phase 2 as gpu_step.log. Exit status: 0 when every check passed, 1 otherwise.
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
dev=$root/build/device
mode=${1:-}

prepare() {
    py=${PYTHON:-$root/.venv/bin/python}
    vcc=$root/build/vcc
    [ -x "$vcc" ] || { echo "gpu_session: build vcc first ($vcc)" >&2; exit 1; }
    rm -rf "$dev" && mkdir -p "$dev/bin" "$dev/export" || exit 1
    cp "$vcc" "$dev/bin/vcc" || exit 1
    # the shared libraries vcc loads beyond the C library's own (libprotobuf-c)
    ldd "$vcc" | awk '$3 ~ /^\// {print $3}' | while read -r so; do
        case $(basename "$so") in
        libc.so* | libm.so* | ld-linux*) ;;
        *) cp -L "$so" "$dev/bin/" || exit 1 ;;
        esac
    done
    for m in $STEP_MODELS; do
        args="--dropout 0 --num-classes 10"
        [ "$m" = unet3d_block ] && args=""
        # shellcheck disable=SC2086
        "$py" "$root/models/export_video_nets.py" --model "$m" --out "$dev/export/$m" $args >"$dev/export/$m.log" 2>&1 ||
            { cat "$dev/export/$m.log"; echo "gpu_session: export of $m failed" >&2; exit 1; }
        rm -f "$dev/export/$m/export_info.json"
    done
    "$py" "$root/bench/gpu_step.py" prepare || exit 1
    du -sh "$dev" "$root/build/gpu_step"
}

# the CUDA step checks: NAME|test_model_steps.py options (the export is build/device/export/<model>)
STEP_CASES="c3d_tiny|--model c3d_tiny
x3d_s_tiny|--model x3d_s_tiny
slowfast_tiny|--model slowfast_tiny
unet3d_block|--model unet3d_block
vivit_tiny|--model vivit_tiny
vivit_tiny_unfused|--model vivit_tiny --no-fuse-attention
mvit_v2_tiny|--model mvit_v2_tiny
adamw_c3d_tiny|--model c3d_tiny --optimizer adamw
adamw_vivit_tiny|--model vivit_tiny --optimizer adamw
clip_cosine_sgd|--model c3d_tiny --clip-grad-norm 0.5 --lr-schedule cosine --warmup-steps 2
wslimit_c3d_tiny|--model c3d_tiny --workspace-limit 16K
remat_x3d_s_tiny|--model x3d_s_tiny --remat"
# Not videomae_tiny and timesformer_tiny: their references rebuild the model with the GPU machine's
# transformers, whose modules differ from the exporting machine's (transformers 5.17 against 4.46: bias
# names, config types), so the exported state dict does not load there.
STEP_MODELS="c3d_tiny x3d_s_tiny slowfast_tiny unet3d_block vivit_tiny mvit_v2_tiny"

# cuDNN and cuBLAS for the nvcc commands vcc prints (`nvcc ... -lcudnn -lcublas`): headers through
# CPATH, unversioned library names in a folder of links through LIBRARY_PATH, the real folders through
# LD_LIBRARY_PATH; and nvcc builds for the GPU at hand (NVCC_APPEND_FLAGS). Only the step checks get
# CPATH, LIBRARY_PATH and NVCC_APPEND_FLAGS (STEP_*): run_gpu_checks.sh and gpu_step.py find the
# libraries themselves and name their own -arch, which NVCC_APPEND_FLAGS would contradict.
cuda_env() {
    links=$1
    mkdir -p "$links"
    sp=$(python3 -c 'import site; print(site.getsitepackages()[0])' 2>/dev/null)
    nvcc_dir=$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")
    cuda_root=$(cd "$nvcc_dir/.." && pwd)
    inc="" libs=""
    for name in cudnn cublas; do
        hdr=cudnn.h
        [ $name = cublas ] && hdr=cublas_v2.h
        for d in "$cuda_root/include" "$cuda_root/targets/x86_64-linux/include" /usr/include \
            "$sp/nvidia/$name/include" "$sp/nvidia/cu13/include" "$sp/nvidia/cu12/include"; do
            if [ -f "$d/$hdr" ]; then inc="$inc:$d"; break; fi
        done
        for d in "$cuda_root/lib64" "$cuda_root/targets/x86_64-linux/lib" /usr/lib/x86_64-linux-gnu \
            "$sp/nvidia/$name/lib" "$sp/nvidia/cu13/lib" "$sp/nvidia/cu12/lib"; do
            so=$(ls "$d/lib$name.so" "$d"/lib$name.so.[0-9]* 2>/dev/null | head -n 1)
            if [ -n "$so" ]; then
                ln -sf "$so" "$links/lib$name.so"
                libs="$libs:$d"
                break
            fi
        done
    done
    STEP_CPATH="${inc#:}${CPATH:+:$CPATH}"
    STEP_LIBRARY_PATH="$links${LIBRARY_PATH:+:$LIBRARY_PATH}"
    export LD_LIBRARY_PATH="$dev/bin${libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    cap=$(python3 -c 'import torch; print("%d%d" % torch.cuda.get_device_capability(0))' 2>/dev/null)
    STEP_ARCH=""
    [ -n "$cap" ] && STEP_ARCH="-arch=sm_$cap"
    echo "cuda env (the step checks' nvcc): CPATH=$STEP_CPATH LIBRARY_PATH=$STEP_LIBRARY_PATH NVCC_APPEND_FLAGS=$STEP_ARCH"
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
}

run_all() {
    out=$1
    mkdir -p "$out" || exit 1
    out=$(cd "$out" && pwd)
    logs=$(mktemp -d "${TMPDIR:-/tmp}/vcc_gpu_session.XXXXXX")
    sum=$out/summary.txt
    : >"$sum"
    t0=$(date +%s)
    say() { echo "$*" | tee -a "$sum"; }
    status=0
    export PYTHONUNBUFFERED=1 PYTHON=python3
    nvidia-smi -L 2>&1 | tee -a "$sum"
    say "nvcc: $(nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p'); python3: $(python3 -c 'import torch; print("torch", torch.__version__, "cuDNN", torch.backends.cudnn.version())' 2>&1)"
    cuda_env "$logs/lib" >"$logs/env.log" 2>&1  # not in a subshell: it sets STEP_*
    cat "$logs/env.log"
    [ -x "$dev/bin/vcc" ] || { say "FAIL: $dev/bin/vcc missing (run prepare and carry build/device)"; exit 1; }

    # ---- phase 1: the runtime's checks and the step checks, at once ----
    p1=${PHASE1_S:-170}
    (VCC_NO_SANITIZER=1 timeout "$p1" sh "$here/run_gpu_checks.sh" "$logs/gpu_checks" >"$logs/gpu_checks.log" 2>&1
        echo $? >"$logs/gpu_checks.rc") &
    checks=$!
    mkdir -p "$logs/steps" "$logs/peaks"
    # PyTorch's peak for each bench/memplan.py model's training step, on the CPU and on the GPU
    # (memplan.py --peak-of: torch.profiler's allocator records; torch.cuda.max_memory_allocated)
    (cd "$root" && python3 -c 'import sys; sys.path[:0] = ["bench", "models"]; import memplan
for m in memplan.default_models():
    b = memplan.base_shape(m)
    for n in (b[0], 2 * b[0]): print(m, "x".join(map(str, (n,) + tuple(b[1:]))))' >"$logs/peaks/jobs.txt" 2>"$logs/peaks/jobs.log"
        xargs -P 4 -L 1 sh -c 'timeout 120 python3 bench/memplan.py --peak-of "$1" "$2" >"$0/peaks/$1_$2.json" 2>"$0/peaks/$1_$2.log"' \
            "$logs" <"$logs/peaks/jobs.txt"
        python3 -c 'import json, sys
for line in open(sys.argv[1] + "/peaks/jobs.txt"):
    m, shape = line.split()
    try:
        cpu, gpu, saved = json.loads(open("%s/peaks/%s_%s.json" % (sys.argv[1], m, shape)).read().strip().splitlines()[-1])
        print("torch peak %s %s: CPU %.1f MiB, GPU %s MiB" % (m, shape, cpu / 2**20, "%.1f" % (gpu / 2**20) if gpu else "-"))
    except Exception as e:
        print("torch peak %s %s: failed (%s)" % (m, shape, e))' "$logs" >"$out/torch_peaks.txt") &
    peaks=$!
    deadline=$(($(date +%s) + p1))
    echo "$STEP_CASES" | xargs -P "${STEPS_JOBS:-7}" -I{} sh -c '
            name=${1%%|*} opts=${1#*|}
            m=$(echo "$opts" | sed -n "s/.*--model \([a-z0-9_]*\).*/\1/p")
            start=$(date +%s)
            left=$(($2 - start))
            if [ $left -lt 20 ]; then echo "skipped: no time left in phase 1" >"$5/steps/$name.log"; echo "skip 0" >"$5/steps/$name.rc"; exit 0; fi
            # shellcheck disable=SC2086
            CPATH=$6 LIBRARY_PATH=$7 NVCC_APPEND_FLAGS=$8 timeout "$left" python3 "$3/tests/e2e/test_model_steps.py" --vcc "$4/bin/vcc" --target cu $opts \
                --export-from "$4/export/$m" --work "$5/steps/$name" >"$5/steps/$name.log" 2>&1
            echo "$? $(($(date +%s) - start))" >"$5/steps/$name.rc"' _ {} "$deadline" "$root" "$dev" "$logs" \
        "$STEP_CPATH" "$STEP_LIBRARY_PATH" "$STEP_ARCH"
    wait $checks
    wait $peaks
    say "== phase 1 ($(($(date +%s) - t0)) s)"
    rc=$(cat "$logs/gpu_checks.rc" 2>/dev/null || echo "?")
    say "run_gpu_checks.sh (no sanitizer): rc $rc"
    sed -n '/== summary/,$p' "$logs/gpu_checks.log" | tee -a "$sum"
    sed -n "/== numeric_test/,/^numeric_test: rc/p" "$logs/gpu_checks.log" | head -n 150 >>"$sum"
    [ "$rc" = 0 ] || status=1
    echo "$STEP_CASES" | while IFS='|' read -r name opts; do
        r=$(cat "$logs/steps/$name.rc" 2>/dev/null || echo "? ?")
        set -- $r
        verdict=$(grep -E "^(PASS|FAIL)" "$logs/steps/$name.log" | tail -n 1)
        say "step check $name ($opts): rc $1, $2 s: ${verdict:-$(tail -n 1 "$logs/steps/$name.log" 2>/dev/null)}"
        grep -E "^[0-9]+ " "$logs/steps/$name.log" | head -n 6 >>"$sum"
    done
    for f in "$logs"/steps/*.rc; do [ "$(cut -d' ' -f1 "$f")" = 0 ] || status=1; done

    # ---- phase 2: bench/gpu_step.py alone on the GPU ----
    p2=${GPU_STEP_S:-230}
    say "== phase 2: bench/gpu_step.py run (budget $((p2 - 20)) s)"
    timeout "$p2" python3 "$root/bench/gpu_step.py" run --work "$root/build/gpu_step" --budget $((p2 - 20)) \
        --reserve 20 --steps "${GPU_STEP_STEPS:-5}" --warmup 2 --compile-timeout 70 --trainer-timeout 90 \
        ${GPU_STEP_ARGS:-} >"$out/gpu_step.log" 2>&1
    rc=$?
    say "gpu_step.py: rc $rc"
    grep -E "^\||error|FAIL" "$out/gpu_step.log" | tee -a "$sum" >/dev/null
    [ $rc = 0 ] || status=1

    # ---- phase 3: compute-sanitizer in the time left ----
    p3=${SANITIZER_S:-60}
    san=$(command -v compute-sanitizer || ls "$(dirname "$(command -v nvcc)")/compute-sanitizer" 2>/dev/null)
    if [ -x "$logs/gpu_checks/numeric_test" ] && [ -n "$san" ]; then
        half=$((p3 / 2))
        for tool in memcheck racecheck; do
            groups="bn xent misc conv gemm"
            [ $tool = racecheck ] && groups="bn xent misc"
            start=$(date +%s)
            # shellcheck disable=SC2086
            timeout "$half" "$san" --tool $tool --error-exitcode 99 "$logs/gpu_checks/numeric_test" $groups \
                >"$logs/sanitizer_$tool.log" 2>&1
            rc=$?
            say "compute-sanitizer $tool ($groups): rc $rc in $(($(date +%s) - start)) s$([ $rc = 124 ] && echo ' (timed out: not a failure)')"
            tail -n 3 "$logs/sanitizer_$tool.log" >>"$sum"
            case $rc in 0 | 124) ;; *) status=1 ;; esac
        done
    else
        say "compute-sanitizer: not run (no numeric_test binary or no compute-sanitizer)"
    fi
    say "== total $(($(date +%s) - t0)) s, status $status"
    (cd "$logs" && find . -name '*.log' -o -name '*.rc' -o -name '*.txt' | tar czf "$out/logs.tar.gz" -T -)
    exit $status
}

case $mode in
prepare) prepare ;;
run) run_all "${2:?usage: gpu_session.sh run OUTDIR}" ;;
*)
    echo "usage: $0 prepare | run OUTDIR" >&2
    exit 2
    ;;
esac
