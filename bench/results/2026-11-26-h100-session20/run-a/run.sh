#!/bin/bash
# Session 20 run-a: the whole default llm grid beyond L8-R8 V=8 (int4 weights, int4 x int4, V=4/2), with the dense route
R=$OUT/s20a; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; git log -1 --format=%h 2>/dev/null; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c101
B=.carry/bin
timeout 330 $B/magicube-bench --sections=llm --llm-grid=default --filter=L4-R8 --v=8 --no-plots --out-dir=$R/llm-l4r8 > $R/llm-l4r8.log 2>&1; echo "l4r8 rc=$? $(date -u +%T)" >> $R/gpu.txt
timeout 240 $B/magicube-bench --sections=llm --llm-grid=default --filter=L8-R8 --v=4,2 --no-plots --out-dir=$R/llm-l8r8-v42 > $R/llm-l8r8-v42.log 2>&1; echo "v42 rc=$? $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s20a.tgz s20a && rm -rf s20a
