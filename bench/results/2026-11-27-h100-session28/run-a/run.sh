#!/bin/bash
# Session 28 run-a: the decode kernel at prefill N on residue-balanced A (each row-block's columns
# spread evenly over the 8 residues mod 8: no ldmatrix bank conflicts left) against uniform A
# (same nnz a row-block), to bound what a recoloring of B's shared rows can buy.
R=$OUT/s28a; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
B=.carry/bin; T0=$(date +%s)
one() { tag=$1; shift; x=$( ( MAGICUBE_CACHE_DIR=/tmp/c28a timeout 120 $B/magicube run -v=8 --lhs=s8 --rhs=s8 --flush-l2 --route=sparse "$@" 2>&1 ) | grep -E "^plan|^time|exact|rror" | sed -e 's/(bitwise.*//' -e 's/ elements equal.*//' -e 's/over .*//' -e 's/(min.*//' | tr '\n' ' ')
  echo "$tag $* | $x" >> $R/ab.txt; }
for n in 2048 8192; do for mk in m4096k4096 m14336k4096 m4096k11008; do for rep in 1 2; do
  [ $(( $(date +%s) - T0 )) -gt 400 ] && break 3
  r=20; [ $n -gt 2048 ] && r=10
  one uni --repeat=$r -n=$n --matrix=.carry/mx/${mk}_uni.smtx
  one bal --repeat=$r -n=$n --matrix=.carry/mx/${mk}_bal.smtx
done; done; done
echo "done $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s28a.tgz s28a && rm -rf s28a
