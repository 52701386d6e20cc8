#!/bin/bash
# the final commit's build: decode and K-panel GPU tests, one policy run at long K
R=$OUT/s15g; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
MAGICUBE_CACHE_DIR=/tmp/c64 timeout 150 .carry/bin/test_spmm_gpu --gtest_filter='*Decode*:*ComparisonCatches*' > $R/test_spmm_gpu_decode.log 2>&1; echo "test_spmm_gpu decode rc=$?" >> $R/gpu.txt
MAGICUBE_CACHE_DIR=/tmp/c64 timeout 60 .carry/bin/magicube run --op=spmm --m=4096 --k=14336 --n=2048 --sparsity=0.9 --route=sparse --flush-l2 --repeat=20 > $R/run_4096x14336_n2048.txt 2>&1; echo "run rc=$?" >> $R/gpu.txt
date -u >> $R/gpu.txt
cd $OUT && tar czf s15g.tgz s15g && rm -rf s15g
