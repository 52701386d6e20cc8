#!/bin/bash
# final build (generator 27, K panels with red.global.add): decode/panel GPU tests, C ABI GPU tests, llm grid L8-R8 V=8
R=$OUT/s15f; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
MAGICUBE_CACHE_DIR=/tmp/c63 timeout 200 .carry/bin/test_spmm_gpu --gtest_filter='*Decode*:*ComparisonCatches*' > $R/test_spmm_gpu_decode.log 2>&1; echo "test_spmm_gpu decode rc=$?" >> $R/gpu.txt
MAGICUBE_CACHE_DIR=/tmp/c63 timeout 100 .carry/bin/test_capi_gpu > $R/test_capi_gpu.log 2>&1; echo "test_capi_gpu rc=$?" >> $R/gpu.txt
date -u >> $R/gpu.txt
MAGICUBE_CACHE_DIR=/tmp/c63 timeout 260 .carry/bin/magicube-bench --sections=llm --llm-grid=default --filter=L8-R8 --v=8 --no-plots --out-dir=$R/llm-l8r8 > $R/llm.log 2>&1; echo "llm grid rc=$?" >> $R/gpu.txt
date -u >> $R/gpu.txt
cd $OUT && tar czf s15f.tgz s15f && rm -rf s15f
