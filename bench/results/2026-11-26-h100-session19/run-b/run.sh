#!/bin/bash
# Session 19 run-b: the llm grid after the margin refit (5 %), with the row-major-C contender line; the dense route's selection log at two shapes
R=$OUT/s19b; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c96
B=.carry/bin
for i in 1 2; do for shape in "4096 11008 8192" "6144 4096 8192" "4096 11008 512"; do set -- $shape
  echo "== M=$1 K=$2 N=$3 run $i"
  MAGICUBE_LOG_LEVEL=debug timeout 60 $B/magicube run --m=$1 --k=$2 --n=$3 --sparsity=0.5 --route=dense --flush-l2 --repeat=20 2>&1 | grep -E "finalist|candidate|^(kernel|exact|time)|rror"
done; done > $R/selection.txt 2>&1
echo "selection done $(date -u +%T)" >> $R/gpu.txt
timeout 420 $B/magicube-bench --sections=llm --llm-grid=default --filter=L8-R8 --v=8 --no-plots --out-dir=$R/llm-l8r8 > $R/llm.log 2>&1; echo "llm grid rc=$? $(date -u +%T)" >> $R/gpu.txt
date -u >> $R/gpu.txt
cd $OUT && tar czf s19b.tgz s19b && rm -rf s19b
