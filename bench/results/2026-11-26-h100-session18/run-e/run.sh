#!/bin/bash
# Session 18: run-to-run variance of the dense route (u8 with offsets vs s8), full run output
R=$OUT/s18e; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c85
B=.carry/bin
for i in 1 2 3 4; do for l in u8 s8; do for n in 16 512; do
  echo "== run $i lhs=$l n=$n"
  timeout 100 $B/magicube run --lhs=$l --rhs=s8 --m=4096 --k=4096 --sparsity=0.5 --n=$n --out=bf16 --scale=rowcol --bias=row --route=dense --flush-l2 --repeat=20 2>&1 | grep -v "^error\|^exact"
done; done; done > $R/var.txt 2>&1
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> $R/gpu.txt
date -u >> $R/gpu.txt
cd $OUT && tar czf s18e.tgz s18e && rm -rf s18e
