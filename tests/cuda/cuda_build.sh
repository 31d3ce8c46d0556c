#!/bin/sh
# cuda_build.sh MODE OUTDIR - build (and run) the CUDA runtime tests with nvcc.
#
#   compile        compile_test.cu with the trainer's warning flags, once with
#                  -arch=sm_90 (C++17) and once with nvcc's default arch (C++14,
#                  nvcc 11's default standard), and once
#                  more for sm_90 with -DVCC_PRECISION_TF32=1 (vcc --precision
#                  tf32); links against cuDNN and cuBLAS. Nothing is run.
#   numeric-build  numeric_test.cu (nvcc) + cpu_ref.c (cc, OpenBLAS or the
#                  plain blas_shim) -> OUTDIR/numeric_test
#   numeric        numeric-build, then run it (it exits 77 without a GPU)
#
# Exits 77 (CTest skip) when nvcc, cudnn.h/cublas_v2.h or libcudnn/libcublas
# are missing. Environment (all optional):
#   NVCC                     the nvcc to use (else PATH, $CUDA_HOME, /usr/local/cuda)
#   CUDNN_INCLUDE, CUDNN_LIB directories of cudnn.h and libcudnn.so* (e.g. a pip
#                            wheel's site-packages/nvidia/cudnn/{include,lib})
#   CUBLAS_INCLUDE, CUBLAS_LIB  the same for cublas_v2.h and libcublas.so*
#   NVCC_ARCH                arch flags for numeric_test (default: nvcc's default)
#   CC                       C compiler for the CPU reference (default cc)
#   VCC_TEST_BLAS=shim       use blas_shim/ even where OpenBLAS is installed
#   PYTHON                   used only to find pip-installed nvidia/* wheels
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
rt=$root/runtime
mode=${1:-}
out=${2:-}
if [ -z "$mode" ] || [ -z "$out" ]; then
    echo "usage: $0 compile|numeric-build|numeric OUTDIR" >&2
    exit 2
fi
mkdir -p "$out/lib" || exit 1
out=$(cd "$out" && pwd)

skip() {
    echo "SKIP: $*"
    exit 77
}

# ---- nvcc ----------------------------------------------------------------
NVCC=${NVCC:-}
if [ -z "$NVCC" ]; then
    NVCC=$(command -v nvcc 2>/dev/null || true)
fi
if [ -z "$NVCC" ] && [ -n "${CUDA_HOME:-}" ] && [ -x "$CUDA_HOME/bin/nvcc" ]; then
    NVCC=$CUDA_HOME/bin/nvcc
fi
if [ -z "$NVCC" ] && [ -x /usr/local/cuda/bin/nvcc ]; then
    NVCC=/usr/local/cuda/bin/nvcc
fi
if [ -z "$NVCC" ] || [ ! -x "$NVCC" ]; then
    skip "nvcc not found (set NVCC or put it on PATH)"
fi
cuda_root=$(cd "$(dirname "$NVCC")/.." && pwd)

# ---- cuDNN / cuBLAS --------------------------------------------------------
# pip wheels (nvidia-cudnn-cu12, nvidia-cublas-cu12, as PyTorch installs them)
pipdir() {
    "${PYTHON:-python3}" -c 'import importlib.util, sys
s = importlib.util.find_spec(sys.argv[1])
print(list(s.submodule_search_locations)[0] if s and s.submodule_search_locations else "")' "$1" 2>/dev/null
}
pip_cudnn=$(pipdir nvidia.cudnn)
pip_cublas=$(pipdir nvidia.cublas)

inc_dirs="$cuda_root/include $cuda_root/targets/x86_64-linux/include /usr/include /usr/local/include
          /usr/include/x86_64-linux-gnu"
lib_dirs="$cuda_root/lib64 $cuda_root/lib $cuda_root/targets/x86_64-linux/lib /usr/lib/x86_64-linux-gnu
          /usr/local/lib /usr/lib64 /usr/lib"

# find_header FILE DIR... -> first DIR holding FILE
find_header() {
    f=$1
    shift
    for d in "$@"; do
        if [ -n "$d" ] && [ -f "$d/$f" ]; then
            echo "$d"
            return 0
        fi
    done
    return 1
}

# find_lib NAME DIR... -> path of the first libNAME.so or libNAME.so.<ver>
find_lib() {
    n=$1
    shift
    for d in "$@"; do
        if [ -z "$d" ] || [ ! -d "$d" ]; then
            continue
        fi
        if [ -e "$d/lib$n.so" ]; then
            echo "$d/lib$n.so"
            return 0
        fi
        for f in "$d"/lib"$n".so.[0-9]*; do
            if [ -e "$f" ]; then
                echo "$f"
                return 0
            fi
        done
    done
    return 1
}

# shellcheck disable=SC2086
cudnn_inc=$(find_header cudnn.h ${CUDNN_INCLUDE:-} $inc_dirs ${pip_cudnn:+$pip_cudnn/include}) ||
    skip "cudnn.h not found (set CUDNN_INCLUDE)"
# shellcheck disable=SC2086
cublas_inc=$(find_header cublas_v2.h ${CUBLAS_INCLUDE:-} $inc_dirs ${pip_cublas:+$pip_cublas/include}) ||
    skip "cublas_v2.h not found (set CUBLAS_INCLUDE)"
# shellcheck disable=SC2086
cudnn_so=$(find_lib cudnn ${CUDNN_LIB:-} $lib_dirs ${pip_cudnn:+$pip_cudnn/lib}) ||
    skip "libcudnn not found (set CUDNN_LIB)"
# shellcheck disable=SC2086
cublas_so=$(find_lib cublas ${CUBLAS_LIB:-} $lib_dirs ${pip_cublas:+$pip_cublas/lib}) ||
    skip "libcublas not found (set CUBLAS_LIB)"

# Link through unversioned names in OUTDIR/lib (pip wheels ship only
# libcudnn.so.9 / libcublas.so.12); the real directories go into the rpath.
ln -sf "$cudnn_so" "$out/lib/libcudnn.so" || exit 1
ln -sf "$cublas_so" "$out/lib/libcublas.so" || exit 1
cudnn_dir=$(dirname "$cudnn_so")
cublas_dir=$(dirname "$cublas_so")
LINK="-L$out/lib -lcudnn -lcublas -Xlinker -rpath -Xlinker $cudnn_dir -Xlinker -rpath -Xlinker $cublas_dir"
# external headers as system headers (their warnings are not ours); the
# compiler's default directories are left alone (-isystem would reorder them)
INC="-I$rt -I$here"
for d in "$cudnn_inc" "$cublas_inc"; do
    case "$d" in
    /usr/include | /usr/local/include) ;;
    *) case " $INC " in *" -isystem $d "*) ;; *) INC="$INC -isystem $d" ;; esac ;;
    esac
done
WARN="-Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror"
LD_LIBRARY_PATH="$cudnn_dir:$cublas_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH

echo "nvcc:   $NVCC ($("$NVCC" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p'))"
echo "cuDNN:  $cudnn_inc/cudnn.h, $cudnn_so"
echo "cuBLAS: $cublas_inc/cublas_v2.h, $cublas_so"

run() {
    echo "+ $*"
    "$@"
}

build_compile() {
    # shellcheck disable=SC2086
    run "$NVCC" -O2 -std=c++17 $WARN -arch=sm_90 $INC "$here/compile_test.cu" -o "$out/compile_test_sm90" $LINK ||
        return 1
    # the default arch in C++14 (nvcc 11's default standard): the runtime needs nothing newer
    # shellcheck disable=SC2086
    run "$NVCC" -O2 -std=c++14 $WARN $INC "$here/compile_test.cu" -o "$out/compile_test" $LINK || return 1
    # the runtime as vcc --precision tf32 writes it (TF32 cuDNN math types, cuBLAS TF32 tensor-op mode)
    # shellcheck disable=SC2086
    run "$NVCC" -O2 -std=c++17 $WARN -arch=sm_90 -DVCC_PRECISION_TF32=1 $INC "$here/compile_test.cu" \
        -o "$out/compile_test_tf32" $LINK || return 1
    echo "compile_test: built with zero warnings (sm_90 in C++17 and the default arch in C++14; sm_90 with VCC_PRECISION_TF32=1)"
}

build_numeric() {
    cc=${CC:-cc}
    blas_inc=""
    blas_obj=""
    blas_lib=""
    probe='#include <cblas.h>
int main(void) { float a = 2, b = 3, c = 0;
cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 1, 1, 1, 1.0f, &a, 1, &b, 1, 0.0f, &c, 1);
return c != 6.0f; }'
    if [ "${VCC_TEST_BLAS:-}" = shim ]; then
        : # forced: use the shim below
    elif printf '%s\n' "$probe" | "$cc" -x c - -o "$out/blas_probe" -lopenblas >/dev/null 2>&1; then
        blas_lib="-lopenblas"
    elif printf '%s\n' "$probe" | "$cc" -x c - -I/usr/include/openblas -o "$out/blas_probe" -lopenblas \
        >/dev/null 2>&1; then
        blas_inc="-I/usr/include/openblas"
        blas_lib="-lopenblas"
    fi
    if [ -z "$blas_lib" ]; then
        echo "OpenBLAS not found: the CPU reference uses blas_shim/mini_cblas.c"
        blas_inc="-I$here/blas_shim"
        run "$cc" -O2 -std=c99 -c "$here/blas_shim/mini_cblas.c" -o "$out/mini_cblas.o" || return 1
        blas_obj="$out/mini_cblas.o"
    fi
    # shellcheck disable=SC2086
    run "$cc" -O2 -std=c99 -Wall -Wextra $blas_inc -I"$rt" -I"$here" -c "$here/cpu_ref.c" -o "$out/cpu_ref.o" ||
        return 1
    # shellcheck disable=SC2086
    run "$NVCC" -O2 -std=c++17 $WARN ${NVCC_ARCH:-} $INC -c "$here/numeric_test.cu" -o "$out/numeric_test.o" ||
        return 1
    # shellcheck disable=SC2086
    run "$NVCC" ${NVCC_ARCH:-} "$out/numeric_test.o" "$out/cpu_ref.o" $blas_obj -o "$out/numeric_test" $LINK \
        $blas_lib -lm || return 1
}

case $mode in
compile)
    build_compile || exit 1
    ;;
numeric-build)
    build_numeric || exit 1
    ;;
numeric)
    build_numeric || exit 1
    "$out/numeric_test"
    exit $?
    ;;
*)
    echo "$0: unknown mode '$mode'" >&2
    exit 2
    ;;
esac
exit 0
