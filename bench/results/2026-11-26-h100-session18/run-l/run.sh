#!/bin/bash
# Session 18 probe: the long-K s=0.9 prefill rows (4096x11008, 4096x14336): decode-kernel tiles and panels, ring kernels
R=$OUT/s18l; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c92
B=.carry/bin
run() { echo "== $*"; timeout 100 $B/magicube run --lhs=s8 --rhs=s8 --sparsity=0.9 "$@" --flush-l2 --repeat=20 2>&1 | grep -E "^(plan|route|exact|time)|rror:"; }
{
for rep in 1 2; do
 for n in 2048 8192; do
  for cfg in "" "--decode --bsn=48 --panel=3712" "--decode --bsn=32 --panel=5504" "--decode --bsn=48 --panel=2752" "--decode --bsn=16" "--decode --bsn=32 --panel=3712" "--decode --bsn=64 --panel=2752" "--bsn=128" "--bsn=256"; do
   [ $SECONDS -gt 520 ] && break
   run --m=4096 --k=11008 --n=$n --route=sparse $cfg
  done
  run --m=4096 --k=11008 --n=$n --route=dense
 done
done
} > $R/ab.txt 2>&1
date -u >> $R/gpu.txt
cd $OUT && tar czf s18l.tgz s18l && rm -rf s18l
