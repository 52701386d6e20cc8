#!/usr/bin/env bash
# compute-sanitizer over one kernel of each family, on a GPU machine, from carried binaries:
#   bash scripts/sanitize_gpu.sh BIN_DIR
# runs `magicube run` (small sizes, one checked launch) under each compute-sanitizer tool
# (memcheck, racecheck, initcheck, synccheck) for each case below: the ring SpMM, resident-B
# SpMM, split SpMM, the SDDMM fast path, the generic path (sparse on M, and sm_80's int4 mma),
# a float epilogue, every form of the decode kernel the dispatch runs (one tile, 48-column
# slices at 20 warps with cut sums, shares of all slices, K panels, K panels in a cluster of
# two, 16-column slices of all K at 32 warps, 4-bit A, V=2, a float epilogue into a
# column-major C, a chain of layers under programmatic dependent launch) and the dense route
# (cuBLASLt int8, and int8 chunks with the fused float epilogue). Each case pins its kernel
# (the dispatch's own choice moves with the policy) and checks the kernel `magicube run`
# reports against the case's pattern, so a case cannot drift to another family unnoticed.
# Prints one line per run (tool, case, sanitizer errors, the run's exactness, seconds); logs
# go to $OUT (or ./sanitize-gpu-logs). Exit 1 if any run reports an error, is inexact, runs
# another kernel than its case names, or fails (a run past $RUN_TIMEOUT seconds, default 240,
# is a failure).
#   TOOLS="memcheck racecheck" CASES="ring split" bash scripts/sanitize_gpu.sh build/bin
#   COMPUTE_SANITIZER=/path/to/compute-sanitizer (default: PATH, then /usr/local/cuda/bin)
#   bash scripts/sanitize_gpu.sh --check-plans BIN_DIR   (no GPU: each case's flags must plan
#   its kernel, or the dense route; a ctest runs this)
set -u
check_plans=0
if [ "${1:-}" = --check-plans ]; then check_plans=1; shift; fi
bin=${1:?usage: sanitize_gpu.sh [--check-plans] BIN_DIR}
[ -x "$bin/magicube" ] || { echo "sanitize_gpu: $bin/magicube not found" >&2; exit 1; }

# name | the kernel it must run (grep -E on run's "kernel" line) | magicube run flags
# (dec-shares: N=4096 is 86 slices of 48 columns, launched as shares, one block an SM of 132, so
# blocks run a second segment; ncu's grid size there: 132, not a multiple of 86)
s8="--lhs=s8 --rhs=s8"
cases=(
  "ring|magicube_spmm_s8s8_v8_n64_pf_sm90$|$s8 --v=8 --bsn=64 --m=256 --k=512 --sparsity=0.7 --n=128"
  "resident|_n48r_|$s8 --v=8 --resident --bsn=48 --m=256 --k=512 --sparsity=0.7 --n=96"
  "split|_n64k2_|$s8 --v=8 --split=2 --bsn=64 --m=128 --k=2048 --sparsity=0.7 --n=128"
  "sddmm|magicube_sddmm_s8s8_v8_|--op=sddmm $s8 --v=8 --m=256 --n=256 --sparsity=0.9 --k=128"
  "generic|_i8_m8n8k16_vm$|$s8 --v=2 --bsn=64 --candidate=2 --m=256 --k=512 --sparsity=0.7 --n=128"
  "sm80-int4|_sm80_i4_m16n8k64$|--arch=sm_80 --lhs=s4 --rhs=s4 --v=8 --bsn=64 --m=256 --k=512 --sparsity=0.7 --n=128"
  "float|_n64_pf_f16_sm90$|$s8 --v=8 --bsn=64 --out=f16 --scale=rowcol --bias=col --m=256 --k=512 --sparsity=0.7 --n=128"
  "dec-n16|_v8_n16d_pf_sm90$|$s8 --v=8 --route=sparse --m=1024 --k=4096 --sparsity=0.5 --n=16"
  "dec-w20|_n48dw20_pf_sm90$|$s8 --v=8 --bsn=48 --warps=20 --m=1024 --k=4096 --sparsity=0.9 --n=512"
  "dec-shares|_n48dw20s_pf_sm90$|$s8 --v=8 --shares --warps=20 --m=1024 --k=4096 --sparsity=0.9 --n=4096"
  "dec-panels|_n64dp2048_pf_sm90$|$s8 --v=8 --panel=2048 --m=1024 --k=4096 --sparsity=0.9 --n=128"
  "dec-cluster|_n16dp7168_pf_sm90$|$s8 --v=8 --bsn=16 --panel=7168 --m=512 --k=14336 --sparsity=0.5 --n=16"
  "dec-w32|_n16dw32_pf_sm90$|$s8 --v=8 --bsn=16 --warps=32 --m=512 --k=14336 --sparsity=0.9 --n=128"
  "dec-int4|magicube_spmm_s4s8_v8_n16d_|--lhs=s4 --rhs=s8 --v=8 --route=sparse --m=1024 --k=4096 --sparsity=0.5 --n=16"
  "dec-v2|magicube_spmm_s8s8_v2_n16d_|$s8 --v=2 --route=sparse --m=1024 --k=4096 --sparsity=0.7 --n=16"
  "dec-float|_n16d_pf_bf16_ccol_sm90$|$s8 --v=8 --route=sparse --out=bf16 --scale=rowcol --bias=row --c-order=col --m=1024 --k=4096 --sparsity=0.5 --n=16"
  "dec-chain|_v8_n16d_pf_sm90$|$s8 --v=8 --route=sparse --layers=3 --m=1024 --k=4096 --sparsity=0.7 --n=16"
  "dense|^cuBLASLt int8|$s8 --v=8 --route=dense --m=256 --k=512 --sparsity=0.5 --n=128"
  "dense-chunks|^cuBLASLt int8 .*in int8 chunks|--lhs=u8 --rhs=s12 --v=8 --route=dense --out=f32 --scale=rowcol --bias=col --m=256 --k=512 --sparsity=0.5 --n=128"
)
# A case's three fields: name, want (the kernel pattern), flags.
split_case() {
  name=${1%%|*}
  local rest=${1#*|}
  want=${rest%%|*}
  flags=${rest#*|}
}

# The plans alone: what each case's flags plan on the reference device, checked like a run's
# kernel line (the dense route's cases: the route line). Run options are not plan options.
if [ "$check_plans" = 1 ]; then
  status=0
  for c in "${cases[@]}"; do
    split_case "$c"
    flags=$(sed -E 's/ --layers=[0-9]+//' <<<"$flags")
    # shellcheck disable=SC2086
    out=$("$bin/magicube" plan $flags 2>&1)
    if grep -q -- '--route=dense' <<<"$flags"; then
      got=$(grep -m1 '^route ' <<<"$out")
      ok=$(grep -c '^route     dense' <<<"$got")
    else
      got=$(grep -m1 '^  kernel ' <<<"$out" | sed 's/^  kernel    //')
      ok=$(grep -cE -- "$want" <<<"$got")
    fi
    if [ "$ok" = 1 ]; then
      printf "%-12s plans %s\n" "$name" "$got"
    else
      printf "%-12s FAILED: plans '%s', not /%s/\n%s\n" "$name" "$got" "$want" "$out"
      status=1
    fi
  done
  exit $status
fi

out=${OUT:-sanitize-gpu-logs}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export MAGICUBE_CACHE_DIR=${MAGICUBE_CACHE_DIR:-/tmp/magicube-sanitize-gpu}
cs=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
[ -x "$cs" ] || { echo "sanitize_gpu: compute-sanitizer not found (set COMPUTE_SANITIZER)" >&2; exit 1; }
tools=(${TOOLS:-memcheck racecheck initcheck synccheck})
only=" ${CASES:-} "

{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
  "$cs" --version 2>/dev/null | tail -1
  date -u
} | tee "$out/sanitize-gpu.txt"

status=0
for tool in "${tools[@]}"; do
  for c in "${cases[@]}"; do
    split_case "$c"
    [ "$only" = "  " ] || [[ "$only" == *" $name "* ]] || continue
    log="$out/$tool-$name.log"
    t0=$(date +%s%N)
    # shellcheck disable=SC2086
    timeout "${RUN_TIMEOUT:-240}" "$cs" --tool "$tool" --error-exitcode 99 --print-limit 20 \
      "$bin/magicube" run $flags --repeat=1 --warmup=0 >"$log" 2>&1
    rc=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
    # memcheck/initcheck/synccheck: "ERROR SUMMARY: N errors"; racecheck: "RACECHECK SUMMARY: ... (N errors, M warnings)"
    errors=$(grep -o 'ERROR SUMMARY: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$')
    [ -n "$errors" ] || errors=$(grep -o 'RACECHECK SUMMARY: .*(\([0-9]*\) errors' "$log" | tail -1 | sed 's/.*(\([0-9]*\) errors/\1/')
    exact=$(grep -o '^exact: [a-z]*' "$log" | tail -1 | cut -d' ' -f2)
    kernel=$(grep -m1 '^kernel    ' "$log" | sed 's/^kernel    //')
    if grep -q "^magicube: no GPU" "$log"; then
      verdict="skipped (no GPU)"
    elif ! grep -qE -- "$want" <<<"$kernel"; then
      verdict="FAILED (ran '${kernel:-no kernel}', not /$want/)"
      status=1
    elif [ "$rc" -eq 0 ] && [ "${errors:-0}" = 0 ] && [ "$exact" = yes ]; then
      verdict="ok"
    else
      verdict="FAILED (exit $rc)"
      status=1
    fi
    printf "%-10s %-12s %-18s sanitizer errors %-4s exact %-4s %4d.%d s  %s\n" "$tool" "$name" "$verdict" \
      "${errors:-?}" "${exact:-?}" $((ms / 1000)) $((ms % 1000 / 100)) "$log" | tee -a "$out/sanitize-gpu.txt"
  done
done
exit $status
