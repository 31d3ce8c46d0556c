#!/bin/sh
# Install vcc's dependencies on Debian 12 (as root), build vcc, and run the main job on a real model:
# export torchvision's mc3_18 to ONNX, compile it with vcc into a C trainer (and a CUDA trainer where
# nvcc and cuDNN are installed), build the C trainer and train 5 steps on seeded random clips.
#
#   sh scripts/setup.sh            everything (needs network access to Debian's archive and PyPI)
#   VCC_SKIP_INSTALL=1 sh scripts/setup.sh    build and run only
#
# Outputs: build/vcc, and in build/quickstart/: the export (mc3_18.onnx, mc3_18.pt, data.npy, labels.npy,
# export_info.json), the trainer (train.c, train.safetensors, train, plan.json; train.cu with nvcc) and
# trained.safetensors after the 5 steps.
set -eu
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PY=/usr/bin/python3

if [ "${VCC_SKIP_INSTALL:-0}" != 1 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # build: cmake, C compiler, protobuf-c, flex/bison; CPU trainer: OpenBLAS;
    # reference stack for tests and models/: Debian's PyTorch and torchvision (CPU), numpy, pip
    apt-get install -y -qq --no-install-recommends \
        cmake make gcc libc6-dev pkg-config protobuf-c-compiler libprotobuf-c-dev flex bison \
        libopenblas-dev python3 python3-pip python3-numpy python3-torch python3-torchvision valgrind >/dev/null
    # pinned PyPI packages for the reference tools (Debian's python3 is externally managed)
    $PY -m pip install -q --root-user-action=ignore --break-system-packages onnx==1.17.0 safetensors==0.4.5
fi

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" >/dev/null
echo "built $ROOT/build/vcc ($(build/vcc --version))"

Q=build/quickstart
mkdir -p $Q
$PY models/export_torchvision.py --model mc3_18 --shape 2x3x8x56x56 --samples 4 --seed 0 --out $Q >$Q/export.log
cd $Q
echo "\$ vcc mc3_18.onnx -o train.c --plan-json plan.json"
BUILD=$("$ROOT/build/vcc" mc3_18.onnx -o train.c --plan-json plan.json)
echo "$BUILD"
sh -c "$BUILD"
sed -n '/VCC_ARENA_BYTES =/,/no reuse:/s/^ \*/  /p' train.c
if command -v nvcc >/dev/null 2>&1; then
    echo "\$ vcc mc3_18.onnx -o train.cu"
    CUDA_BUILD=$("$ROOT/build/vcc" mc3_18.onnx -o train.cu)
    echo "$CUDA_BUILD   (a CUDA trainer; run it on a machine with a GPU)"
fi
echo "\$ ./train --data data.npy --labels labels.npy --steps 5 --lr 0.01 --momentum 0.9 --out trained.safetensors"
./train --data data.npy --labels labels.npy --steps 5 --lr 0.01 --momentum 0.9 --out trained.safetensors
