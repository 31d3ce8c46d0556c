#!/bin/sh
# Run vcc's whole test suite (CTest) in build/, configuring and building first if needed.
# Needs what scripts/setup.sh installs. ONNX node conformance data is read from ../shared/onnx-node-tests
# unless -DVCC_ONNX_NODE_TESTS=... was given at configure time.
set -eu
cd "$(dirname "$0")/.."
[ -f build/CMakeCache.txt ] || cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" >/dev/null
cd build
ctest -j "$(nproc)" --output-on-failure "$@"
