#!/bin/bash
# Session 25 run-k: the final build (generator 32): the L8-R8 V=8 llm grid.
R=$OUT/s25k; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/ck
B=.carry/bin
timeout 400 $B/magicube-bench --sections=llm --llm-grid=default --filter=L8-R8 --v=8 --no-plots --out-dir=$R/llm-l8r8 > $R/llm-l8r8.log 2>&1; echo "l8r8 rc=$? $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s25k.tgz s25k && rm -rf s25k
