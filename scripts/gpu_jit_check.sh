#!/usr/bin/env bash
# The JIT-latency checks of issue 16 on a GPU machine, from carried binaries (build/bin; the
# source tree is not needed). About 1-2 minutes on the H100 host.
#
#   bash scripts/gpu_jit_check.sh BIN_DIR [BUNDLE]
#
#  1. the AOT bundle: BUNDLE if given (built elsewhere: `magicube cache warm -o BUNDLE`), else
#     `magicube cache warm --arch=sm_90` here into a fresh cache (its time is the parallel
#     batch compile of the default list on this host's cores); then `cache inspect` of it;
#  2. `magicube-bench --sections=jit` into $OUT/jit (summary.md: the JIT table and targets);
#  3. `magicube run` of SpMM and SDDMM, L8-R8 and L4-R4, V=8, each in a fresh process with an
#     empty cache dir: from the bundle (MAGICUBE_BUNDLE; "cubin from the AOT bundle"), then
#     without it (compiled by NVRTC), then again (the disk cache): the `load` line of each;
#  4. the kernels' speed with --Ofast-compile=mid and =min (MAGICUBE_NVRTC_OPTIONS, part of
#     the cache key) against the default, the `time` line of each;
#  5. NVRTC's phase split (--time) of one cold compile per variant;
#  6. test_bundle and test_cache (CPU tests, for completeness).
# Logs and results go to $OUT (default ./gpu-jit-logs). Exit 1 when a step fails.
set -u
bin=$(cd "${1:?usage: gpu_jit_check.sh BIN_DIR [BUNDLE]}" && pwd)
out=${OUT:-gpu-jit-logs}
mkdir -p "$out"
out=$(cd "$out" && pwd)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$bin/../lib:${LD_LIBRARY_PATH:-}
work=$(mktemp -d /tmp/magicube-jit-check.XXXXXX)  # 0700: the bundle's and caches' directory
trap 'rm -rf "$work"' EXIT
# NVRTC 13 keeps its own cache of compiles in the driver's compute cache (~/.nv/ComputeCache):
# a fresh one, so that "compiled by NVRTC" below is a cold compile, not an earlier run's.
export CUDA_CACHE_PATH="$work/nv-compute-cache"
status=0
mc="$bin/magicube"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
nproc | sed 's/^/cores: /' | tee -a "$out/gpu.txt"
date -u | tee -a "$out/gpu.txt"

echo "== 1. AOT bundle"
bundle="$work/kernels.mcbundle"
if [ -n "${2:-}" ]; then
  cp "$2" "$bundle" && chmod 0644 "$bundle"
  echo "carried bundle: $2"
else
  start=$(date +%s%N)
  MAGICUBE_CACHE_DIR="$work/warm-cache" MAGICUBE_BUNDLE=0 "$mc" cache warm --arch=sm_90 -o "$bundle" \
    > "$out/warm.txt" 2>&1 || status=1
  end=$(date +%s%N)
  cat "$out/warm.txt"
  echo "cache warm wall time: $(( (end - start) / 1000000 )) ms" | tee -a "$out/warm.txt"
fi
"$mc" cache inspect "$bundle" > "$out/inspect.txt" 2>&1 || status=1
grep -E "^(entries|size|usable|verified|magicube)" "$out/inspect.txt"

echo "== 2. magicube-bench --sections=jit"
if [ -x "$bin/magicube-bench" ]; then
  MAGICUBE_CACHE_DIR="$work/bench-cache" MAGICUBE_BUNDLE=0 "$bin/magicube-bench" --sections=jit --no-plots \
    --out-dir="$out/jit" > "$out/bench.log" 2>&1 || status=1
  sed -n '/^## Targets/,/^## Against/p' "$out/jit/summary.md" | grep -E "^\| JIT" || true
  sed -n '/^## JIT costs/,$p' "$out/jit/summary.md" | grep -iE "cold|batch|bundle|disk-cache hit: total|memory-cache|bare" || true
else
  echo "no magicube-bench in $bin: skipped"
fi

echo "== 3. first call in a fresh process: bundle, NVRTC, disk"
variants=(
  "--op=spmm --lhs=s8 --rhs=s8 --v=8 --m=4096 --k=4096 --sparsity=0.9 --n=256"
  "--op=spmm --lhs=s4 --rhs=s4 --v=8 --m=4096 --k=4096 --sparsity=0.9 --n=256"
  "--op=sddmm --lhs=s8 --rhs=s8 --v=8 --m=4096 --n=4096 --sparsity=0.9 --k=256"
  "--op=sddmm --lhs=s4 --rhs=s4 --v=8 --m=4096 --n=4096 --sparsity=0.9 --k=256"
)
run() {  # run LABEL CACHE_DIR ENV... -- ARGS...: prints the kernel, load, exact and time lines
  local label=$1 cache=$2
  shift 2
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  echo "-- $label: magicube run $*"
  env MAGICUBE_CACHE_DIR="$cache" "${envs[@]}" "$mc" run --repeat=30 "$@" 2>&1 |
    grep -E "^(kernel|load|exact|time)|warning|error|no GPU" | sed 's/^/   /'
}
{
  i=0
  for v in "${variants[@]}"; do
    i=$((i + 1))
    # shellcheck disable=SC2086
    run "AOT bundle" "$work/run-b$i" MAGICUBE_BUNDLE="$bundle" -- $v
    # shellcheck disable=SC2086
    run "no bundle (NVRTC)" "$work/run-n$i" MAGICUBE_BUNDLE=0 -- $v
    # shellcheck disable=SC2086
    run "no bundle, again (disk cache)" "$work/run-n$i" MAGICUBE_BUNDLE=0 -- $v
  done
} | tee "$out/first_call.txt"
grep -q "exact: no" "$out/first_call.txt" && status=1
n_bundle=$(grep -c "cubin from the AOT bundle" "$out/first_call.txt")
echo "runs served by the AOT bundle: $n_bundle of ${#variants[@]}"
[ "$n_bundle" -eq "${#variants[@]}" ] || status=1

echo "== 4. kernel speed with --Ofast-compile (MAGICUBE_NVRTC_OPTIONS)"
{
  i=0
  for v in "${variants[@]}"; do
    i=$((i + 1))
    for o in "" "--Ofast-compile=mid" "--Ofast-compile=min"; do
      # shellcheck disable=SC2086
      run "options '${o:-default}'" "$work/fast$i" MAGICUBE_BUNDLE=0 MAGICUBE_NVRTC_OPTIONS="$o" -- $v
    done
  done
} | tee "$out/fast_compile.txt"
grep -q "exact: no" "$out/fast_compile.txt" && status=1

echo "== 5. NVRTC phases (--time) of one cold compile per variant"
{
  i=0
  for v in "${variants[@]}"; do
    i=$((i + 1))
    # shellcheck disable=SC2086
    env MAGICUBE_CACHE_DIR="$work/time$i" MAGICUBE_BUNDLE=0 MAGICUBE_NVRTC_OPTIONS="--time=$work/time$i.csv" \
      "$mc" run --repeat=1 --warmup=0 $v > /dev/null 2>&1
    echo "-- $v"
    sed 's/^/   /' "$work/time$i.csv" 2>/dev/null
  done
} | tee "$out/nvrtc_phases.txt"

echo "== 6. CPU cache tests"
for t in test_bundle test_cache; do
  [ -x "$bin/$t" ] || continue
  MAGICUBE_BUNDLE=0 "$bin/$t" > "$out/$t.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || status=1
  printf "%-12s rc=%d  %s\n" "$t" $rc "$(grep -E '^\[  (PASSED|FAILED) ' "$out/$t.log" | tr '\n' ' ')"
done
echo "status $status; logs in $out"
exit $status
