#!/bin/bash
# Session 30 run-j: run-i again with the cluster plan itself (--bsn=16 --panel=7168: two 16-column slices)
# the policy): the default plan against --panel=7168, alternating, twice.
tar xJf .carry/pkg.tar.xz -C .carry
R=$OUT/s30j; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
one() { tag=$1; shift; y=$( ( MAGICUBE_CACHE_DIR=/tmp/c30i$tag timeout 60 .carry/bin/magicube run -v=8 --flush-l2 --route=sparse --lhs=s8 --rhs=s8 --repeat=20 "$@" 2>&1 ) | grep -E "^time|exact|rror|^plan" | sed -e 's/(chosen.*//' -e 's/(bitwise.*//' -e 's/ elements equal.*//' -e 's/over .*//' -e 's/(min.*//' | tr '\n' ' ')
  echo "$tag $* | $y" >> $R/ab.txt; }
for rep in 1 2; do
  for a in "-n=32 --sparsity=0.5" "-n=32 --sparsity=0.7" "-n=32 --sparsity=0.9" "-n=24 --sparsity=0.5"; do
    one def -m=4096 -k=14336 $a; one cl -m=4096 -k=14336 $a --bsn=16 --panel=7168
  done
done
echo "done $(date -u +%T)" >> $R/gpu.txt
cat $R/gpu.txt; sed -e 's/exact: yes ([0-9]*//' $R/ab.txt | cut -c1-170
cd $OUT && tar czf s30j.tgz s30j && rm -rf s30j
