#!/usr/bin/env bash
# Runs on the GPU machine over a carried .gpu/ (scripts/gpu-build.sh): the CUDA backend's
# benchmarks: the floors, the attention kernels alone (forge bench --attention), the decode GEMV
# per weight format (--gemv), and on synthetic Llama-3-8B-shaped models pp512 / tg128 and the
# batched sweep (1, 16, 64, 128 sequences of 512 + 128 tokens), one per format in TYPES (default:
# f16 bf16 q4_0 q4_k_m q6_k q8_0). Results (.txt and .json) in $OUT, named <what>-<device>-<date>.
# SKIP_KERNELS=1 leaves out the floor-independent kernel benches (attention, gemv).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/forge-out}
mkdir -p "$OUT"
BIN=$PWD/.gpu/bin
export LD_LIBRARY_PATH=$BIN:${LD_LIBRARY_PATH:-}
DEV=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | awk '{print tolower($2)}')
DAY=$(date +%F)
MODELS=${MODELS:-/tmp/forge-models}
mkdir -p "$MODELS"
rc=0
"$BIN/forge" bench --floor --device cuda --json "$OUT/floor-$DEV-$DAY.json" | tee "$OUT/floor-$DEV-$DAY.txt" || rc=1
[ -n "${SKIP_KERNELS:-}" ] || "$BIN/forge" bench --attention --device cuda --json "$OUT/attention-$DEV-$DAY.json" | tee "$OUT/attention-$DEV-$DAY.txt" || rc=1
[ -n "${SKIP_KERNELS:-}" ] || "$BIN/forge" bench --gemv --device cuda --json "$OUT/gemv-$DEV-$DAY.json" | tee "$OUT/gemv-$DEV-$DAY.txt" || rc=1
for type in ${TYPES:-f16 bf16 q4_0 q4_k_m q6_k q8_0}; do
  m=$MODELS/llama-3-8b-$type.gguf
  [ -f "$m" ] || "$BIN/forge" make-model --preset llama-3-8b --type "$type" "$m" >/dev/null || rc=1
  "$BIN/forge" bench -m "$m" --device cuda -p 512 -n 128 -r 3 --json "$OUT/bench-8b-$type-cuda-$DEV-$DAY.json" \
    2>&1 | tee "$OUT/bench-8b-$type-cuda-$DEV-$DAY.txt" || rc=1
  "$BIN/forge" bench -m "$m" --device cuda --batched --seqs "${SEQS:-1,16,64,128}" --pp 512 --tg 128 \
    --json "$OUT/batched-8b-$type-cuda-$DEV-$DAY.json" 2>&1 | tee "$OUT/batched-8b-$type-cuda-$DEV-$DAY.txt" || rc=1
done
exit $rc
