#!/usr/bin/env bash
# Runs on the GPU machine over a carried .gpu/ (scripts/gpu-build.sh): the CUDA backend's
# benchmarks: the floors, the attention kernels alone (forge bench --attention), the decode GEMV
# per weight format (--gemv), and on synthetic Llama-3-8B-shaped models pp512 / tg128 and the
# batched sweep (1, 16, 64, 128 sequences of 512 + 128 tokens), one per format in TYPES (default:
# f16 bf16 q4_0 q4_k_m q6_k q8_0). Results (.txt and .json) in $OUT, named <what>-<device>-<date>.
# SKIP_KERNELS=1 leaves out the floor-independent kernel benches (attention, gemv).
# SERVE=1 adds serving (off by default; SERVE_ONLY=1: serving alone): for each format in
# SERVE_TYPES (default: q4_k_m f16), `forge serve --device cuda` on the 8B-shaped model and
# scripts/load_gen.py --sweep SERVE_SWEEP (1,16,64,128) with SERVE_DURATION (30) s windows after
# SERVE_WARMUP (10) s, 450-token prompts, 128 tokens each; serve-8b-<type>-<device>-<date>.{txt,json}
# and the server's log (.log); SERVE_MAX_QUEUE (256) requests may wait (1024 for overload sweeps
# such as SERVE_SWEEP=128,256,512); SERVE_JSON=1 runs the sweep again against the same server with
# every request constrained to a JSON schema of its client's own (serve-8b-<type>-<device>-<date>-json;
# SERVE_JSON_STRINGS=free: its strings unbounded instead of 4 to 24 characters).
# The server runs up to 128 sequences of a 1024-token context (the KV
# pool holds all of them: 128 x 1024 tokens, 16 GiB in F16 for the 8B shape), steps of up to
# SERVE_BATCH_TOKENS (2048) tokens.
# TP="1 2 4" (or TP_ONLY="..."; degrees up to the GPUs present): the all-reduce latency for one
# step's message sizes (forge bench --allreduce over the most GPUs), then for each format in
# TP_TYPES (default: f16 q4_k_m) pp512 / tg128 and the batched sweep at each tensor-parallel
# degree: bench-8b-<type>-tp<N>-... and batched-8b-<type>-tp<N>-...
. "$(dirname "$0")/gpu_env.sh"
DEV=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | awk '{print tolower($2)}')
DAY=$(date +%F)
MODELS=${MODELS:-/tmp/forge-models}
mkdir -p "$MODELS"
rc=0
[ -n "${SERVE_ONLY:-}" ] && SERVE=1 && TYPES=" " && SKIP_KERNELS=1 && SKIP_FLOOR=1
[ -n "${TP_ONLY:-}" ] && TP=$TP_ONLY && TYPES=" " && SKIP_KERNELS=1 && SKIP_FLOOR=1
[ -n "${SKIP_FLOOR:-}" ] || "$BIN/forge" bench --floor --device cuda --json "$OUT/floor-$DEV-$DAY.json" | tee "$OUT/floor-$DEV-$DAY.txt" || rc=1
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

# Tensor parallelism: the all-reduce alone, then the models at each degree.
if [ -n "${TP:-}" ]; then
  top=$(echo $TP | tr ' ' '\n' | sort -n | tail -1)
  [ "$top" -gt 1 ] && { "$BIN/forge" bench --allreduce --device cuda --tensor-parallel "$top" \
    --json "$OUT/allreduce-tp$top-$DEV-$DAY.json" 2>&1 | tee "$OUT/allreduce-tp$top-$DEV-$DAY.txt" || rc=1; }
  for type in ${TP_TYPES:-f16 q4_k_m}; do
    m=$MODELS/llama-3-8b-$type.gguf
    [ -f "$m" ] || "$BIN/forge" make-model --preset llama-3-8b --type "$type" "$m" >/dev/null || rc=1
    for n in $TP; do
      "$BIN/forge" bench -m "$m" --device cuda --tensor-parallel "$n" -p 512 -n 128 -r 3 \
        --json "$OUT/bench-8b-$type-tp$n-$DEV-$DAY.json" 2>&1 | tee "$OUT/bench-8b-$type-tp$n-$DEV-$DAY.txt" || rc=1
      "$BIN/forge" bench -m "$m" --device cuda --tensor-parallel "$n" --batched --seqs "${SEQS:-1,16,64,128}" \
        --pp 512 --tg 128 --json "$OUT/batched-8b-$type-tp$n-$DEV-$DAY.json" 2>&1 \
        | tee "$OUT/batched-8b-$type-tp$n-$DEV-$DAY.txt" || rc=1
    done
  done
fi

# Serving: one server per format, the load generator's sweep against it.
serve_sweep() {  # $1: weight format
  local m=$MODELS/llama-3-8b-$1.gguf port=${SERVE_PORT:-8090} name=serve-8b-$1-$DEV-$DAY
  [ -f "$m" ] || "$BIN/forge" make-model --preset llama-3-8b --type "$1" "$m" >/dev/null || return 1
  "$BIN/forge" serve -m "$m" --device cuda --host 127.0.0.1 --port "$port" --parallel 128 \
    --max-queue "${SERVE_MAX_QUEUE:-256}" -c 1024 --batch-tokens "${SERVE_BATCH_TOKENS:-2048}" --http-threads 4 \
    2>"$OUT/$name.log" &
  local pid=$! ok=1
  python3 - "$port" <<'PY' || ok=0
import sys, time, urllib.request
for _ in range(1200):  # up to 10 minutes of loading
    try:
        if urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/health", timeout=2).status == 200:
            sys.exit(0)
    except OSError:
        pass
    time.sleep(0.5)
sys.exit(1)
PY
  if [ $ok = 1 ] && kill -0 $pid 2>/dev/null; then
    python3 scripts/load_gen.py --port "$port" --sweep "${SERVE_SWEEP:-1,16,64,128}" \
      --duration "${SERVE_DURATION:-30}" --warmup "${SERVE_WARMUP:-10}" --prompt-tokens 450 \
      --max-tokens 128 --json "$OUT/$name.json" 2>&1 | tee "$OUT/$name.txt" || ok=0
    if [ -n "${SERVE_JSON:-}" ]; then  # the same sweep, every request constrained by a schema
      python3 scripts/load_gen.py --port "$port" --sweep "${SERVE_SWEEP:-1,16,64,128}" \
        --duration "${SERVE_DURATION:-30}" --warmup "${SERVE_WARMUP:-10}" --prompt-tokens 450 \
        --max-tokens 128 --json-schema "${SERVE_JSON_STRINGS:-bounded}" --json "$OUT/$name-json.json" \
        2>&1 | tee "$OUT/$name-json.txt" || ok=0
    fi
  else
    echo "serve ($1): the server did not come up; see $OUT/$name.log" >&2
  fi
  kill -TERM $pid 2>/dev/null
  wait $pid
  tail -2 "$OUT/$name.log"
  [ $ok = 1 ]
}
if [ -n "${SERVE:-}" ]; then
  for type in ${SERVE_TYPES:-q4_k_m f16}; do serve_sweep "$type" || rc=1; done
fi
exit $rc
