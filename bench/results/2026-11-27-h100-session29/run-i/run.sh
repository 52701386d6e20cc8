#!/bin/bash
# Session 29 run-i (the final build, ddf4cb6+: generator 34, Launch::a_skip_l1): the chain section at
# N=16 (8 layers back to back, per layer, against the dense route chained alike), then the GPU tests.
R=$OUT/s29i; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c29i
B=.carry/bin
timeout 190 $B/magicube-bench --sections=chain --filter=L8-R8 --v=8 --llm-n=16 --no-plots --out-dir=$R/chain-l8r8 > $R/chain-l8r8.log 2>&1; echo "chain rc=$? $(date -u +%T)" >> $R/gpu.txt
t() { name=$1; shift; timeout $((330 - SECONDS > 5 ? 330 - SECONDS : 5)) $B/$name "$@" 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED|SKIPPED) |Failure" > $R/$name.txt; echo "$name $(grep -c OK $R/$name.txt) ok $(grep -c FAILED $R/$name.txt) failed $(date -u +%T)" >> $R/gpu.txt; }
MAGICUBE_CACHE_DIR=/tmp/t29i t test_spmm_gpu --gtest_filter='*Decode*:*ColumnMajor*'
MAGICUBE_CACHE_DIR=/tmp/t29i t test_epilogue_gpu
MAGICUBE_CACHE_DIR=/tmp/t29i t test_capi_gpu
MAGICUBE_CACHE_DIR=/tmp/t29i t test_api --gtest_filter='ApiGpu.*'
cat $R/gpu.txt; grep -E "Failure" -A3 $R/test_*.txt | head -20
cd $OUT && tar czf s29i.tgz s29i && rm -rf s29i
