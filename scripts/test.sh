#!/usr/bin/env bash
# Runs Forge's whole test suite: builds (installing what is missing) and runs every test with
# CTest; then the same suite under AddressSanitizer + UndefinedBehaviorSanitizer (CPU only); then
# every libFuzzer target for a bounded time (scripts/fuzz.sh; FORGE_FUZZ_SECONDS each, default 60).
#   scripts/test.sh            the suite, then the sanitizer suite, then the fuzzers
#   scripts/test.sh --quick    the suite only
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=$(nproc)

scripts/setup.sh --build-only
(cd build && ctest --output-on-failure -j "$JOBS" --timeout 900)

if [ "${1:-}" != "--quick" ]; then
  echo "== sanitizer suite (ASan + UBSan, FORGE_CUDA=OFF) =="
  FORGE_BUILD_DIR=build-asan FORGE_CUDA=OFF FORGE_BUILD_TYPE=RelWithDebInfo \
    FORGE_CMAKE_ARGS="-DFORGE_SANITIZE=ON -DFORGE_BENCH=OFF" scripts/setup.sh --build-only
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --output-on-failure -j "$JOBS" --timeout 1800)
  echo "== fuzzers (scripts/fuzz.sh, ${FORGE_FUZZ_SECONDS:-60} s each) =="
  scripts/fuzz.sh --seconds "${FORGE_FUZZ_SECONDS:-60}" --jobs "$JOBS"
fi
