#!/bin/bash
# Session 20 run-f: the final build (d73f533): the L4-R8 and L4-R4 grids
R=$OUT/s20f; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c106
B=.carry/bin
for p in L4-R8 L4-R4; do
  d=$(echo $p | tr 'A-Z' 'a-z' | tr -d '-')
  timeout 280 $B/magicube-bench --sections=llm --llm-grid=default --filter=$p --v=8 --no-plots --out-dir=$R/llm-$d > $R/llm-$d.log 2>&1; echo "$p rc=$? $(date -u +%T)" >> $R/gpu.txt
done
cd $OUT && tar czf s20f.tgz s20f && rm -rf s20f
