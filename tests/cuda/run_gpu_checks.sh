#!/bin/sh
# run_gpu_checks.sh [OUTDIR] - on a machine with an NVIDIA GPU and nvcc: build
# the CUDA runtime's numeric test (numeric_test.cu vs the CPU runtime) and the
# compile test, run the numeric test plainly (figures: max relative error per
# kernel, the cuDNN algorithms chosen), then under compute-sanitizer when it
# is installed:
#   racecheck, synccheck, initcheck  on the hand-written kernels (bn xent misc)
#   memcheck                         on everything (cuDNN and cuBLAS included)
#
# Environment: as cuda_build.sh (NVCC, CUDNN_INCLUDE, CUDNN_LIB, CUBLAS_INCLUDE,
# CUBLAS_LIB, NVCC_ARCH, CC), plus
#   SANITIZER          path of compute-sanitizer (else found next to nvcc / on PATH)
#   VCC_NO_SANITIZER=1 skip the compute-sanitizer runs
#   SANITIZER_TIMEOUT  seconds per sanitizer run (default 240)
#   SANITIZER_TOOLS    which tools, in order (default "racecheck synccheck initcheck memcheck")
# With a pip-installed cuDNN (PyTorch's wheels), for example:
#   sp=$(python3 -c 'import site; print(site.getsitepackages()[0])')
#   CUDNN_INCLUDE=$sp/nvidia/cudnn/include CUDNN_LIB=$sp/nvidia/cudnn/lib sh tests/cuda/run_gpu_checks.sh
# (cuda_build.sh also finds nvidia/cudnn and nvidia/cublas wheels by itself.)
# Exit status: 0 when every step passed, 1 otherwise, 77 when no GPU/toolchain.
set -u

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-${TMPDIR:-/tmp}/vcc_gpu_checks}
mkdir -p "$out" || exit 1
status=0
summary=""

note() {
    summary="$summary
  $1"
}

command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L

NVCC=${NVCC:-$(command -v nvcc 2>/dev/null || true)}
if [ -z "$NVCC" ] && [ -x /usr/local/cuda/bin/nvcc ]; then NVCC=/usr/local/cuda/bin/nvcc; fi
export NVCC
# build for the GPU at hand when nvcc can (CUDA >= 11.6); else nvcc's default (PTX JIT)
if [ -z "${NVCC_ARCH:-}" ] && [ -n "$NVCC" ] && "$NVCC" --help 2>/dev/null | grep -q 'native'; then
    NVCC_ARCH=-arch=native
fi
export NVCC_ARCH="${NVCC_ARCH:-}"

echo "== build (compile test: trainer warning flags)"
sh "$here/cuda_build.sh" compile "$out"
rc=$?
[ $rc -eq 77 ] && exit 77
if [ $rc -ne 0 ]; then status=1; note "compile test: FAILED"; else note "compile test: ok"; fi

echo "== build (numeric test, NVCC_ARCH='$NVCC_ARCH')"
sh "$here/cuda_build.sh" numeric-build "$out" || {
    echo "numeric test build FAILED"
    exit 1
}
# the library paths cuda_build.sh found are baked in as rpath; run from $out
bin=$out/numeric_test

echo "== compile_test (smoke run of every runtime function)"
"$out/compile_test"
rc=$?
if [ $rc -eq 77 ]; then
    echo "no CUDA device visible: nothing to run"
    exit 77
fi
if [ $rc -ne 0 ]; then status=1; note "compile_test run: FAILED (rc $rc)"; else note "compile_test run: ok"; fi

echo "== numeric_test"
start=$(date +%s)
"$bin"
rc=$?
echo "numeric_test: rc $rc in $(($(date +%s) - start)) s"
if [ $rc -ne 0 ]; then status=1; note "numeric_test: FAILED (rc $rc)"; else note "numeric_test: ok"; fi

SANITIZER=${SANITIZER:-}
if [ -z "$SANITIZER" ] && [ -n "$NVCC" ]; then
    for s in "$(dirname "$NVCC")/compute-sanitizer" "$(dirname "$NVCC")/../compute-sanitizer/compute-sanitizer"; do
        if [ -x "$s" ]; then SANITIZER=$s; break; fi
    done
fi
if [ -z "$SANITIZER" ]; then SANITIZER=$(command -v compute-sanitizer 2>/dev/null || true); fi

if [ "${VCC_NO_SANITIZER:-0}" = 1 ]; then
    note "compute-sanitizer: skipped (VCC_NO_SANITIZER=1)"
elif [ -z "$SANITIZER" ]; then
    note "compute-sanitizer: not found, skipped"
else
    tmo=${SANITIZER_TIMEOUT:-240}
    to=""
    command -v timeout >/dev/null 2>&1 && to="timeout $tmo"
    for tool in ${SANITIZER_TOOLS:-racecheck synccheck initcheck memcheck}; do
        groups="bn xent misc"
        [ "$tool" = memcheck ] && groups=""
        echo "== compute-sanitizer --tool $tool numeric_test $groups"
        start=$(date +%s)
        # shellcheck disable=SC2086
        $to "$SANITIZER" --tool "$tool" --error-exitcode 99 "$bin" $groups >"$out/sanitizer_$tool.log" 2>&1
        rc=$?
        tail -n 5 "$out/sanitizer_$tool.log"
        t=$(($(date +%s) - start))
        if [ $rc -eq 0 ]; then
            note "sanitizer $tool: ok (${t} s)"
        elif [ $rc -eq 124 ]; then
            note "sanitizer $tool: timed out after $tmo s (not a failure; see $out/sanitizer_$tool.log)"
        else
            status=1
            note "sanitizer $tool: FAILED (rc $rc, ${t} s); first reports:"
            grep -m 20 -E '=========.*(Error|error|Invalid|Race|Uninitialized|hazard)' "$out/sanitizer_$tool.log"
        fi
    done
fi

echo "== summary$summary"
exit $status
