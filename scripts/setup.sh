#!/bin/sh
# Install vcc's dependencies on Debian 12 (as root), build vcc, and run the main job on a real model:
# export torchvision's mc3_18 to ONNX, compile it with vcc into a C trainer (and a CUDA trainer where
# nvcc and cuDNN are installed), build the C trainer, train 5 steps on seeded random clips and evaluate
# the trained weights with the evaluation program.
#
#   sh scripts/setup.sh            everything (needs network access to Debian's archive and PyPI)
#   sh scripts/setup.sh --deps     only the Debian packages and the Python environment .venv
#   VCC_SKIP_INSTALL=1 sh scripts/setup.sh    build and run only
#
# Python: the project's virtual environment .venv (at the repository root), created with
# --system-site-packages over Debian's python3-torch, python3-torchvision and python3-numpy, with
# the pinned PyPI packages of python/requirements.txt (onnx, onnxruntime, safetensors) installed into
# it, never into the system interpreter. Its packages come first on its sys.path, so a Debian
# python3-onnx installed system-wide does not shadow them. An existing .venv is reused (pip only
# checks the pins); one that is broken or lacks the system site packages is made anew.
# build/ is configured with -DVCC_PYTHON=.venv/bin/python.
#
# Outputs: build/vcc, and in build/quickstart/: the export (mc3_18.onnx, mc3_18.pt, data.npy, labels.npy,
# export_info.json), the trainer (train.c, train.safetensors, train, plan.json; train.cu with nvcc) and
# trained.safetensors after the 5 steps; the evaluation program (eval.c, eval).
set -eu
cd "$(dirname "$0")/.."
ROOT=$(pwd)
VENV=$ROOT/.venv
DEPS_ONLY=0
case "${1:-}" in
    --deps) DEPS_ONLY=1 ;;
    "") ;;
    *) echo "usage: sh scripts/setup.sh [--deps]" >&2; exit 2 ;;
esac

# a usable project environment: its python runs, is a venv, and sees Debian's torch
venv_ok() {
    [ -x "$VENV/bin/python" ] && grep -qx 'include-system-site-packages = true' "$VENV/pyvenv.cfg" 2>/dev/null &&
        "$VENV/bin/python" -c 'import sys, torch; sys.exit(sys.prefix == sys.base_prefix)' 2>/dev/null
}

if [ "${VCC_SKIP_INSTALL:-0}" != 1 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # build: cmake, C compiler, protobuf-c, flex/bison; CPU trainer: OpenBLAS (and its OpenMP build,
    # which the trainers link where it is there: README, --threads) and oneDNN (libdnnl 2.6,
    # the C trainer's convolutions with vcc --cpu-conv dnnl; the default im2col builds without it);
    # reference stack for tests and models/: Debian's PyTorch and torchvision (CPU), numpy, venv, pip
    apt-get install -y -qq --no-install-recommends \
        cmake make gcc libc6-dev pkg-config protobuf-c-compiler libprotobuf-c-dev flex bison \
        libopenblas-dev libopenblas-openmp-dev libdnnl-dev python3 python3-venv python3-pip python3-numpy python3-torch python3-torchvision \
        valgrind >/dev/null
    if ! venv_ok; then
        [ -e "$VENV" ] && echo "setup: $VENV is not a usable environment; making it anew"
        /usr/bin/python3 -m venv --clear --system-site-packages "$VENV"
    fi
    # pinned PyPI packages, into the environment only
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check --root-user-action=ignore \
        -r python/requirements.txt
    "$VENV/bin/python" -c 'import torch, torchvision, numpy, onnx, onnxruntime, safetensors
print("python env %s: torch %s, torchvision %s, numpy %s, onnx %s, onnxruntime %s, safetensors %s" % (
    __import__("sys").prefix, torch.__version__, torchvision.__version__, numpy.__version__, onnx.__version__,
    onnxruntime.__version__, safetensors.__version__))'
fi
[ "$DEPS_ONLY" = 1 ] && exit 0

if [ -x "$VENV/bin/python" ]; then
    PY=$VENV/bin/python
else
    PY=/usr/bin/python3
    echo "setup: no $VENV (run without VCC_SKIP_INSTALL=1 to make it); using $PY"
fi

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DVCC_PYTHON="$PY" >/dev/null
cmake --build build -j "$(nproc)" >/dev/null
echo "built $ROOT/build/vcc ($(build/vcc --version))"

Q=build/quickstart
mkdir -p $Q
"$PY" models/export_torchvision.py --model mc3_18 --shape 2x3x8x56x56 --samples 4 --seed 0 --out $Q >$Q/export.log
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
echo "\$ vcc mc3_18.onnx --eval -o eval.c    (the evaluation program: BatchNormalization with its running statistics)"
EVAL_BUILD=$("$ROOT/build/vcc" mc3_18.onnx --eval -o eval.c)
sh -c "$EVAL_BUILD"
echo "\$ ./eval --data data.npy --labels labels.npy --weights trained.safetensors"
./eval --data data.npy --labels labels.npy --weights trained.safetensors
