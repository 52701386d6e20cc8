#!/bin/bash
# Session 27 run-f: long K past N = 64: the policy's K-panel kernel (n48dp) against the decode kernel
# on 16-column slices of all K at 32 warps (n16d, MAGICUBE_EXP_WARPS=32, ring 8), the grid's rows.
R=$OUT/s27f; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
B=.carry/bin; T0=$(date +%s)
one() { tag=$1; w=$2; d=$3; shift 3; x=$( ( [ -n "$w" ] && export MAGICUBE_EXP_WARPS=$w MAGICUBE_EXP_DEPTH=$d; MAGICUBE_CACHE_DIR=/tmp/c$tag$w-$d timeout 90 $B/magicube run -v=8 --lhs=s8 --rhs=s8 --flush-l2 --route=sparse "$@" 2>&1 ) | grep -E "^plan|^time|exact|rror" | sed -e 's/(chosen.*//' -e 's/(bitwise.*//' -e 's/ elements equal.*//' -e 's/over .*//' -e 's/(min.*//' | tr '\n' ' ')
  echo "$tag w$w d$d $* | $x" >> $R/ab.txt; }
for n in 128 512 2048 8192; do for k in 11008 14336; do for s in 0.9 0.7 0.5; do
  [ $(( $(date +%s) - T0 )) -gt 330 ] && break 3
  [ $s = 0.7 ] && [ $n -gt 512 ] && continue
  [ $s = 0.5 ] && [ $n -gt 128 ] && continue
  r=10; [ $n -le 128 ] && r=20
  one pol "" "" --repeat=$r -m=4096 -k=$k -n=$n --sparsity=$s
  one n16 32 8 --repeat=$r -m=4096 -k=$k -n=$n --sparsity=$s --decode --bsn=16
done; done; done
echo "done $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s27f.tgz s27f && rm -rf s27f
