#!/usr/bin/env bash
# The first run (the end of scripts/setup.sh): makes a small synthetic model whose vocabulary is
# English words (peaked, so its greedy text is a stable sequence of words), generates from it,
# measures its speed beside this machine's floor, and says what to do next.
#   scripts/first_run.sh [BUILD_DIR [WORK_DIR]]   (defaults: build, BUILD_DIR)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
WORK=${2:-$BUILD}
FORGE="${FORGE_BIN:-$BUILD/apps/forge/forge}"  # FORGE_BIN: a binary elsewhere (the GPU runs)
MODEL="$WORK/first-run-words.gguf"
PROMPT="once upon a time"
mkdir -p "$WORK"

made=$("$FORGE" make-model "$MODEL" --preset tiny --type q8_0 --peaked --vocab words \
       --name forge-words)
text=$("$FORGE" run -m "$MODEL" -p "$PROMPT" -n 24 --temp 0 2>/dev/null)
"$FORGE" bench -m "$MODEL" -p 64 -n 32 -r 1 --json "$WORK/first-run-bench.json" >/dev/null 2>&1
read -r backend threads tg tg_floor pp pp_floor < <(python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
print(j["backend"], j["threads"], "%.1f" % j["tg_tokens_per_s"], "%.1f" % j["tg_floor_tokens_per_s"],
      "%.0f" % j["pp_tokens_per_s"], "%.0f" % j["pp_floor_tokens_per_s"])' "$WORK/first-run-bench.json")
percent() { python3 -c 'import sys; a, b = map(float, sys.argv[1:]); print("%.0f%%" % (100 * a / b) if b > 0 else "-")' "$1" "$2"; }
device="$backend"
[ "$backend" = "cpu" ] && device="cpu, $threads threads"

cat <<MSG

== Forge is ready ==
Built:      $FORGE (the forge tool; libforge.so beside it; the test suite: scripts/test.sh)
Model:      ${made#wrote }
            a synthetic model, not a trained one: its vocabulary is English words and its
            weights send each word to one next word, so greedy text is readable (and says nothing)
Generation: forge run -m $MODEL -p "$PROMPT" -n 24 --temp 0
            $PROMPT ->${text}
Speed ($device): decode $tg tokens/s, floor $tg_floor tokens/s ($(percent "$tg" "$tg_floor") of the floor);
            prefill $pp tokens/s, floor $pp_floor tokens/s ($(percent "$pp" "$pp_floor"))
            (the floor: the time to read every weight once per token at this machine's measured
            memory bandwidth; prefill: the model's FLOPs at its measured matmul rate)
Next:
  1. Run your own GGUF model:
       $FORGE run -m MODEL.gguf -p "Once upon a time" -n 64
  2. Serve it and open the page (chat, live operations, the model's facts):
       $FORGE serve -m MODEL.gguf --port 8080    then open http://127.0.0.1:8080/
MSG
