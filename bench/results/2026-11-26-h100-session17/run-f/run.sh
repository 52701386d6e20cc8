#!/bin/bash
# The K-panel decode kernel's structure cost: one panel of all K (n48dp4096) against the plain decode kernel (n48d), interleaved
R=$OUT/s17f; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c74
B=.carry/bin
for rep in 1 2; do for s in 0.5 0.7 0.9; do for n in 512 2048; do for p in 0 4096; do
  extra=""; [ $p != 0 ] && extra="--panel=$p"
  echo "== rep=$rep 4096x4096 s=$s n=$n panel=$p"
  timeout 60 $B/magicube run --lhs=s8 --rhs=s8 --m=4096 --k=4096 --sparsity=$s --n=$n --decode --bsn=48 $extra --route=sparse --flush-l2 --repeat=20 2>&1 | grep -E "^(plan|exact|time)|rror"
done; done; done; done > $R/ab.txt 2>&1
date -u >> $R/gpu.txt
cd $OUT && tar czf s17f.tgz s17f && rm -rf s17f
