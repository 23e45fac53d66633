#!/usr/bin/env bash
# Builds build-gpu/ for the GPU machine (sm_90a; CUDA libraries dynamic, Debian's static) and
# stages the test data that travels with it in .gpu/ (git-ignored; pass both in `carry`).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DFORGE_CUDA=ON -DFORGE_BENCH=OFF >/dev/null
ninja -C build-gpu forge forge_cli forge_tests
strip --strip-unneeded build-gpu/src/libforge.so build-gpu/apps/forge/forge build-gpu/tests/forge_tests
# Only what the GPU machine runs travels: the binaries and the test data.
rm -rf .gpu && mkdir -p .gpu/bin .gpu/testdata
cp build-gpu/src/libforge.so build-gpu/apps/forge/forge build-gpu/tests/forge_tests .gpu/bin/
cp -r ../shared/testdata/. .gpu/testdata/
du -sh .gpu
