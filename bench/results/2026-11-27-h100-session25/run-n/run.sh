#!/bin/bash
# Session 25 run-n: the final build (generator 32): the L4-R8 V=8 llm grid.
R=$OUT/s25n; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/cn
timeout 400 .carry/bin/magicube-bench --sections=llm --llm-grid=default --filter=L4-R8 --v=8 --no-plots --out-dir=$R/llm-l4r8 > $R/llm-l4r8.log 2>&1; echo "l4r8 rc=$? $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s25n.tgz s25n && rm -rf s25n
