#!/bin/bash
# Session 26 run-d: the decode kernel's block run without the stride_next loads (MAGICUBE_EXP_NOSN:
# bs/be by arithmetic, row-blocks cut between blocks: results wrong on purpose, timing only) against
# generator 32: what the round trip before the ring's first loads costs.
R=$OUT/s26d; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_EXP_NOCHECK=1
B=.carry/bin
one() { tag=$1; shift; if [ $tag = base ]; then unset MAGICUBE_EXP_NOSN; else export MAGICUBE_EXP_NOSN=1; fi
  x=$(MAGICUBE_CACHE_DIR=/tmp/c$tag timeout 60 $B/magicube run -v=8 --lhs=s8 --rhs=s8 --flush-l2 --route=sparse "$@" 2>&1 | grep -E "^time|^layer|exact|rror" | sed -e 's/(bitwise.*//' -e 's/ elements equal.*//' -e 's/over .*//' -e 's/(min.*//' | tr '\n' ' ')
  echo "$tag $* | $x" >> $R/ab.txt; }
for p in "-m=4096 -k=4096 -n=16 --sparsity=0.5" "-m=4096 -k=4096 -n=16 --sparsity=0.7" "-m=4096 -k=4096 -n=16 --sparsity=0.9" "-m=14336 -k=4096 -n=16 --sparsity=0.5" "-m=4096 -k=14336 -n=16 --sparsity=0.5"; do
  for rep in 1 2 3; do for v in base nosn; do one $v --repeat=20 $p; done; done
done
for rep in 1 2; do for v in base nosn; do one $v --repeat=10 --layers=16 -m=4096 -k=4096 -n=16 --sparsity=0.5; done; done
echo "done $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s26d.tgz s26d && rm -rf s26d
