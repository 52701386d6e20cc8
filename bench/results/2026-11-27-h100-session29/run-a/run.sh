#!/bin/bash
# Session 28 run-j: generator 34: the decode kernel's A loads past L1 (ld.global.nc.L1::no_allocate),
# none / values only / values and indices (MAGICUBE_EXP_NAMODE overrides the plan's choice; not
# committed), alternating, twice; GPU tests on the plan's choice (all, at 16 warps).
R=$OUT/s29a; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
B=.carry/bin; T0=$(date +%s)
MAGICUBE_CACHE_DIR=/tmp/t29a timeout 150 $B/test_spmm_gpu --gtest_filter='*Decode*:*ColumnMajor*' 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED) |Failure" > $R/test_spmm_gpu.txt
one() { tag=$1; shift; x=$( ( MAGICUBE_EXP_NAMODE=$tag MAGICUBE_CACHE_DIR=/tmp/c29a$tag timeout 60 $B/magicube run -v=8 --flush-l2 --route=sparse "$@" 2>&1 ) | grep -E "^time|exact|rror" | sed -e 's/(bitwise.*//' -e 's/ elements equal.*//' -e 's/over .*//' -e 's/(min.*//' | tr '\n' ' ')
  echo "$tag $* | $x" >> $R/ab.txt; }
for rep in 1 2; do
for a in "-m=4096 -k=4096 -n=16 --sparsity=0.5" "-m=14336 -k=4096 -n=16 --sparsity=0.5" "-m=11008 -k=4096 -n=16 --sparsity=0.5" \
         "-m=4096 -k=14336 -n=16 --sparsity=0.5" "-m=4096 -k=11008 -n=16 --sparsity=0.5" "-m=6144 -k=4096 -n=16 --sparsity=0.5" \
         "-m=4096 -k=4096 -n=16 --sparsity=0.7" "-m=14336 -k=4096 -n=16 --sparsity=0.7" "-m=4096 -k=4096 -n=64 --sparsity=0.5" "-m=14336 -k=4096 -n=1 --sparsity=0.5"; do
  [ $(( $(date +%s) - T0 )) -gt 400 ] && break 2
  for tag in none values all; do one $tag --lhs=s8 --rhs=s8 --repeat=20 $a; done
  [ $rep = 1 ] && echo "dense $a | $( ( MAGICUBE_CACHE_DIR=/tmp/c29ad timeout 60 $B/magicube run -v=8 --flush-l2 --route=dense --lhs=s8 --rhs=s8 --repeat=20 $a 2>&1 ) | grep -E '^time' | tr '\n' ' ')" >> $R/ab.txt
done
for tag in none all; do one $tag --lhs=s4 --rhs=s8 --repeat=20 -m=14336 -k=4096 -n=16 --sparsity=0.5; one $tag --lhs=s8 --rhs=s8 --repeat=10 --layers=16 -m=4096 -k=4096 -n=16 --sparsity=0.5; done
done
echo "done $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s29a.tgz s29a && rm -rf s29a
