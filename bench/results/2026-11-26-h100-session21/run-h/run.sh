#!/bin/bash
# Session 21 run-h: after the review's tidy (one pair-store emitter for both C orders; c_col passed down in the bench)
R=$OUT/s21h; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c208
B=.carry/bin
t() { local name=$1; shift; timeout 200 "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(date -u +%T) $(grep -E '^\[  (PASSED|FAILED)' $R/$name.txt | tr '\n' ' ')" >> $R/gpu.txt; }
t spmm $B/test_spmm_gpu --gtest_filter='SpmmGpu.ColumnMajorC*:SpmmGpu.DecodeKernelInKPanels*:SpmmGpu.DecodeKernelIsExact'
t epilogue $B/test_epilogue_gpu
timeout 150 $B/magicube-bench --sections=llm --llm-grid=quick --no-plots --out-dir=$R/llm-quick > $R/llm-quick.log 2>&1; echo "quick rc=$? $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s21h.tgz s21h && rm -rf s21h
