#!/bin/bash
# Session 26 run-e: prefill s=0.9 on the decode kernel with wider slices in K panels (BSn 96 / 128:
# 6 / 8 accumulator tiles a stride, 8 warps, MAGICUBE_EXP_WIDE lifts the 64-column cap) against the
# policy's sparse plan (n48d / n48dp4800) and n64 in panels.
R=$OUT/s26e; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_EXP_WIDE=1
B=.carry/bin
one() { tag=$1; shift; x=$(MAGICUBE_CACHE_DIR=/tmp/c timeout 90 $B/magicube run -v=8 --lhs=s8 --rhs=s8 --flush-l2 --route=sparse "$@" 2>&1 | grep -E "^plan|^time|exact|rror" | sed -e 's/(chosen.*//' -e 's/(bitwise.*//' -e 's/ elements equal.*//' -e 's/over .*//' -e 's/(min.*//' | tr '\n' ' ')
  echo "$tag $* | $x" >> $R/ab.txt; }
for sh in "-m=4096 -k=4096 -n=2048" "-m=4096 -k=4096 -n=8192" "-m=14336 -k=4096 -n=2048" "-m=4096 -k=14336 -n=2048"; do
  case "$sh" in *k=14336*) P96=2048; P128=1792; P64=3584;; *) P96=2048; P128=1408; P64=2048;; esac
  for rep in 1 2; do
    one pol --repeat=10 $sh --sparsity=0.9
    one n64 --repeat=10 $sh --sparsity=0.9 --decode --bsn=64 --panel=$P64
    one n96 --repeat=10 $sh --sparsity=0.9 --decode --bsn=96 --panel=$P96
    one n128 --repeat=10 $sh --sparsity=0.9 --decode --bsn=128 --panel=$P128
  done
done
echo "done $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s26e.tgz s26e && rm -rf s26e
