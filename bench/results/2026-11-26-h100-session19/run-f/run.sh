#!/bin/bash
# Session 19 run-f, after the review's tidy: the bench's GPU tests and the quick llm grid (paired rows, the row-C line)
R=$OUT/s19f; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c100
B=.carry/bin
timeout 120 $B/test_bench_timing_gpu > $R/test_bench_timing_gpu.txt 2>&1; echo "test_bench_timing_gpu rc=$? $(date -u +%T)" >> $R/gpu.txt
timeout 300 $B/magicube-bench --sections=llm --llm-grid=quick --no-plots --out-dir=$R/llm-quick > $R/llm.log 2>&1; echo "llm quick rc=$? $(date -u +%T)" >> $R/gpu.txt
date -u >> $R/gpu.txt
cd $OUT && tar czf s19f.tgz s19f && rm -rf s19f
