#!/bin/bash
# Session 27 run-b: 20 warps a block (MAGICUBE_EXP_WARPS=20, the plan's own ring depth) against
# generator 32's 16, alternating, over the decode kernel's tiles and the grid's prefill rows.
R=$OUT/s27b; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
B=.carry/bin; T0=$(date +%s)
one() { w=$1; shift; x=$(MAGICUBE_EXP_WARPS=$w MAGICUBE_CACHE_DIR=/tmp/c$w timeout 90 $B/magicube run -v=8 --flush-l2 --route=sparse "$@" 2>&1 | grep -E "^plan|^time|exact|rror" | sed -e 's/(chosen.*//' -e 's/(bitwise.*//' -e 's/ elements equal.*//' -e 's/over .*//' -e 's/(min.*//' | tr '\n' ' ')
  echo "w$w $* | $x" >> $R/ab.txt; }
for rep in 1 2; do
  for p in "--lhs=s8 --rhs=s8 -m=4096 -k=4096 -n=2048 --sparsity=0.9" "--lhs=s8 --rhs=s8 -m=4096 -k=4096 -n=8192 --sparsity=0.9" \
           "--lhs=s8 --rhs=s8 -m=11008 -k=4096 -n=2048 --sparsity=0.9" "--lhs=s8 --rhs=s8 -m=14336 -k=4096 -n=8192 --sparsity=0.9" \
           "--lhs=s8 --rhs=s8 -m=4096 -k=14336 -n=2048 --sparsity=0.9" "--lhs=s8 --rhs=s8 -m=4096 -k=11008 -n=512 --sparsity=0.9" \
           "--lhs=s8 --rhs=s8 -m=4096 -k=4096 -n=512 --sparsity=0.7" "--lhs=s8 --rhs=s8 -m=14336 -k=4096 -n=128 --sparsity=0.7" \
           "--lhs=s8 --rhs=s8 -m=4096 -k=4096 -n=64 --sparsity=0.5" "--lhs=s8 --rhs=s8 -m=14336 -k=4096 -n=32 --sparsity=0.5" \
           "--lhs=s8 --rhs=s8 -m=4096 -k=4096 -n=48 --sparsity=0.5" \
           "--lhs=s4 --rhs=s8 -m=4096 -k=4096 -n=2048 --sparsity=0.9" "--lhs=s4 --rhs=s8 -m=14336 -k=4096 -n=2048 --sparsity=0.9"; do
    for w in 16 20; do
      [ $(( $(date +%s) - T0 )) -gt 540 ] && break 3
      one $w --repeat=20 $p
    done
  done
done
echo "done $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s27b.tgz s27b && rm -rf s27b
