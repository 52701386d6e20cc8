#!/bin/bash
# panel passes: the RMW read's stall: refill first (EARLY), L1 prefetch at the first stride (PF), red.global (RED)
R=$OUT/s15e; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/exp/lib
run() { local c=$1; shift; MAGICUBE_CACHE_DIR=/tmp/ab62_$c timeout 90 .carry/exp/bin/magicube run --op=spmm --lhs=s8 --rhs=s8 -v=8 "$@" --route=sparse --flush-l2 --repeat=20 2>&1 | grep -E 'median|exact|^plan|error' | tr '\n' ' '; echo; }
for rep in 1 2; do
  for var in "base:X=1" "early:MAGICUBE_EXP_EARLY=1" "pf:MAGICUBE_EXP_PF=1" "red:MAGICUBE_EXP_RED=1" "epf:MAGICUBE_EXP_EARLY=1 MAGICUBE_EXP_PF=1" "ered:MAGICUBE_EXP_EARLY=1 MAGICUBE_EXP_RED=1"; do
    c=${var%%:*}; ev=${var#*:}
    for args in "--m=4096 --k=4096 --n=2048 --sparsity=0.9 --panel=2048 --bsn=48" "--m=4096 --k=14336 --n=2048 --sparsity=0.9 --panel=4800 --bsn=48" "--m=4096 --k=14336 --n=512 --sparsity=0.7 --panel=4800 --bsn=48" "--m=4096 --k=11008 --n=8192 --sparsity=0.9 --panel=3712 --bsn=48"; do
      echo "rep$rep $c $args :: $(env $ev bash -c "$(declare -f run); run $c $args")" >> $R/ab.txt
    done; done; done
date -u >> $R/gpu.txt
cd $OUT && tar czf s15e.tgz s15e && rm -rf s15e
