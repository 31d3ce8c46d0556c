#!/bin/sh
# Run vcc's whole test suite (CTest) in build/, configuring and building first if needed.
# Needs what scripts/setup.sh installs; Python is the project's .venv (setup.sh makes it), else
# /usr/bin/python3, unless build/ was configured with another -DVCC_PYTHON. A build/ configured
# with /usr/bin/python3 (the default before .venv) is switched to .venv where it exists. ONNX node
# conformance data is read from ../shared/onnx-node-tests unless -DVCC_ONNX_NODE_TESTS=... was given.
set -eu
cd "$(dirname "$0")/.."
PY=/usr/bin/python3
[ -x .venv/bin/python ] && PY=$(pwd)/.venv/bin/python
if [ ! -f build/CMakeCache.txt ]; then
    cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DVCC_PYTHON="$PY" >/dev/null
elif [ "$PY" != /usr/bin/python3 ] && grep -qx 'VCC_PYTHON:FILEPATH=/usr/bin/python3' build/CMakeCache.txt; then
    echo "test: build/ used /usr/bin/python3; switching it to $PY"
    cmake -S . -B build -DVCC_PYTHON="$PY" >/dev/null
fi
cmake --build build -j "$(nproc)" >/dev/null
cd build
ctest -j "$(nproc)" --output-on-failure "$@"
