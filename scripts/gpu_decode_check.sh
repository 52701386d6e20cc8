#!/usr/bin/env bash
# The decode kernel (spmm-decode, N <= 64) on a GPU machine, from carried binaries, in one
# call: its GPU tests, then `magicube run` timings of LLM decode shapes with the dispatch's
# choice (the policy picks decode for N <= 64), with --decode pinned, and with the previous
# kernels (--resident=false: the ring kernel the policy chose before), and, when
# magicube-bench was carried, the synthetic M=K=4096 set at N = 1, 8, 16, 64 with L2 flushed.
# Logs and a summary go to $OUT (or ./gpu-decode-logs).
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

# 2. Timings (warm L2, as `magicube run` times): V=8 s8 x s8, int32.
run() {
  local label=$1
  shift
  local o
  o=$("$bin/magicube" run --lhs=s8 --rhs=s8 --v=8 --repeat=50 "$@" 2>&1)
  local plan time exact
  plan=$(echo "$o" | grep -m1 -E "^plan " | awk '{print $2}')
  time=$(echo "$o" | grep -m1 -E "^time" | sed 's/^time *//' | cut -d'(' -f1)
  [ -n "$plan" ] || plan="error: $(echo "$o" | tail -1 | cut -c1-100)"
  exact=$(echo "$o" | grep -m1 -E "^exact" | sed 's/^exact: *//' | cut -c1-60)
  printf "%-9s %-44s %-34s | %s | exact %s\n" "$label" "$*" "$plan" "$time" "$exact"
  echo "$o" >> "$out/runs_full.log"
}
{
  for mk in "4096 4096" "11008 4096"; do
    set -- $mk
    for s in 0.5 0.7 0.9; do
      for n in 1 8 16 64; do
        args="--m=$1 --k=$2 --sparsity=$s --n=$n"
        run dispatch $args
        run decode $args --decode
        run previous $args --resident=false
      done
    done
  done
  # The other decode shapes at N=16 (K=14336 keeps 16 columns a slice: 224 KiB of B).
  for mk in "4096 11008" "14336 4096" "4096 14336"; do
    set -- $mk
    for s in 0.5 0.7; do
      run dispatch --m=$1 --k=$2 --sparsity=$s --n=16
      run previous --m=$1 --k=$2 --sparsity=$s --n=16 --resident=false
    done
  done
} | tee "$out/runs.txt"
grep -q "exact no" "$out/runs.txt" && status=1

# 3. L2 flushed before every timed call, with dense cuBLASLt int8 beside (magicube-bench).
if [ -x "$bin/magicube-bench" ]; then
  timeout 240 "$bin/magicube-bench" --sections=synthetic --filter=L8-R8 --v=8 --n=1,8,16,64 --l2=flush --no-plots \
    --repeat=50 --out-dir="$out/bench-flush" > "$out/bench-flush.log" 2>&1
  echo "magicube-bench --l2=flush rc=$? (results in $out/bench-flush/)" | tee -a "$out/runs.txt"
fi
exit $status
