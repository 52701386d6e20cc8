#!/bin/bash
# Session 27 run-g: the final build (efe8736: the spec's warp count; the dispatch's n48dw20 past N = 64
# and n16dw32 for long K at s=0.9): GPU tests, then the L8-R8 and L4-R8 V=8 llm grids.
R=$OUT/s27g; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/cg
B=.carry/bin; T0=$(date +%s)
timeout 120 $B/test_spmm_gpu --gtest_filter='*Decode*:*ColumnMajor*' > $R/test_spmm_gpu.txt 2>&1
timeout 60 $B/test_epilogue_gpu --gtest_filter='*Decode*' > $R/test_epilogue_gpu.txt 2>&1
timeout 60 $B/test_capi_gpu > $R/test_capi_gpu.txt 2>&1
timeout 60 $B/test_api --gtest_filter='ApiGpu.*' > $R/test_api.txt 2>&1
echo "tests $(date -u +%T)" >> $R/gpu.txt
timeout 240 $B/magicube-bench --sections=llm --llm-grid=default --filter=L8-R8 --v=8 --no-plots --out-dir=$R/llm-l8r8 > $R/llm-l8r8.log 2>&1; echo "l8r8 rc=$? $(date -u +%T)" >> $R/gpu.txt
left=$(( 575 - ($(date +%s) - T0) ))
[ $left -gt 200 ] && { timeout $left $B/magicube-bench --sections=llm --llm-grid=default --filter=L4-R8 --v=8 --no-plots --out-dir=$R/llm-l4r8 > $R/llm-l4r8.log 2>&1; echo "l4r8 rc=$? $(date -u +%T)" >> $R/gpu.txt; }
cd $OUT && tar czf s27g.tgz s27g && rm -rf s27g
