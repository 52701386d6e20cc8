#!/bin/bash
# Session 29 run-d (generator 34): the L4-R4 V=8 grid and the L8-R8 V=4/2 grid.
R=$OUT/s29d; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c29d
B=.carry/bin
timeout 300 $B/magicube-bench --sections=llm --llm-grid=default --filter=L4-R4 --v=8 --no-plots --out-dir=$R/llm-l4r4 > $R/llm-l4r4.log 2>&1; echo "l4r4 rc=$? $(date -u +%T)" >> $R/gpu.txt
timeout $((560 - SECONDS)) $B/magicube-bench --sections=llm --llm-grid=default --filter=L8-R8 --v=4,2 --no-plots --out-dir=$R/llm-l8r8-v42 > $R/llm-l8r8-v42.log 2>&1; echo "v42 rc=$? $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s29d.tgz s29d && rm -rf s29d
