#!/usr/bin/env bash
# Runs the vendor baselines (cuBLASLt, cuBLAS, cuSPARSE; M = K = 4096, N = 256, 512) on this
# machine's GPU and prints a Markdown table. Builds build/bin/magicube_baselines first if it
# is missing. Arguments go to the binary (-v: list every configuration tried).
# With a GPU, a copy of the output goes to bench/results/baselines-<host>-<UTC time>.md.
# MAGICUBE_LOG_LEVEL=debug logs each configuration (and the libraries' refusals) to stderr.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
bin="$build/bin/magicube_baselines"

if [[ ! -x "$bin" ]]; then
  export PATH=/usr/local/cuda/bin:$PATH
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" --target magicube_baselines
fi

if [[ -d /usr/local/cuda/lib64 ]]; then
  export LD_LIBRARY_PATH="/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi

cd "$build/bin"
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
rc=0
./magicube_baselines "$@" | tee "$out" || rc=$?
if [[ $rc -eq 0 ]] && ! grep -q '^no CUDA device:' "$out"; then
  mkdir -p "$root/bench/results"
  cp "$out" "$root/bench/results/baselines-$(hostname -s)-$(date -u +%Y%m%d-%H%M%S).md"
fi
exit $rc
