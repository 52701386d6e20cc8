#!/bin/bash
# Session 33 run-g: N = 16384 (the longest prompt), past the grid's 8192: the dispatch's
# choice (no --route) against each route pinned, s = 0.5 and 0.9, L2 flushed, every result checked.
tar xJf .carry/pkg.tar.xz -C .carry
R=$OUT/s33g; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c33g
for a in "-m=4096 -k=4096" "-m=14336 -k=4096" "-m=4096 -k=14336"; do for s in 0.9 0.5; do for r in auto sparse dense; do
  [ $SECONDS -gt 400 ] && break 3
  rr=; [ $r != auto ] && rr=--route=$r
  x=$(timeout 90 .carry/bin/magicube run -v=8 --flush-l2 $rr --lhs=s8 --rhs=s8 --repeat=10 --sparsity=$s $a -n=16384 2>&1 | grep -E "^plan|^route|^time|exact|rror" | sed -e 's/ elements equal.*//' -e 's/over .*//' -e 's/(chosen by.*//' | tr '\n' ' ')
  echo "$r s=$s $a N=16384 | $x" >> $R/n16384.txt
done; done; done
cat $R/n16384.txt
cd $OUT && tar czf s33g.tgz s33g && rm -rf s33g
