#!/bin/bash
# Session 24 run-a: griddepcontrol.wait placement in the decode kernel (experiment switch
# MAGICUBE_EXP_PDL_EARLY: 0 = wait first (HEAD), 1 = after the run's two schedule loads,
# 2 = after the ring's first A loads too; B's slice copy after the wait in all).
R=$OUT/s24a; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
B=.carry/bin
ab() { for rep in 1 2; do for v in 0 1 2; do
  x=$(MAGICUBE_EXP_PDL_EARLY=$v MAGICUBE_CACHE_DIR=/tmp/c$v timeout 60 $B/magicube run -v=8 --flush-l2 --route=sparse "$@" 2>&1 | grep -E "^time|exact|rror" | sed -e 's/(bitwise.*//' -e 's/over .*//' | tr '\n' ' ')
  echo "$v $* | $x" >> $R/ab.txt; done; done; }
for p in "-m=4096 -k=4096 -n=16 --sparsity=0.5" "-m=4096 -k=4096 -n=16 --sparsity=0.7" "-m=4096 -k=4096 -n=1 --sparsity=0.9" "-m=14336 -k=4096 -n=16 --sparsity=0.5" "-m=4096 -k=14336 -n=16 --sparsity=0.7" "-m=11008 -k=4096 -n=64 --sparsity=0.7"; do
  ab --lhs=s8 --rhs=s8 --repeat=20 $p
  ab --lhs=s8 --rhs=s8 --repeat=10 --layers=16 $p
done
ab --lhs=s4 --rhs=s8 --repeat=10 --layers=16 -m=4096 -k=4096 -n=16 --sparsity=0.5
ab --lhs=s8 --rhs=s8 --repeat=10 --layers=16 -m=4096 -k=4096 -n=16 --sparsity=0.5 --out=bf16 --scale=rowcol --c-order=col
echo "ab done $(date -u +%T)" >> $R/gpu.txt
for v in 0 2; do MAGICUBE_EXP_PDL_EARLY=$v MAGICUBE_CACHE_DIR=/tmp/t$v timeout 200 $B/test_spmm_gpu --gtest_filter='*Decode*:*ColumnMajor*' > $R/spmm_gpu_$v.txt 2>&1; echo "spmm_gpu $v rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/spmm_gpu_$v.txt | tr '\n' ' ')" >> $R/gpu.txt
  MAGICUBE_EXP_PDL_EARLY=$v MAGICUBE_CACHE_DIR=/tmp/t$v timeout 100 $B/test_capi_gpu > $R/capi_$v.txt 2>&1; echo "capi $v rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/capi_$v.txt | tr '\n' ' ')" >> $R/gpu.txt; done
for v in 0 2; do f=$(ls /tmp/c$v/*/* 2>/dev/null | head -0); done
which cuobjdump >> $R/gpu.txt 2>&1
cd $OUT && tar czf s24a.tgz s24a && rm -rf s24a
