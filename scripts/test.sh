#!/usr/bin/env bash
# Runs Forge's whole test suite: builds (installing what is missing) and runs every test with
# CTest; then the same suite under AddressSanitizer + UndefinedBehaviorSanitizer (CPU only); then
# every libFuzzer target for a bounded time (scripts/fuzz.sh; FORGE_FUZZ_SECONDS each, default 30).
#   scripts/test.sh            the suite, then the sanitizer suite, then the fuzzers
#   scripts/test.sh --quick    the suite only
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=$(nproc)

phase() { echo "== $1 (${SECONDS} s since the start)"; }
scripts/setup.sh --build-only
phase "built"
(cd build && ctest --output-on-failure -j "$JOBS" --timeout 900)
phase "suite passed"

if [ "${1:-}" != "--quick" ]; then
  echo "== sanitizer suite (ASan + UBSan, FORGE_CUDA=OFF) =="
  FORGE_BUILD_DIR=build-asan FORGE_CUDA=OFF FORGE_BUILD_TYPE=RelWithDebInfo \
    FORGE_CMAKE_ARGS="-DFORGE_SANITIZE=ON -DFORGE_BENCH=OFF" scripts/setup.sh --build-only
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --output-on-failure -j "$JOBS" --timeout 1800)
  phase "sanitizer suite passed"
  echo "== fuzzers (scripts/fuzz.sh, ${FORGE_FUZZ_SECONDS:-30} s each) =="
  scripts/fuzz.sh --seconds "${FORGE_FUZZ_SECONDS:-30}" --jobs "$JOBS"
  phase "fuzzers passed"
fi
