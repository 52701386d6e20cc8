#!/bin/bash
# Session 28 run-d: the timeline (MAGICUBE_EXP_TIMES) without the L2 flush: does B's slice land sooner from L2?
R=$OUT/s28d; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
B=.carry/bin
MAGICUBE_EXP_TIMES=1 MAGICUBE_CACHE_DIR=/tmp/c28b timeout 60 $B/magicube run -v=8 --lhs=s8 --rhs=s8 --route=sparse --warmup=1 --repeat=3 -m=4096 -k=4096 -n=2048 --sparsity=0.9 > $R/nf_a4096n2048.txt 2>&1
MAGICUBE_EXP_TIMES=1 MAGICUBE_CACHE_DIR=/tmp/c28b timeout 60 $B/magicube run -v=8 --lhs=s8 --rhs=s8 --route=sparse --warmup=1 --repeat=3 -m=4096 -k=4096 -n=512 --sparsity=0.9 > $R/nf_a4096n512.txt 2>&1
MAGICUBE_EXP_TIMES=1 MAGICUBE_CACHE_DIR=/tmp/c28b timeout 60 $B/magicube run -v=8 --lhs=s8 --rhs=s8 --route=sparse --flush-l2 --warmup=1 --repeat=3 -m=4096 -k=4096 -n=512 --sparsity=0.9 > $R/f_a4096n512.txt 2>&1
for a in "-n=2048" "-n=512"; do for f in "" "--flush-l2"; do MAGICUBE_CACHE_DIR=/tmp/c28d $B/magicube run -v=8 --lhs=s8 --rhs=s8 --route=sparse $f --repeat=20 -m=4096 -k=4096 --sparsity=0.9 $a 2>&1 | grep -E "^time" | sed "s/^/$a $f /" >> $R/ref.txt; done; done
cd $OUT && tar czf s28d.tgz s28d && rm -rf s28d
