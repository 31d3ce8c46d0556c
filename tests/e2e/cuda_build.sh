#!/bin/sh
# The CUDA trainer builds with no warnings: `vcc MODEL -o train.cu`, then the nvcc command vcc printed
# (run here, in the file's folder, it is also the file's first line), which makes ./train_cuda.
# Exits 77 (skipped) where nvcc, cuDNN or cuBLAS are absent.
#   cuda_build.sh VCC MODEL.onnx WORKDIR [vcc options...]
set -u
vcc=$1 model=$2 work=$3
shift 3
command -v nvcc >/dev/null 2>&1 || { echo "skip: nvcc not found"; exit 77; }
cudadir=$(dirname "$(dirname "$(command -v nvcc)")")
found=0
for d in "$cudadir/include" /usr/include /usr/local/include; do [ -f "$d/cudnn.h" ] && found=1; done
[ $found = 1 ] || { echo "skip: cudnn.h not found"; exit 77; }
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
printed=$("$vcc" "$model" -o train.cu "$@") || { echo "FAIL: vcc exited $?"; exit 1; }
first=$(head -n 1 train.cu)
[ "$first" = "// build (from this file's folder): $printed" ] || { echo "FAIL: printed '$printed' but the file says '$first'"; exit 1; }
echo "build: $printed"
sh -c "$printed" > build.log 2>&1
rc=$?
cat build.log
[ $rc = 0 ] || { echo "FAIL: nvcc exited $rc"; exit 1; }
if [ -s build.log ]; then echo "FAIL: nvcc printed diagnostics"; exit 1; fi
[ -x train_cuda ] || { echo "FAIL: no trainer binary train_cuda"; exit 1; }
echo "PASS: built with no warnings"
