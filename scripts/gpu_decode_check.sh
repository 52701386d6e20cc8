#!/usr/bin/env bash
# The decode kernel (spmm-decode, N <= 64) on a GPU machine, from carried binaries, in one
# call: its GPU tests, then `magicube run` timings of LLM decode shapes with the L2 flushed
# before each timed launch (the weight streams from HBM, as in a model): the dispatch's
# choice (the policy picks decode for N <= 64; route auto), the decode kernel pinned
# (--decode, sparse route), the previous kernels (--resident=false: the ring kernel the policy
# chose before), and the dense route (cuBLASLt int8) for reference; and, when magicube-bench
# was carried, its LLM section (quick grid, L2 flushed, the Targets table).
# Logs and a summary (runs.txt) go to $OUT (or ./gpu-decode-logs).
# Usage: bash scripts/gpu_decode_check.sh BIN_DIR        (e.g. build/bin)
set -u
bin=${1:?usage: gpu_decode_check.sh BIN_DIR}
out=${OUT:-gpu-decode-logs}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$bin/../lib:${LD_LIBRARY_PATH:-}
export MAGICUBE_CACHE_DIR=${MAGICUBE_CACHE_DIR:-/tmp/magicube-gpu-decode}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
date -u | tee -a "$out/gpu.txt"
status=0

# 1. Tests that touch the decode kernel (bit-exact against the int64 CPU reference).
for t in "test_spmm_gpu:*Decode*:*Resident*" "test_epilogue_gpu:*Decode*" "test_autotune:*Decode*" "test_codegen:*Decode*:*d_pf*"; do
  name=${t%%:*}
  filter=${t#*:}
  [ -x "$bin/$name" ] || { echo "$name: not carried"; continue; }
  MAGICUBE_CLI_PATH="$bin/magicube" timeout 300 "$bin/$name" --gtest_filter="$filter" > "$out/$name.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || status=1
  printf "%-18s rc=%d  %s\n" "$name" $rc "$(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/$name.log" | tr '\n' ' ')"
done | tee "$out/tests.txt"
grep -q "rc=[1-9]" "$out/tests.txt" && status=1

# 2. Timings (L2 flushed before each timed launch): V=8 s8 x s8, int32.
run() {
  local label=$1
  shift
  local o
  o=$("$bin/magicube" run --lhs=s8 --rhs=s8 --v=8 --repeat=50 --flush-l2 "$@" 2>&1)
  local plan time exact route
  plan=$(echo "$o" | grep -m1 -E "^plan " | awk '{print $2}')
  route=$(echo "$o" | grep -m1 -E "^route " | awk '{print $2}')
  [ -n "$route" ] && plan="$plan ($route)"
  time=$(echo "$o" | grep -m1 -E "^time" | sed 's/^time *//' | cut -d'(' -f1)
  [ -n "$plan" ] || plan="error: $(echo "$o" | tail -1 | cut -c1-100)"
  exact=$(echo "$o" | grep -m1 -E "^exact" | sed 's/^exact: *//' | cut -c1-60)
  printf "%-9s %-62s %-44s | %s | exact %s\n" "$label" "$*" "$plan" "$time" "$exact"
  echo "$o" >> "$out/runs_full.log"
}
{
  for mk in "4096 4096" "11008 4096"; do
    set -- $mk
    for s in 0.5 0.7 0.9; do
      for n in 1 8 16 64; do
        args="--m=$1 --k=$2 --sparsity=$s --n=$n"
        run dispatch $args
        run decode $args --decode --route=sparse
        run previous $args --resident=false --route=sparse
        run dense $args --route=dense
      done
    done
  done
  # The other decode shapes at N=16 (K=14336 keeps 16 columns a slice: 224 KiB of B).
  for mk in "4096 11008" "14336 4096" "4096 14336"; do
    set -- $mk
    for s in 0.5 0.7; do
      run dispatch --m=$1 --k=$2 --sparsity=$s --n=16
      run previous --m=$1 --k=$2 --sparsity=$s --n=16 --resident=false --route=sparse
    done
  done
} | tee "$out/runs.txt"
grep -q "exact no" "$out/runs.txt" && status=1

# 3. The bench's LLM section (quick grid: 4096x4096 and 11008x4096 at decode N, L2 flushed;
#    ours through the dispatch and its route, dense cuBLASLt beside; its Targets table).
if [ -x "$bin/magicube-bench" ]; then
  timeout 240 "$bin/magicube-bench" --sections=llm --llm-grid=quick --no-plots --out-dir="$out/bench-llm" \
    > "$out/bench-llm.log" 2>&1
  echo "magicube-bench --sections=llm --llm-grid=quick rc=$? (results in $out/bench-llm/)" | tee -a "$out/runs.txt"
fi
exit $status
