#!/bin/bash
# Session 20 run-d: the 4-bit ring's packed register (generator 29): decode GPU tests, old/new A/B, the L4-R8 grid
R=$OUT/s20d; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export MAGICUBE_CACHE_DIR=/tmp/c104
B=.carry/bin
LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib timeout 200 $B/test_spmm_gpu --gtest_filter='SpmmGpu.Decode*' > $R/test_spmm_gpu.txt 2>&1; echo "test_spmm_gpu decode rc=$? $(date -u +%T)" >> $R/gpu.txt
ab() { for rep in 1 2; do for w in old new; do
  if [ $w = old ]; then L=$PWD/.carry/old; X=.carry/old/magicube; else L=$PWD/.carry/lib; X=$B/magicube; fi
  t=$(LD_LIBRARY_PATH=/usr/local/cuda/lib64:$L MAGICUBE_CACHE_DIR=/tmp/c104$w timeout 60 $X run --rhs=s8 -v=8 --route=sparse --flush-l2 --repeat=20 "$@" 2>&1 | grep -E "^time|^kernel|exact" | tr '\n' ' ')
  echo "$w $* | $t" >> $R/ab.txt; done; done; }
ab --lhs=s4 --m=4096 --k=4096 --n=512 --sparsity=0.5 --panel=4096 --bsn=48
ab --lhs=s4 --m=4096 --k=14336 --n=512 --sparsity=0.5
ab --lhs=s4 --m=4096 --k=14336 --n=2048 --sparsity=0.9
ab --lhs=s4 --m=4096 --k=4096 --n=16 --sparsity=0.5
ab --lhs=s4 --m=14336 --k=4096 --n=16 --sparsity=0.5
ab --lhs=s4 --m=4096 --k=4096 --n=2048 --sparsity=0.9
ab --lhs=s4 --m=4096 --k=11008 --n=64 --sparsity=0.5
echo "ab done $(date -u +%T)" >> $R/gpu.txt
LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib timeout 330 $B/magicube-bench --sections=llm --llm-grid=default --filter=L4-R8 --v=8 --no-plots --out-dir=$R/llm-l4r8 > $R/llm-l4r8.log 2>&1; echo "l4r8 rc=$? $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s20d.tgz s20d && rm -rf s20d
