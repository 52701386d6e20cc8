#!/bin/bash
# Session 22 run-e: the flat int epilogue (pairs at constant offsets, a rolled loop at C's edges): GPU tests, A/B against the previous build
R=$OUT/s22e; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export PATH=$PATH:/usr/local/cuda/bin
t() { local name=$1; shift; LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/ct timeout 300 "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(date -u +%T) $(grep -E '^\[  (PASSED|FAILED)' $R/$name.txt | tr '\n' ' ')" >> $R/gpu.txt; }
t spmm .carry/bin/test_spmm_gpu
t epilogue .carry/bin/test_epilogue_gpu
t capi .carry/bin/test_capi_gpu
t api .carry/bin/test_api --gtest_filter='ApiGpu*'
ab() { for rep in 1 2; do for v in old new; do
  if [ $v = old ]; then L=.carry/old/lib; B=.carry/old/bin; else L=.carry/lib; B=.carry/bin; fi
  x=$(LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/$L MAGICUBE_CACHE_DIR=/tmp/c$v timeout 60 $B/magicube run -v=8 --flush-l2 --repeat=20 "$@" 2>&1 | grep -E "^time|^kernel|exact|rror" | tr '\n' ' ')
  echo "$v $* | $x" >> $R/ab.txt; done; done; }
ab --lhs=s8 --rhs=s8 -m=4096 -k=4096 -n=2048 --sparsity=0.9 --decode --bsn=48
ab --lhs=s8 --rhs=s8 -m=4096 -k=4096 -n=2048 --sparsity=0.9 --decode --bsn=48 --c-order=col
ab --lhs=s4 --rhs=s8 -m=4096 -k=4096 -n=2048 --sparsity=0.9 --decode --bsn=48
ab --lhs=s4 --rhs=s8 -m=4096 -k=4096 -n=2048 --sparsity=0.9 --decode --bsn=48 --c-order=col
ab --lhs=s8 --rhs=s8 -m=14336 -k=4096 -n=8192 --sparsity=0.9 --decode --bsn=48 --c-order=col
ab --lhs=s8 --rhs=s8 -m=4096 -k=11008 -n=2048 --sparsity=0.9 --panel=3712 --bsn=48
ab --lhs=s8 --rhs=s8 -m=4096 -k=11008 -n=8192 --sparsity=0.9 --panel=3712 --bsn=48 --c-order=col
ab --lhs=s8 --rhs=s8 -m=4096 -k=14336 -n=2048 --sparsity=0.9 --panel=4800 --bsn=48
ab --lhs=s8 --rhs=s8 -m=4096 -k=4096 -n=16 --sparsity=0.5 --route=sparse
ab --lhs=s8 --rhs=s8 -m=14336 -k=4096 -n=16 --sparsity=0.5 --route=sparse
ab --lhs=s8 --rhs=s8 -m=4096 -k=4096 -n=512 --sparsity=0.9 --route=sparse
ab --lhs=s8 --rhs=s8 -m=4096 -k=4096 -n=256 --sparsity=0.7 --route=sparse --bsn=128
ab --lhs=s4 --rhs=s4 -m=4096 -k=4096 -n=2048 --sparsity=0.9 --route=sparse
echo "ab done $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s22e.tgz s22e && rm -rf s22e
