#!/bin/bash
# Session 29 run-c: the decode prologue's parts (probe), and the decode kernel's warp counts.
R=$OUT/s29c; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
.carry/probe29/decode_parts > $R/decode_parts.txt 2>&1
B=.carry/bin
for rep in 1 2; do
for a in "-m=4096 -k=4096 -n=16 --sparsity=0.5" "-m=14336 -k=4096 -n=16 --sparsity=0.5" "-m=6144 -k=4096 -n=16 --sparsity=0.5"; do
  for w in 16 8 24 32; do
    x=$( ( MAGICUBE_CACHE_DIR=/tmp/c29c timeout 60 $B/magicube run -v=8 --flush-l2 --route=sparse --lhs=s8 --rhs=s8 --repeat=20 --decode --bsn=16 --warps=$w $a 2>&1 ) | grep -E "^time|exact|rror" | sed -e 's/(bitwise.*//' -e 's/ elements equal.*//' -e 's/over .*//' | tr '\n' ' ')
    echo "w$w $a | $x" >> $R/warps.txt
  done
done; done
echo "done $(date -u +%T)" >> $R/gpu.txt
cat $R/decode_parts.txt $R/warps.txt
