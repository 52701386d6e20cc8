#!/bin/bash
# Session 19 run-d: the dense route selection after a 200 ms warm-up of the clocks; its log at three shapes, twice
R=$OUT/s19d; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c98
B=.carry/bin
for i in 1 2; do for shape in "4096 11008 8192" "6144 4096 8192" "4096 11008 512"; do set -- $shape
  echo "== M=$1 K=$2 N=$3 run $i"
  MAGICUBE_LOG_LEVEL=debug timeout 60 $B/magicube run --m=$1 --k=$2 --n=$3 --sparsity=0.5 --route=dense --flush-l2 --repeat=20 2>&1 | grep -E "warm-up|finalist|candidate|^(kernel|exact|time)|rror"
done; done > $R/selection.txt 2>&1
nvidia-smi -q -d CLOCK,POWER > $R/clocks.txt 2>&1
date -u >> $R/gpu.txt
cd $OUT && tar czf s19d.tgz s19d && rm -rf s19d
