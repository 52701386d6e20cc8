#!/usr/bin/env bash
# Runs every GPU check on a GPU machine from carried binaries (see bench/README.md for how
# the build folder travels): the GPU test binaries, the example, and CLI runs of both ops.
# Logs go to $OUT (or ./gpu-check-logs). Usage: bash scripts/gpu_check.sh BIN_DIR [DLMC_DIR]
set -u
bin=${1:?usage: gpu_check.sh BIN_DIR [DLMC_DIR]}
out=${OUT:-gpu-check-logs}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$bin/../lib:${LD_LIBRARY_PATH:-}
export MAGICUBE_CACHE_DIR=${MAGICUBE_CACHE_DIR:-/tmp/magicube-gpu-check}
[ -n "${2:-}" ] && export MAGICUBE_DLMC_DIR=$2
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
date -u | tee -a "$out/gpu.txt"
status=0
for t in test_cuda_driver test_spmm_gpu test_sddmm_gpu test_epilogue_gpu test_api test_cli test_autotune test_capi test_capi_gpu test_dense_route test_dense_route_gpu; do
  [ -x "$bin/$t" ] || continue
  MAGICUBE_CLI_PATH="$bin/magicube" "$bin/$t" > "$out/$t.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || status=1
  printf "%-20s rc=%d  %s\n" "$t" $rc "$(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/$t.log" | tr '\n' ' ')"
done
[ -x "$bin/attention_sddmm" ] && { "$bin/attention_sddmm" > "$out/attention_sddmm.log" 2>&1; echo "attention_sddmm rc=$? $(tail -1 "$out/attention_sddmm.log")"; }
run() { echo "\$ magicube run $*"; "$bin/magicube" run "$@" 2>&1 | grep -E "^(gpu|kernel|exact|time|tops|epilogue)" ; }
{
  run --op=spmm --lhs=s8 --rhs=s8 --v=8 --bsn=128 --m=4096 --k=4096 --sparsity=0.9 --n=256
  run --op=spmm --lhs=s12 --rhs=u4 --v=4 --m=1000 --k=777 --sparsity=0.8 --n=300
  run --op=spmm --lhs=s8 --rhs=s8 --v=8 --m=2048 --k=2048 --sparsity=0.9 --n=256 --out=f16 --scale=rowcol --bias=col
  run --op=sddmm --lhs=s8 --rhs=s8 --v=8 --m=4096 --n=4096 --k=256 --sparsity=0.9
  run --op=sddmm --lhs=s16 --rhs=s16 --v=8 --m=4096 --n=4096 --k=512 --sparsity=0.9 --out=int64
  run --op=sddmm --lhs=s8 --rhs=s8 --v=8 --m=1024 --n=1024 --k=64 --sparsity=0.9 --out=f16 --scale=rowcol
} | tee "$out/cli_runs.txt"
grep -q "exact: no" "$out/cli_runs.txt" && status=1
exit $status
