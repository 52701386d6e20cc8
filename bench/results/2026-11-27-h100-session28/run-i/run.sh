#!/bin/bash
# Session 28 run-i: the decode kernels' loads without L1 allocation (A's values and indices:
# ld.global.nc.L1::no_allocate, MAGICUBE_EXP_NA) and the slice copy through L2 only (cp.async.cg,
# MAGICUBE_EXP_CG), experiment switches in codegen (not committed), against the committed kernels,
# alternating, twice.
R=$OUT/s28i; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
B=.carry/bin; T0=$(date +%s)
one() { tag=$1; shift; x=$( ( case $tag in na) export MAGICUBE_EXP_NA=1;; cg) export MAGICUBE_EXP_CG=1;; both) export MAGICUBE_EXP_NA=1 MAGICUBE_EXP_CG=1;; esac
  MAGICUBE_CACHE_DIR=/tmp/c28i$tag timeout 120 $B/magicube run -v=8 --lhs=s8 --rhs=s8 --flush-l2 --route=sparse "$@" 2>&1 ) | grep -E "^time|exact|rror" | sed -e 's/(bitwise.*//' -e 's/ elements equal.*//' -e 's/over .*//' -e 's/(min.*//' | tr '\n' ' ')
  echo "$tag $* | $x" >> $R/ab.txt; }
for rep in 1 2; do
for a in "-m=4096 -k=4096 -n=2048 --sparsity=0.9" "-m=14336 -k=4096 -n=2048 --sparsity=0.9" "-m=4096 -k=11008 -n=2048 --sparsity=0.9" \
         "-m=4096 -k=4096 -n=512 --sparsity=0.7" "-m=4096 -k=4096 -n=16 --sparsity=0.5" "-m=14336 -k=4096 -n=16 --sparsity=0.5"; do
  [ $(( $(date +%s) - T0 )) -gt 300 ] && break 2
  for tag in base na cg both; do one $tag --repeat=20 $a; done
done; done
echo "done $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s28i.tgz s28i && rm -rf s28i
