#!/bin/bash
# Session 28 run-b: the decode kernel's timeline: each warp's globaltimer at entry, when the slice
# landed, at the loop's end and at its end (MAGICUBE_EXP_TIMES, an experiment switch in codegen,
# not committed), one printf a warp; 3 timed launches after 1 warm-up.
R=$OUT/s28b; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
B=.carry/bin
one() { tag=$1; shift; MAGICUBE_EXP_TIMES=1 MAGICUBE_CACHE_DIR=/tmp/c28b timeout 120 $B/magicube run -v=8 --lhs=s8 --rhs=s8 --flush-l2 --route=sparse --warmup=1 --repeat=3 "$@" > $R/$tag.txt 2>&1; }
one a4096n2048 -m=4096 -k=4096 -n=2048 --sparsity=0.9
one a14336n2048 -m=14336 -k=4096 -n=2048 --sparsity=0.9
one a4096n8192 -m=4096 -k=4096 -n=8192 --sparsity=0.9
one a4096k11008n2048 -m=4096 -k=11008 -n=2048 --sparsity=0.9
one d4096n16 -m=4096 -k=4096 -n=16 --sparsity=0.5
one d14336n16 -m=14336 -k=4096 -n=16 --sparsity=0.5
# and without the switch, the same runs' times for reference
for a in "-m=4096 -k=4096 -n=2048 --sparsity=0.9" "-m=4096 -k=4096 -n=16 --sparsity=0.5"; do
  MAGICUBE_CACHE_DIR=/tmp/c28bref $B/magicube run -v=8 --lhs=s8 --rhs=s8 --flush-l2 --route=sparse --repeat=20 $a 2>&1 | grep -E "^time|^plan" >> $R/ref.txt; done
echo "done $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s28b.tgz s28b && rm -rf s28b
