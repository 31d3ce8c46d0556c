#!/bin/sh
# Run vcc's whole test suite (CTest) in build/, configuring and building first if needed.
# Needs what scripts/setup.sh installs; Python is the project's .venv (setup.sh makes it), else
# /usr/bin/python3, unless build/ was configured with another -DVCC_PYTHON. ONNX node conformance
# data is read from ../shared/onnx-node-tests unless -DVCC_ONNX_NODE_TESTS=... was given at configure time.
set -eu
cd "$(dirname "$0")/.."
if [ ! -f build/CMakeCache.txt ]; then
    PY=/usr/bin/python3
    [ -x .venv/bin/python ] && PY=$(pwd)/.venv/bin/python
    cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DVCC_PYTHON="$PY" >/dev/null
fi
cmake --build build -j "$(nproc)" >/dev/null
cd build
ctest -j "$(nproc)" --output-on-failure "$@"
