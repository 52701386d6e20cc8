#!/bin/bash
# Session 18 probe: long-K decode-kernel slices in panels, 32 columns (fewest panels) against 48 (widest), and dense
R=$OUT/s18m; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c93
B=.carry/bin
run() { echo "== $*"; timeout 100 $B/magicube run --lhs=s8 --rhs=s8 "$@" --flush-l2 --repeat=20 2>&1 | grep -E "^(plan|route|exact|time)|rror:"; }
{
for shape in "4096 11008 5504 3712" "4096 14336 7168 4800"; do set -- $shape; m=$1; k=$2; p32=$3; p48=$4
 for n in 512 2048 8192; do
  run --m=$m --k=$k --n=$n --sparsity=0.9 --route=dense
  for s in 0.9 0.7 0.5; do
   [ $SECONDS -gt 540 ] && break
   run --m=$m --k=$k --n=$n --sparsity=$s --route=sparse --decode --bsn=32 --panel=$p32
   run --m=$m --k=$k --n=$n --sparsity=$s --route=sparse --decode --bsn=48 --panel=$p48
  done; done; done
} > $R/ab.txt 2>&1
date -u >> $R/gpu.txt
cd $OUT && tar czf s18m.tgz s18m && rm -rf s18m
