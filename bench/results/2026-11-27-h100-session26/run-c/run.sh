#!/bin/bash
# Session 26 run-c: B's slice copy at large K. The copy loop started at a rotated offset per block
# (MAGICUBE_EXP_STAG=n: n starting points, by blockIdx.y % n) against the plain loop, and skipped
# (timing only: results wrong on purpose), generator 32 otherwise.
R=$OUT/s26c; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
B=.carry/bin
one() { tag=$1; shift; if [ $tag = base ]; then unset MAGICUBE_EXP_STAG; else export MAGICUBE_EXP_STAG=$tag; fi
  x=$(MAGICUBE_CACHE_DIR=/tmp/c$tag timeout 60 $B/magicube run -v=8 --lhs=s8 --rhs=s8 --flush-l2 --route=sparse "$@" 2>&1 | grep -E "^time|exact|rror" | sed -e 's/(bitwise.*//' -e 's/ elements equal.*//' -e 's/over .*//' -e 's/(min.*//' | tr '\n' ' ')
  echo "$tag $* | $x" >> $R/ab.txt; }
for p in "-m=4096 -k=14336 -n=16 --sparsity=0.5" "-m=4096 -k=11008 -n=16 --sparsity=0.5" "-m=4096 -k=4096 -n=16 --sparsity=0.5" "-m=14336 -k=4096 -n=16 --sparsity=0.5" "-m=4096 -k=14336 -n=1 --sparsity=0.7"; do
  for rep in 1 2; do for v in base 4 16 132 skip; do one $v --repeat=20 $p; done; done
done
echo "done $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s26c.tgz s26c && rm -rf s26c
