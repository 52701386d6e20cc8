#!/bin/bash
# Session 19 run-c: the dense route selection with an untimed run before each timed visit (round 1) and blocks (round 2); its log at three shapes; test_dense_route_gpu; the llm grid
R=$OUT/s19c; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c97
B=.carry/bin
for i in 1 2; do for shape in "4096 11008 8192" "6144 4096 8192" "4096 11008 512"; do set -- $shape
  echo "== M=$1 K=$2 N=$3 run $i"
  MAGICUBE_LOG_LEVEL=debug timeout 60 $B/magicube run --m=$1 --k=$2 --n=$3 --sparsity=0.5 --route=dense --flush-l2 --repeat=20 2>&1 | grep -E "finalist|candidate|^(kernel|exact|time)|rror"
done; done > $R/selection.txt 2>&1
timeout 120 $B/test_dense_route_gpu > $R/test_dense_route_gpu.txt 2>&1; echo "test_dense_route_gpu rc=$?" >> $R/gpu.txt
echo "selection done $(date -u +%T)" >> $R/gpu.txt
timeout 420 $B/magicube-bench --sections=llm --llm-grid=default --filter=L8-R8 --v=8 --no-plots --out-dir=$R/llm-l8r8 > $R/llm.log 2>&1; echo "llm grid rc=$? $(date -u +%T)" >> $R/gpu.txt
date -u >> $R/gpu.txt
cd $OUT && tar czf s19c.tgz s19c && rm -rf s19c
