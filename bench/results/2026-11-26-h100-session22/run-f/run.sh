#!/bin/bash
# Session 22 run-f: the flat int epilogue, second form (guarded element stores at C's edges, no local array): A/B
R=$OUT/s22f; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
ab() { for rep in 1 2; do for v in old new; do
  if [ $v = old ]; then L=.carry/old/lib; B=.carry/old/bin; else L=.carry/lib; B=.carry/bin; fi
  x=$(LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/$L MAGICUBE_CACHE_DIR=/tmp/c$v timeout 60 $B/magicube run -v=8 --flush-l2 --repeat=20 "$@" 2>&1 | grep -E "^time|^kernel|exact|rror" | tr '\n' ' ')
  echo "$v $* | $x" >> $R/ab.txt; done; done; }
ab --lhs=s8 --rhs=s8 -m=4096 -k=4096 -n=2048 --sparsity=0.9 --decode --bsn=48
ab --lhs=s8 --rhs=s8 -m=4096 -k=4096 -n=2048 --sparsity=0.9 --decode --bsn=48 --c-order=col
ab --lhs=s4 --rhs=s8 -m=4096 -k=4096 -n=2048 --sparsity=0.9 --decode --bsn=48
ab --lhs=s4 --rhs=s8 -m=4096 -k=4096 -n=2048 --sparsity=0.9 --decode --bsn=48 --c-order=col
ab --lhs=s8 --rhs=s8 -m=4096 -k=11008 -n=2048 --sparsity=0.9 --panel=3712 --bsn=48
ab --lhs=s8 --rhs=s8 -m=4096 -k=4096 -n=512 --sparsity=0.9 --route=sparse
ab --lhs=s8 --rhs=s8 -m=4096 -k=4096 -n=2048 --sparsity=0.7 --decode --bsn=48
ab --lhs=s8 --rhs=s8 -m=4096 -k=4096 -n=16 --sparsity=0.5 --route=sparse
echo "ab done $(date -u +%T)" >> $R/gpu.txt
LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/ct timeout 200 .carry/bin/test_spmm_gpu > $R/spmm.txt 2>&1; echo "spmm rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/spmm.txt | tr '\n' ' ')" >> $R/gpu.txt
cd $OUT && tar czf s22f.tgz s22f && rm -rf s22f
