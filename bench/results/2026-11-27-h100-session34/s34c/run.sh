#!/bin/bash
# Session 34 run-c: where the chunked slice's time goes (experiment build). c0: whole-slice wait; c8: 8 chunks,
# gated loop; A8: 8 chunks (copy + arrivals), every chunk waited for before the loop, gate never taken;
# B8: the same wait before the loop, gate code run (reduce-max, passing waits) as in c8. Alternating, twice.
R=$OUT/s34c; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
tar xJf .carry/pkg.tar.xz -C .carry
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
one() { tag=$1; shift; case $tag in c0) env="MAGICUBE_EXP_SLICE_CHUNKS=0";; c8) env="MAGICUBE_EXP_SLICE_CHUNKS=8";; A8) env="MAGICUBE_EXP_SLICE_CHUNKS=8 MAGICUBE_EXP_MODE=A";; B8) env="MAGICUBE_EXP_SLICE_CHUNKS=8 MAGICUBE_EXP_MODE=B";; esac
  x=$( ( env $env MAGICUBE_CACHE_DIR=/tmp/c34$tag timeout 60 .carry/bin/magicube run -v=8 --flush-l2 --route=sparse --lhs=s8 --rhs=s8 --repeat=20 "$@" 2>&1 ) | grep -E "^time|exact|rror" | sed -e 's/ elements equal.*//' -e 's/over .*//' | tr '\n' ' ')
  echo "$tag $* | $x" >> $R/ab.txt; }
for rep in 1 2; do
for a in "-m=4096 -k=4096 -n=16 --sparsity=0.5" "-m=4096 -k=4096 -n=2048 --sparsity=0.9" "-m=14336 -k=4096 -n=16 --sparsity=0.5"; do
  for tag in c0 c8 A8 B8; do one $tag $a; done
done; done
cat $R/ab.txt
cd $OUT && tar czf s34c.tgz s34c && rm -rf s34c
