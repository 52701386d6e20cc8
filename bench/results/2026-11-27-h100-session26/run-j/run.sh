#!/bin/bash
# Session 26 run-j: each warp prefetching its piece's next strides (past the ring) into L2 before it
# waits for B's slice (MAGICUBE_EXP_L2PF=cap strides; prefetch.global.L2 a 128-byte line a lane)
# against generator 32, one call and chained.
R=$OUT/s26j; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
B=.carry/bin
one() { tag=$1; shift; if [ $tag = base ]; then unset MAGICUBE_EXP_L2PF; else export MAGICUBE_EXP_L2PF=${tag#pf}; fi
  x=$(MAGICUBE_CACHE_DIR=/tmp/c$tag timeout 60 $B/magicube run -v=8 --lhs=s8 --rhs=s8 --flush-l2 --route=sparse "$@" 2>&1 | grep -E "^time|^layer|exact|rror" | sed -e 's/(bitwise.*//' -e 's/ elements equal.*//' -e 's/over .*//' -e 's/(min.*//' | tr '\n' ' ')
  echo "$tag $* | $x" >> $R/ab.txt; }
for p in "-m=4096 -k=4096 -n=16 --sparsity=0.5" "-m=4096 -k=4096 -n=16 --sparsity=0.7" "-m=14336 -k=4096 -n=16 --sparsity=0.5" "-m=4096 -k=14336 -n=16 --sparsity=0.5"; do
  for rep in 1 2; do for v in base pf16 pf64 pf256; do one $v --repeat=20 $p; done; done
done
for rep in 1 2; do for v in base pf16 pf64 pf256; do one $v --repeat=10 --layers=16 -m=4096 -k=4096 -n=16 --sparsity=0.5; done; done
echo "done $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s26j.tgz s26j && rm -rf s26j
