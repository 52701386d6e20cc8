#!/bin/bash
# Session 21 run-f: the column-major K-panel adds as 4 columns x 8 rows a warp instruction (partner lanes trade two values): tests, row/col A/B, the L8-R8 grid
R=$OUT/s21f; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c206
B=.carry/bin
t() { local name=$1; shift; timeout 200 "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(date -u +%T) $(grep -E '^\[  (PASSED|FAILED)' $R/$name.txt | tr '\n' ' ')" >> $R/gpu.txt; }
t spmm $B/test_spmm_gpu --gtest_filter='SpmmGpu.ColumnMajorC*:SpmmGpu.DecodeKernelInKPanels*'
ab() { for rep in 1 2; do for o in row col; do
  x=$(timeout 60 $B/magicube run --rhs=s8 --flush-l2 --repeat=20 --c-order=$o "$@" 2>&1 | grep -E "^time|^kernel|exact" | tr '\n' ' ')
  echo "$o $* | $x" >> $R/ab.txt; done; done; }
ab -v=8 --lhs=s8 --m=4096 --k=11008 --n=512 --sparsity=0.9 --route=sparse
ab -v=8 --lhs=s8 --m=4096 --k=11008 --n=8192 --sparsity=0.9 --route=sparse
ab -v=8 --lhs=s8 --m=4096 --k=14336 --n=512 --sparsity=0.9 --route=sparse
ab -v=8 --lhs=s8 --m=4096 --k=14336 --n=8192 --sparsity=0.9 --route=sparse
ab -v=8 --lhs=s4 --m=4096 --k=14336 --n=2048 --sparsity=0.9 --route=sparse
echo "ab done $(date -u +%T)" >> $R/gpu.txt
timeout 250 $B/magicube-bench --sections=llm --llm-grid=default --filter=L8-R8 --v=8 --no-plots --out-dir=$R/llm-l8r8 > $R/llm-l8r8.log 2>&1; echo "l8r8 rc=$? $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s21f.tgz s21f && rm -rf s21f
