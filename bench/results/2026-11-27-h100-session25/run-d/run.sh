#!/bin/bash
# Session 25 run-d: the decode ring's depth (MAGICUBE_EXP_DEPTH, experiment) with the tail's
# stride_meta load hoisted (MAGICUBE_EXP_DEC=1).
R=$OUT/s25d; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
B=.carry/bin
one() { d=$1; shift; x=$(MAGICUBE_EXP_DEC=1 MAGICUBE_EXP_DEPTH=$d MAGICUBE_CACHE_DIR=/tmp/d$d timeout 60 $B/magicube run -v=8 --lhs=s8 --rhs=s8 --flush-l2 "$@" 2>&1 | grep -E "^time|^layer|exact|rror" | sed -e 's/(bitwise.*//' -e 's/ elements equal.*//' -e 's/over .*//' -e 's/(min.*//' | tr '\n' ' ')
  echo "$d $* | $x" >> $R/ab.txt; }
for p in "-m=4096 -k=4096 -n=16 --sparsity=0.5" "-m=4096 -k=4096 -n=1 --sparsity=0.5" "-m=4096 -k=4096 -n=16 --sparsity=0.7" "-m=14336 -k=4096 -n=16 --sparsity=0.5" "-m=4096 -k=14336 -n=16 --sparsity=0.5" "-m=11008 -k=4096 -n=16 --sparsity=0.5" "-m=6144 -k=4096 -n=16 --sparsity=0.5"; do
  for rep in 1 2; do for d in 10 16 20 24; do one $d --route=sparse --repeat=20 $p; done; done
done
for rep in 1 2; do for d in 10 16 24; do one $d --route=sparse --repeat=10 --layers=16 -m=4096 -k=4096 -n=16 --sparsity=0.5; done; done
echo "done $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s25d.tgz s25d && rm -rf s25d
