#!/usr/bin/env bash
# Runs Forge's whole test suite: builds (installing what is missing) and runs every test with
# CTest; then the same suite under AddressSanitizer + UndefinedBehaviorSanitizer (CPU only). With
# --fuzz, then every libFuzzer target for a bounded time (scripts/fuzz.sh, a clang build of its
# own; FORGE_FUZZ_SECONDS each, default 30): left out by default to keep CI within its 45 minutes
# on 2 cores (its clang build and runs took 4.5 minutes there); fuzzing campaigns run
# scripts/fuzz.sh itself.
#   scripts/test.sh            the suite, then the sanitizer suite
#   scripts/test.sh --fuzz     the same, then the fuzzers
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
  # The npm packages the tests use are build/'s (setup installs them there once).
  if [ -d build/node ] && [ ! -e build-asan/node ]; then
    mkdir -p build-asan && ln -s ../build/node build-asan/node
  fi
  FORGE_BUILD_DIR=build-asan FORGE_CUDA=OFF FORGE_BUILD_TYPE=RelWithDebInfo \
    FORGE_CMAKE_ARGS="-DFORGE_SANITIZE=ON -DFORGE_BENCH=OFF" scripts/setup.sh --build-only
  # Left out under the sanitizers (they run in the suite above): tests of statistics and of
  # growth rates over many random cases, whose code paths the other tests cover (about 70 s of
  # CI's 2 cores).
  SLOW_UNDER_ASAN='EncodeCostTest|SamplerDistributionTest|Utf8RangesTest\.Random|FillMaskTest\.EqualsBruteForce|LoadGenTest'
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --output-on-failure -j "$JOBS" --timeout 1800 -E "$SLOW_UNDER_ASAN")
  phase "sanitizer suite passed"
fi
if [ "${1:-}" = "--fuzz" ]; then
  echo "== fuzzers (scripts/fuzz.sh, ${FORGE_FUZZ_SECONDS:-30} s each) =="
  scripts/fuzz.sh --seconds "${FORGE_FUZZ_SECONDS:-30}" --jobs "$JOBS"
  phase "fuzzers passed"
fi
