#!/bin/bash
# Session 25 run-a: the decode kernel's fixed cost. MAGICUBE_EXP_DEC bits (experiment, not kept):
# 1 = the tail's stride_meta load issued before the ring's wait (exact); 2 = no slice copy
# (timing only); 4 = the run's bounds without stride_next (timing only).
R=$OUT/s25a; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
B=.carry/bin
one() { v=$1; shift; x=$(MAGICUBE_EXP_NOCHECK=1 MAGICUBE_EXP_DEC=$v MAGICUBE_CACHE_DIR=/tmp/c$v timeout 60 $B/magicube run -v=8 --lhs=s8 --rhs=s8 --flush-l2 "$@" 2>&1 | grep -E "^time|^layer|exact|rror" | sed -e 's/(bitwise.*//' -e 's/over .*//' -e 's/(min.*//' | tr '\n' ' ')
  echo "$v $* | $x" >> $R/ab.txt; }
for p in "-m=4096 -k=4096 -n=16 --sparsity=0.5" "-m=4096 -k=4096 -n=1 --sparsity=0.5" "-m=4096 -k=4096 -n=16 --sparsity=0.7" "-m=14336 -k=4096 -n=16 --sparsity=0.5" "-m=4096 -k=14336 -n=16 --sparsity=0.5" "-m=11008 -k=4096 -n=16 --sparsity=0.5"; do
  one 0 --route=dense --repeat=20 $p
  for rep in 1 2; do for v in 0 1 3 5 7; do one $v --route=sparse --repeat=20 $p; done; done
done
for rep in 1 2; do for v in 0 1; do one $v --route=sparse --repeat=10 --layers=16 -m=4096 -k=4096 -n=16 --sparsity=0.5; done; done
echo "done $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s25a.tgz s25a && rm -rf s25a
