#!/bin/bash
# Session 24 run-h: the two PDL wait tests after sharing their slow-writer kernel (tests/gpu/slow_writer.h).
R=$OUT/s24h; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/ch
B=.carry/bin
timeout 100 $B/test_capi_gpu > $R/test_capi_gpu.txt 2>&1; echo "test_capi_gpu rc=$? $(date -u +%T) $(grep -E '^\[  (PASSED|FAILED)' $R/test_capi_gpu.txt | tr '\n' ' ')" >> $R/gpu.txt
timeout 100 $B/test_spmm_gpu --gtest_filter='*WaitsForThePreviousKernel*' > $R/test_spmm_gpu.txt 2>&1; echo "test_spmm_gpu rc=$? $(date -u +%T) $(grep -E '^\[  (PASSED|FAILED)' $R/test_spmm_gpu.txt | tr '\n' ' ')" >> $R/gpu.txt
cd $OUT && tar czf s24h.tgz s24h && rm -rf s24h
