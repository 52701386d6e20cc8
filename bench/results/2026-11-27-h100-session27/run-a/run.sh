#!/bin/bash
# Session 27 run-a: the decode kernel (n48d at prefill, n16d at decode) with more warps a block
# (MAGICUBE_EXP_WARPS) and other ring depths (MAGICUBE_EXP_DEPTH): 16 x 10 is generator 32's.
R=$OUT/s27a; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
B=.carry/bin; T0=$(date +%s)
one() { w=$1; d=$2; shift 2; x=$(MAGICUBE_EXP_WARPS=$w MAGICUBE_EXP_DEPTH=$d MAGICUBE_CACHE_DIR=/tmp/c$w-$d timeout 60 $B/magicube run -v=8 --lhs=s8 --rhs=s8 --flush-l2 --route=sparse "$@" 2>&1 | grep -E "^plan|^time|exact|rror" | sed -e 's/(chosen.*//' -e 's/(bitwise.*//' -e 's/ elements equal.*//' -e 's/over .*//' -e 's/(min.*//' | tr '\n' ' ')
  echo "w$w d$d $* | $x" >> $R/ab.txt; }
for rep in 1 2; do
  for p in "-m=4096 -k=4096 -n=2048 --sparsity=0.9" "-m=14336 -k=4096 -n=2048 --sparsity=0.9" "-m=4096 -k=4096 -n=512 --sparsity=0.9" "-m=4096 -k=4096 -n=16 --sparsity=0.5" "-m=14336 -k=4096 -n=16 --sparsity=0.5"; do
    for wd in "16 10" "20 10" "20 8" "24 6" "24 4" "12 10"; do
      [ $(( $(date +%s) - T0 )) -gt 520 ] && break 3
      one $wd --repeat=20 $p
    done
  done
done
echo "done $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s27a.tgz s27a && rm -rf s27a
