#!/bin/bash
# Session 25 run-g: the decode skeleton (47: no slice, no bounds load, no mma/ldmatrix) stripped
# further: 64 no PDL, 128 no cut-sum phase, 256 no in-loop C stores; the probe for reference.
R=$OUT/s25g; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
B=.carry/bin
one() { v=$1; shift; x=$(MAGICUBE_EXP_NOCHECK=1 MAGICUBE_EXP_DEC=$v MAGICUBE_CACHE_DIR=/tmp/g$v timeout 60 $B/magicube run -v=8 --lhs=s8 --rhs=s8 --flush-l2 "$@" 2>&1 | grep -E "^time|^layer|rror" | sed -e 's/over .*//' -e 's/(min.*//' | tr '\n' ' ')
  echo "$v $* | $x" >> $R/ab.txt; }
for p in "-m=4096 -k=4096 -n=16 --sparsity=0.5" "-m=14336 -k=4096 -n=16 --sparsity=0.5"; do
  for rep in 1 2; do for v in 1 47 111 175 431 495; do one $v --route=sparse --repeat=20 $p; done; done
done
.carry/exp/patprobe > $R/patprobe.txt 2>&1
echo "done $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s25g.tgz s25g && rm -rf s25g
