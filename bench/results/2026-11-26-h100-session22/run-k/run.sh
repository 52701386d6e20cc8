#!/bin/bash
# Session 22 run-k: 4-bit B as bytes: the K-panel GPU test (s4 x s4 at BSn 48 now), the L4-R4 grid with the model reading B's stored bytes
R=$OUT/s22k; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c224
B=.carry/bin
timeout 120 $B/test_spmm_gpu --gtest_filter='SpmmGpu.DecodeKernelInKPanels*:SpmmGpu.DecodeKernelIsExact' > $R/spmm.txt 2>&1; echo "spmm rc=$? $(date -u +%T) $(grep -E '^\[  (PASSED|FAILED)' $R/spmm.txt | tr '\n' ' ')" >> $R/gpu.txt
timeout $((585 - SECONDS)) $B/magicube-bench --sections=llm --llm-grid=default --filter=L4-R4 --v=8 --no-plots --out-dir=$R/llm-l4r4 > $R/llm-l4r4.log 2>&1; echo "l4r4 rc=$? $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s22k.tgz s22k && rm -rf s22k
