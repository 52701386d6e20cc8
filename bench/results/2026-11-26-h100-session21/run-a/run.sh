#!/bin/bash
# Session 21 run-a: column-major C (+ccol): GPU tests, row/col A/B through magicube run
R=$OUT/s21a; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c201
B=.carry/bin
t() { local name=$1; shift; timeout 240 "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(date -u +%T) $(grep -E '^\[  (PASSED|FAILED)' $R/$name.txt | tr '\n' ' ')" >> $R/gpu.txt; }
t spmm_ccol $B/test_spmm_gpu --gtest_filter='SpmmGpu.ColumnMajorC*:SpmmGpu.Decode*'
t epilogue $B/test_epilogue_gpu
t dense_route $B/test_dense_route_gpu
t capi $B/test_capi_gpu
t api $B/test_api --gtest_filter='ApiGpu*'
ab() { for rep in 1 2; do for o in row col; do
  x=$(timeout 60 $B/magicube run --rhs=s8 --flush-l2 --repeat=20 --c-order=$o "$@" 2>&1 | grep -E "^time|^kernel|exact|route" | tr '\n' ' ')
  echo "$o $* | $x" >> $R/ab.txt; done; done; }
ab -v=8 --lhs=s8 --m=4096 --k=4096 --n=16 --sparsity=0.5 --route=sparse
ab -v=8 --lhs=s8 --m=14336 --k=4096 --n=16 --sparsity=0.7 --route=sparse
ab -v=8 --lhs=s8 --m=4096 --k=4096 --n=2048 --sparsity=0.9 --route=sparse
ab -v=8 --lhs=s8 --m=14336 --k=4096 --n=8192 --sparsity=0.9 --route=sparse
ab -v=8 --lhs=s8 --m=4096 --k=14336 --n=512 --sparsity=0.5 --route=sparse
ab -v=8 --lhs=s4 --m=4096 --k=4096 --n=2048 --sparsity=0.9 --route=sparse
ab -v=8 --lhs=s8 --m=4096 --k=11008 --n=512 --sparsity=0.5 --route=dense
ab -v=8 --lhs=s8 --m=6144 --k=4096 --n=8192 --sparsity=0.5 --route=dense
ab -v=2 --lhs=s8 --m=4096 --k=4096 --n=2 --sparsity=0.5 --route=auto
echo "ab done $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s21a.tgz s21a && rm -rf s21a
