#!/bin/bash
# Session 30 run-b: generator 35 (A's 5 strides past the ring asked of L2 by a bulk prefetch;
# MAGICUBE_EXP_PF overrides the count, 0 = none, in this build only) against generator 34,
# alternating, twice; every run checked exact.
R=$OUT/s30b; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
T0=$(date +%s)
one() { tag=$1; shift; case $tag in g34) bin=.carry/magicube34; pf=5 ;; pf*) bin=.carry/magicube35; pf=${tag#pf} ;; esac
  x=$( ( MAGICUBE_EXP_PF=$pf MAGICUBE_CACHE_DIR=/tmp/c30b$tag timeout 60 $bin run -v=8 --flush-l2 --route=sparse "$@" 2>&1 ) | grep -E "^time|exact|rror" | sed -e 's/(bitwise.*//' -e 's/ elements equal.*//' -e 's/over .*//' -e 's/(min.*//' | tr '\n' ' ')
  echo "$tag $* | $x" >> $R/ab.txt; }
for rep in 1 2; do
for a in "-m=14336 -k=4096 -n=16 --sparsity=0.5" "-m=14336 -k=4096 -n=16 --sparsity=0.7" "-m=11008 -k=4096 -n=16 --sparsity=0.7" "-m=11008 -k=4096 -n=16 --sparsity=0.5" \
         "-m=4096 -k=14336 -n=16 --sparsity=0.5" "-m=4096 -k=14336 -n=16 --sparsity=0.7" "-m=6144 -k=4096 -n=16 --sparsity=0.5" "-m=4096 -k=4096 -n=16 --sparsity=0.5" \
         "-m=4096 -k=4096 -n=16 --sparsity=0.7" "-m=4096 -k=11008 -n=16 --sparsity=0.7" "-m=14336 -k=4096 -n=64 --sparsity=0.5" "-m=14336 -k=4096 -n=1 --sparsity=0.9"; do
  [ $(( $(date +%s) - T0 )) -gt 420 ] && break 2
  for tag in g34 pf5 pf0 pf3; do one $tag --lhs=s8 --rhs=s8 --repeat=20 $a; done
done
for tag in g34 pf5; do one $tag --lhs=s4 --rhs=s8 --repeat=20 -m=14336 -k=4096 -n=16 --sparsity=0.7; one $tag --lhs=s8 --rhs=s8 --repeat=10 --layers=16 -m=14336 -k=4096 -n=16 --sparsity=0.7; one $tag --lhs=s8 --rhs=s8 --repeat=10 --layers=16 -m=4096 -k=4096 -n=16 --sparsity=0.5; done
done
echo "done $(date -u +%T)" >> $R/gpu.txt
cat $R/ab.txt | sed -e 's/--lhs=s8 --rhs=s8 //' -e 's/exact: yes ([0-9]*//' | awk -F'|' '{print $1 "|" $2}'
cd $OUT && tar czf s30b.tgz s30b && rm -rf s30b
