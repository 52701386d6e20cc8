#!/bin/bash
# Session 26 run-a: the decode kernel (generator 32, 16-bit indices) on three slot orders of A:
# bank-balanced over the whole row-block (today), balanced within each stride of 32, columns in order.
R=$OUT/s26a; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
B=.carry/bin
one() { tag=$1; shift; x=$(MAGICUBE_EXP_BAL=$tag MAGICUBE_CACHE_DIR=/tmp/c timeout 60 $B/magicube run -v=8 --lhs=s8 --rhs=s8 --flush-l2 "$@" 2>&1 | grep -E "^time|^layer|exact|rror" | sed -e 's/(bitwise.*//' -e 's/ elements equal.*//' -e 's/over .*//' -e 's/(min.*//' | tr '\n' ' ')
  echo "$tag $* | $x" >> $R/ab.txt; }
for p in "-m=4096 -k=4096 -n=16 --sparsity=0.5" "-m=4096 -k=4096 -n=16 --sparsity=0.7" "-m=14336 -k=4096 -n=16 --sparsity=0.5" "-m=11008 -k=4096 -n=16 --sparsity=0.5" "-m=4096 -k=14336 -n=16 --sparsity=0.5" "-m=14336 -k=4096 -n=64 --sparsity=0.7" "-m=4096 -k=4096 -n=1 --sparsity=0.5"; do
  for rep in 1 2; do for m in row stride none; do one $m --route=sparse --repeat=20 $p; done; done
done
for rep in 1 2; do for m in row stride none; do one $m --route=sparse --repeat=10 --layers=16 -m=4096 -k=4096 -n=16 --sparsity=0.5; done; done
echo "done $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s26a.tgz s26a && rm -rf s26a
