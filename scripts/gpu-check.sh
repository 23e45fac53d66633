#!/usr/bin/env bash
# Runs on the GPU machine over a carried .gpu/ (scripts/gpu-build.sh): the whole test suite with
# FORGE_REQUIRE_GPU=1 (a skipped GPU test fails; on a machine of N > 1 GPUs FORGE_REQUIRE_GPUS=N,
# so the tensor-parallel tests of up to N GPUs must run too), then the floors; results in $OUT.
#   scripts/gpu-check.sh [gtest filter]
. "$(dirname "$0")/gpu_env.sh"
export FORGE_TESTDATA=$PWD/.gpu/testdata FORGE_BIN=$BIN/forge FORGE_REQUIRE_GPU=1
# On a machine of several GPUs, the multi-GPU (tensor-parallel) tests must run, not skip.
NGPU=$(nvidia-smi -L | grep -c '^GPU')
[ "$NGPU" -gt 1 ] && export FORGE_REQUIRE_GPUS=$NGPU
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv | tee "$OUT/device.txt"
rc=0
# Tests whose oracle is a Debian package (python3-regex, python3-jsonschema, unicodedata of
# Debian's python, prometheus's promtool) run in CI; that machine has none of Debian's packages.
DEBIAN_ORACLES=PreTokenizerTest.SplitsLikePythonRegex:UnicodeDataTest.*:ServerMetricsTest.PromtoolAcceptsAndCountersMoveExactly:\
EngineGrammarTest.ConstrainedSamplesFollowTheirGrammars:GrammarMatchTest.RandomRegularGrammarsMatchPythonRegex:\
JsonSchemaGenerationTest.*:JsonSchemaTest.PatternsMatchPythonSearch:ServerStructuredTest.JsonSchemaRepliesValidateOrArePrefixes:\
ServerStructuredTest.GrammarRegexAndChoiceFields
"$BIN/forge_tests" --gtest_filter="${1:-*}:-$DEBIAN_ORACLES" --gtest_output=json:"$OUT/tests.json" >"$OUT/tests.log" 2>&1 || rc=1
grep -E "^\[  (FAILED|PASSED|SKIPPED) |tests ran" "$OUT/tests.log" | tail -30
"$BIN/forge" bench --floor --device cuda --json "$OUT/floor.json" 2>&1 | tee "$OUT/floor.txt" || rc=1
# The counts last, on one line, so that the tail of the output carries them.
count() {
  local v
  v=$(grep -oE "^\[ +$1 +\] [0-9]+ tests?" "$OUT/tests.log" | grep -oE '[0-9]+' | head -1)
  echo "${v:-0}"
}
echo "gpu-check: $(count PASSED) passed, $(count SKIPPED) skipped, $(count FAILED) failed; exit $rc"
exit $rc
