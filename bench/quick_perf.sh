#!/usr/bin/env bash
# Quick SpMM timings of the targets' shapes (M=K=4096, V=8) on the GPU, one line each.
# Usage: bench/quick_perf.sh [path/to/magicube] [extra run flags...]
set -u
bin=${1:-build/bin/magicube}; shift || true
printf "%-8s %-5s %-4s %-10s %-10s %s\n" prec N s median_ms TOPS kernel
for prec in s8:s8 s8:s4 s4:s4 s16:s8 s16:s16; do
  l=${prec%%:*}; r=${prec##*:}
  for n in 256 512; do
    for s in 0.7 0.9 0.98; do
      out=$("$bin" run --lhs=$l --rhs=$r --v=8 --m=4096 --k=4096 --sparsity=$s --n=$n --repeat=30 "$@" 2>&1)
      ms=$(echo "$out" | sed -n 's/^time *median \([0-9.]*\) ms.*/\1/p')
      tops=$(echo "$out" | sed -n 's/.*effective \([0-9.]*\) TOPS.*/\1/p; s/^tops *\([0-9.]*\).*/\1/p' | head -1)
      ex=$(echo "$out" | grep -c "exact: yes")
      [ "$ex" = 1 ] || { echo "FAILED $prec N=$n s=$s:"; echo "$out" | tail -3; }
      printf "%-8s %-5s %-4s %-10s %-10s\n" "L${l#?}-R${r#?}" $n $s "$ms" "$tops"
    done
  done
done
