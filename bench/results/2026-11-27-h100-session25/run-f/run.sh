#!/bin/bash
# Session 25 run-f: is host launch latency inside the timed window? The flush memset run 1 or 3
# times before each timed launch (MAGICUBE_EXP_FLUSH2=0/2), sparse and dense routes.
R=$OUT/s25f; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
B=.carry/bin
one() { f=$1; shift; x=$(MAGICUBE_EXP_FLUSH2=$f MAGICUBE_EXP_DEC=1 MAGICUBE_CACHE_DIR=/tmp/f1 timeout 60 $B/magicube run -v=8 --lhs=s8 --rhs=s8 --flush-l2 "$@" 2>&1 | grep -E "^time|^layer|rror" | sed -e 's/over .*//' -e 's/(min.*//' | tr '\n' ' ')
  echo "$f $* | $x" >> $R/ab.txt; }
for p in "-m=4096 -k=4096 -n=16 --sparsity=0.5" "-m=4096 -k=4096 -n=16 --sparsity=0.7" "-m=14336 -k=4096 -n=16 --sparsity=0.5"; do
  for rep in 1 2; do for f in 0 2; do one $f --route=sparse --repeat=20 $p; one $f --route=dense --repeat=20 $p; done; done
done
echo "done $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s25f.tgz s25f && rm -rf s25f
