# Sourced by the scripts that run on the GPU machine over a carried .gpu/ (scripts/gpu-build.sh):
# the repository root as the working directory, results in $OUT, the binaries in $BIN (their
# libforge.so found there), NVLink multicast off in NCCL (Forge also sets this itself before NCCL
# starts).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${OUT:-/tmp/forge-out}
mkdir -p "$OUT"
BIN=$PWD/.gpu/bin
export LD_LIBRARY_PATH=$BIN:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0
