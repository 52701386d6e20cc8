#!/bin/bash
# Session 26 run-f: the decode kernel as two blocks of 8 warps an SM (MAGICUBE_EXP_HALF) and with
# the weights' first loads issued before griddepcontrol.wait (MAGICUBE_EXP_PRE: the schedule, the
# run's bounds and the ring's first strides; B's slice after the wait), alone and chained.
R=$OUT/s26f; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
B=.carry/bin
one() { tag=$1; shift; unset MAGICUBE_EXP_HALF MAGICUBE_EXP_PRE
  case $tag in half) export MAGICUBE_EXP_HALF=1;; pre) export MAGICUBE_EXP_PRE=1;; both) export MAGICUBE_EXP_HALF=1 MAGICUBE_EXP_PRE=1;; esac
  x=$(MAGICUBE_CACHE_DIR=/tmp/c$tag timeout 60 $B/magicube run -v=8 --lhs=s8 --rhs=s8 --flush-l2 "$@" 2>&1 | grep -E "^time|^layer|exact|rror" | sed -e 's/(bitwise.*//' -e 's/ elements equal.*//' -e 's/over .*//' -e 's/(min.*//' | tr '\n' ' ')
  echo "$tag $* | $x" >> $R/ab.txt; }
for p in "-m=4096 -k=4096 -n=16 --sparsity=0.5" "-m=4096 -k=4096 -n=16 --sparsity=0.7" "-m=14336 -k=4096 -n=16 --sparsity=0.5"; do
  for rep in 1 2; do for v in base half pre both; do one $v --route=sparse --repeat=20 $p; done; done
done
for p in "-m=4096 -k=4096 -n=16 --sparsity=0.5" "-m=4096 -k=4096 -n=16 --sparsity=0.7" "-m=14336 -k=4096 -n=16 --sparsity=0.5"; do
  for rep in 1 2; do for v in base half pre both; do one $v --route=sparse --repeat=10 --layers=16 $p; done; done
done
for rep in 1 2; do one base --route=dense --repeat=10 --layers=16 -m=4096 -k=4096 -n=16 --sparsity=0.5; done
echo "done $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s26f.tgz s26f && rm -rf s26f
