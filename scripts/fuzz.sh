#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan, CPU only) in build-fuzz/, writes the seed
# corpora (fuzz/make_seeds.cc: made by Forge's own GGUF writer and model maker, nothing downloaded)
# and runs every fuzz/<name>_fuzz.cc target for a bounded time; fails if one finds a crash, a leak,
# a timeout or an out-of-memory, and prints executions and coverage per target.
#   scripts/fuzz.sh [--seconds N] [--jobs J] [--timeout S] [--only a,b] [--no-build] [--fresh]
#     --seconds N   fuzzing time per target (default 60)
#     --jobs J      build parallelism (default: nproc)
#     --timeout S   libFuzzer's per-input timeout in seconds (default 30)
#     --only a,b    run these targets only (names as in forge_fuzz_<name>)
#     --no-build    use the binaries already in the build folder
#     --fresh       start each target's corpus (.fuzz/<name>) empty
# Per target: corpus .fuzz/<name> (grows across runs; new inputs go there), seeds from
# fuzz/seeds/<name> (committed, when present) and .fuzz/seeds/<name> (generated), dictionary
# fuzz/<name>.dict and max_len from fuzz/<name>.options ("max_len = N") when present. Crash
# inputs are written as .fuzz/artifacts/<name>-crash-*, logs to .fuzz/logs/<name>.log.
# Environment: FORGE_FUZZ_BUILD_DIR (default build-fuzz), FORGE_TESTDATA (default
# ../shared/testdata: used when present, for the tokenizer fuzzer's vocabs and seed texts).
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_PER_TARGET=60
JOBS=$(nproc)
TIMEOUT=30
ONLY=""
BUILD_IT=1
FRESH=0
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) SECONDS_PER_TARGET=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    --no-build) BUILD_IT=0; shift ;;
    --fresh) FRESH=1; shift ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "fuzz.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

BUILD=${FORGE_FUZZ_BUILD_DIR:-build-fuzz}
TESTDATA=${FORGE_TESTDATA:-../shared/testdata}
WORK=.fuzz

# The targets: every fuzz/<name>_fuzz.cc (fuzz/CMakeLists.txt makes forge_fuzz_<name> of it).
targets=()
for src in fuzz/*_fuzz.cc; do
  name=$(basename "$src" _fuzz.cc)
  if [ -n "$ONLY" ] && [[ ",$ONLY," != *",$name,"* ]]; then continue; fi
  targets+=("$name")
done
if [ ${#targets[@]} -eq 0 ]; then
  echo "fuzz.sh: no targets (fuzz/*_fuzz.cc, --only '$ONLY')" >&2
  exit 2
fi

if [ "$BUILD_IT" = 1 ]; then
  command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ not found (scripts/setup.sh installs it)" >&2; exit 2; }
  build_start=$(date +%s)
  # -O1 -g1 without NDEBUG: DCHECKs on, line numbers in the sanitizers' reports.
  CC=clang CXX=clang++ cmake -S . -B "$BUILD" -G Ninja -DFORGE_FUZZ=ON -DFORGE_CUDA=OFF \
    -DFORGE_TESTS=OFF -DFORGE_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1" >/dev/null
  ninja_targets=(forge_make_fuzz_seeds)
  for t in "${targets[@]}"; do ninja_targets+=("forge_fuzz_$t"); done
  ninja -C "$BUILD" -j "$JOBS" "${ninja_targets[@]}"
  echo "fuzz.sh: fuzz build took $(( $(date +%s) - build_start )) s"
fi

# Seeds, made afresh every run.
seed_args=()
[ -d "$TESTDATA" ] && seed_args=(--testdata "$TESTDATA")
"$BUILD/fuzz/forge_make_fuzz_seeds" "$WORK/seeds" "${seed_args[@]}"
# The tokenizer fuzzer's synthetic vocabs, after the test data's when those are present (byte-
# fallback SPM and byte-level BPE: decode(encode(text)) must give valid UTF-8 text back).
vocabs=""
for v in spm llama3 qwen2; do vocabs+="${vocabs:+:}$PWD/$WORK/seeds/vocabs/$v.gguf=lossless"; done
export FORGE_FUZZ_VOCABS=$vocabs
[ -d "$TESTDATA" ] && export FORGE_TESTDATA=$(cd "$TESTDATA" && pwd)
# UBSan findings abort (the fuzz build does not pass -fno-sanitize-recover); leaks are checked;
# one allocation past -rss_limit_mb is an out-of-memory finding.
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export ASAN_OPTIONS=detect_leaks=1

max_len_of() {
  local name=$1 options="fuzz/$1.options"
  if [ -f "$options" ] && grep -qE '^\s*max_len\s*=' "$options"; then
    grep -E '^\s*max_len\s*=' "$options" | head -1 | sed -E 's/[^0-9]*([0-9]+).*/\1/'
    return
  fi
  case "$name" in
    gguf) echo 4096 ;;        # a small model's header, tokenizer and a few tensors
    tokenizer) echo 1024 ;;   # 2 bytes of vocab and flags, then text
    http) echo 8192 ;;        # a few pipelined requests with bodies (its limits: 4 KiB heads)
    *) echo 4096 ;;
  esac
}

mkdir -p "$WORK/logs" "$WORK/artifacts"
declare -A RESULT EXECS RATE COV FT CORP NEWU RSS ELAPSED
failed=0
for name in "${targets[@]}"; do
  bin="$BUILD/fuzz/forge_fuzz_$name"
  log="$WORK/logs/$name.log"
  if [ ! -x "$bin" ]; then
    echo "fuzz.sh: $bin is missing" >&2
    RESULT[$name]=MISSING; failed=1; continue
  fi
  corpus="$WORK/$name"
  [ "$FRESH" = 1 ] && rm -rf "$corpus"
  mkdir -p "$corpus"
  dirs=("$corpus")
  [ -d "fuzz/seeds/$name" ] && dirs+=("fuzz/seeds/$name")
  [ -d "$WORK/seeds/$name" ] && dirs+=("$WORK/seeds/$name")
  args=(-max_total_time="$SECONDS_PER_TARGET" -timeout="$TIMEOUT" -rss_limit_mb=2560
        -max_len="$(max_len_of "$name")" -print_final_stats=1
        -artifact_prefix="$WORK/artifacts/$name-")
  [ -f "fuzz/$name.dict" ] && args+=(-dict="fuzz/$name.dict")
  rm -f "$WORK/artifacts/$name-"*
  dict=none
  [ -f "fuzz/$name.dict" ] && dict="fuzz/$name.dict"
  echo "== forge_fuzz_$name: ${SECONDS_PER_TARGET} s, max_len $(max_len_of "$name"), dict $dict, corpus ${dirs[*]}"
  start=$(date +%s)
  rc=0
  # A hard bound too, in case the target hangs outside libFuzzer's timers (in its initializer).
  timeout --signal=KILL $(( SECONDS_PER_TARGET * 2 + TIMEOUT + 120 )) \
    "$bin" "${args[@]}" "${dirs[@]}" >"$log" 2>&1 || rc=$?
  ELAPSED[$name]=$(( $(date +%s) - start ))
  EXECS[$name]=$(grep -oE 'stat::number_of_executed_units: +[0-9]+' "$log" | tail -1 | grep -oE '[0-9]+$' || echo -)
  RATE[$name]=$(grep -oE 'stat::average_exec_per_sec: +[0-9]+' "$log" | tail -1 | grep -oE '[0-9]+$' || echo -)
  NEWU[$name]=$(grep -oE 'stat::new_units_added: +[0-9]+' "$log" | tail -1 | grep -oE '[0-9]+$' || echo -)
  RSS[$name]=$(grep -oE 'stat::peak_rss_mb: +[0-9]+' "$log" | tail -1 | grep -oE '[0-9]+$' || echo -)
  covft=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1 || true)
  COV[$name]=$(echo "$covft" | awk '{print $2}'); COV[$name]=${COV[$name]:--}
  FT[$name]=$(echo "$covft" | awk '{print $4}'); FT[$name]=${FT[$name]:--}
  CORP[$name]=$(grep -oE 'corp: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+$' || echo -)
  artifacts=$(ls "$WORK/artifacts/$name-"* 2>/dev/null || true)
  if [ "$rc" -eq 0 ] && [ -z "$artifacts" ] && ! grep -qE '^==[0-9]+==ERROR|^SUMMARY: (Address|Undefined|Leak)|runtime error:' "$log"; then
    RESULT[$name]=ok
  else
    failed=1
    kind=$(grep -oE 'ERROR: libFuzzer: [a-z-]+|ERROR: (AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer): [a-zA-Z-]+|runtime error' "$log" | head -1 || true)
    [ "$rc" -eq 137 ] && kind="killed: ran past the hard bound"
    RESULT[$name]="FAIL(rc $rc)"
    echo "fuzz.sh: forge_fuzz_$name failed (rc $rc): ${kind:-see $log}" >&2
    if [ -n "$artifacts" ]; then
      echo "fuzz.sh: reproduce with: FORGE_TESTDATA=${FORGE_TESTDATA:-/none}" \
        "FORGE_FUZZ_VOCABS=$FORGE_FUZZ_VOCABS $bin $(echo $artifacts | head -c 400)" >&2
    fi
    echo "---- last 60 lines of $log ----" >&2
    tail -60 "$log" >&2
    echo "----" >&2
  fi
done

echo
echo "== fuzz summary (${SECONDS_PER_TARGET} s per target; cov/ft: libFuzzer's last stats line) =="
printf '%-22s %-12s %7s %10s %8s %7s %7s %7s %7s %8s\n' target result seconds execs exec/s cov ft corpus new peakMB
for name in "${targets[@]}"; do
  printf '%-22s %-12s %7s %10s %8s %7s %7s %7s %7s %8s\n' "forge_fuzz_$name" "${RESULT[$name]}" \
    "${ELAPSED[$name]:--}" "${EXECS[$name]:--}" "${RATE[$name]:--}" "${COV[$name]:--}" \
    "${FT[$name]:--}" "${CORP[$name]:--}" "${NEWU[$name]:--}" "${RSS[$name]:--}"
done
exit $failed
