#!/usr/bin/env bash
# compute-sanitizer over one kernel of each family, on a GPU machine, from carried binaries:
#   bash scripts/sanitize_gpu.sh BIN_DIR
# runs `magicube run` (small sizes, one checked launch) under each compute-sanitizer tool
# (memcheck, racecheck, initcheck, synccheck) for: the ring SpMM (s8 x s8, V=8), resident-B
# SpMM (BSn 48), split SpMM (two warp groups), the SDDMM fast path, the generic path
# (s12 x u4, V=4), the sm_80 int4 path run on this GPU, and a float epilogue (f16, rowcol
# scales, column bias). Prints one line per run (tool, case, sanitizer errors, the run's
# exactness, seconds); logs go to $OUT (or ./sanitize-gpu-logs). Exit 1 if any run reports
# an error, is inexact or fails.
#   TOOLS="memcheck racecheck" CASES="ring split" bash scripts/sanitize_gpu.sh build/bin
#   COMPUTE_SANITIZER=/path/to/compute-sanitizer (default: PATH, then /usr/local/cuda/bin)
set -u
bin=${1:?usage: sanitize_gpu.sh BIN_DIR}
out=${OUT:-sanitize-gpu-logs}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export MAGICUBE_CACHE_DIR=${MAGICUBE_CACHE_DIR:-/tmp/magicube-sanitize-gpu}
cs=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
[ -x "$cs" ] || { echo "sanitize_gpu: compute-sanitizer not found (set COMPUTE_SANITIZER)" >&2; exit 1; }
[ -x "$bin/magicube" ] || { echo "sanitize_gpu: $bin/magicube not found" >&2; exit 1; }

# name | magicube run flags (small: a few hundred row-blocks, one checked launch)
cases=(
  "ring|--lhs=s8 --rhs=s8 --v=8 --m=256 --k=512 --sparsity=0.7 --n=128"
  "resident|--lhs=s8 --rhs=s8 --v=8 --resident --bsn=48 --m=256 --k=512 --sparsity=0.7 --n=96"
  "split|--lhs=s8 --rhs=s8 --v=8 --split=2 --bsn=64 --m=128 --k=2048 --sparsity=0.7 --n=128"
  "sddmm|--op=sddmm --lhs=s8 --rhs=s8 --v=8 --m=256 --n=256 --sparsity=0.9 --k=128"
  "generic|--lhs=s12 --rhs=u4 --v=4 --m=128 --k=256 --sparsity=0.7 --n=64"
  "sm80-int4|--arch=sm_80 --lhs=s4 --rhs=s4 --v=8 --m=256 --k=512 --sparsity=0.7 --n=128"
  "float|--lhs=s8 --rhs=s8 --v=8 --out=f16 --scale=rowcol --bias=col --m=256 --k=512 --sparsity=0.7 --n=128"
)
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
    name=${c%%|*}
    flags=${c#*|}
    [ "$only" = "  " ] || [[ "$only" == *" $name "* ]] || continue
    log="$out/$tool-$name.log"
    extra=()  # (initcheck's --track-unused-memory is a switch, off by default: nothing to add)
    t0=$(date +%s%N)
    # shellcheck disable=SC2086
    "$cs" --tool "$tool" --error-exitcode 99 --print-limit 20 "${extra[@]}" \
      "$bin/magicube" run $flags --repeat=1 --warmup=0 >"$log" 2>&1
    rc=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
    # memcheck/initcheck/synccheck: "ERROR SUMMARY: N errors"; racecheck: "RACECHECK SUMMARY: ... (N errors, M warnings)"
    errors=$(grep -o 'ERROR SUMMARY: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$')
    [ -n "$errors" ] || errors=$(grep -o 'RACECHECK SUMMARY: .*(\([0-9]*\) errors' "$log" | tail -1 | sed 's/.*(\([0-9]*\) errors/\1/')
    exact=$(grep -o '^exact: [a-z]*' "$log" | tail -1 | cut -d' ' -f2)
    if grep -q "^magicube: no GPU" "$log"; then
      verdict="skipped (no GPU)"
    elif [ "$rc" -eq 0 ] && [ "${errors:-0}" = 0 ] && [ "$exact" = yes ]; then
      verdict="ok"
    else
      verdict="FAILED (exit $rc)"
      status=1
    fi
    printf "%-10s %-10s %-18s sanitizer errors %-4s exact %-4s %4d.%d s  %s\n" "$tool" "$name" "$verdict" \
      "${errors:-?}" "${exact:-?}" $((ms / 1000)) $((ms % 1000 / 100)) "$log" | tee -a "$out/sanitize-gpu.txt"
  done
done
exit $status
