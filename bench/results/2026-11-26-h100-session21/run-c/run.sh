#!/bin/bash
# Session 21 run-c: the dense route's second look; +ccol tests; the L8-R8 parts of the default llm grid
R=$OUT/s21c; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c203
B=.carry/bin
t() { local name=$1; shift; timeout 200 "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(date -u +%T) $(grep -E '^\[  (PASSED|FAILED)' $R/$name.txt | tr '\n' ' ')" >> $R/gpu.txt; }
t spmm_ccol $B/test_spmm_gpu --gtest_filter='SpmmGpu.ColumnMajorC*'
t dense_route $B/test_dense_route_gpu
MAGICUBE_LOG_LEVEL=debug timeout 60 $B/magicube run -v=8 --lhs=s8 --m=4096 --k=14336 --n=8192 --sparsity=0.5 --route=dense --c-order=col --flush-l2 --repeat=20 > $R/sel_debug.txt 2>&1
timeout 330 $B/magicube-bench --sections=llm --llm-grid=default --filter=L8-R8 --v=8 --no-plots --out-dir=$R/llm-l8r8 > $R/llm-l8r8.log 2>&1; echo "l8r8 rc=$? $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s21c.tgz s21c && rm -rf s21c
