#!/bin/bash
# Session 30 run-k: test_capi_gpu with the graph-captured decode chain at K=14336 (cluster launches).
tar xJf .carry/pkg.tar.xz -C .carry
R=$OUT/s30k; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
MAGICUBE_CACHE_DIR=/tmp/t30k timeout 150 .carry/bin/test_capi_gpu > $R/test_capi_gpu.txt 2>&1
echo "test_capi_gpu rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $R/test_capi_gpu.txt | tr '\n' ' ') $(date -u +%T)" >> $R/gpu.txt
cat $R/gpu.txt; grep -E "OK \]|Failure|FAILED" -A3 $R/test_capi_gpu.txt | head -30
cd $OUT && tar czf s30k.tgz s30k && rm -rf s30k
