#!/bin/bash
# Session 29 run-b (generator 34, the plan's a_stream; no EXP env): the L8-R8 and L4-R8 V=8 grids.
R=$OUT/s29b; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c29b
B=.carry/bin
timeout 290 $B/magicube-bench --sections=llm --llm-grid=default --filter=L8-R8 --v=8 --no-plots --out-dir=$R/llm-l8r8 > $R/llm-l8r8.log 2>&1; echo "l8r8 rc=$? $(date -u +%T)" >> $R/gpu.txt
timeout $((590 - SECONDS)) $B/magicube-bench --sections=llm --llm-grid=default --filter=L4-R8 --v=8 --no-plots --out-dir=$R/llm-l4r8 > $R/llm-l4r8.log 2>&1; echo "l4r8 rc=$? $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s29b.tgz s29b && rm -rf s29b
