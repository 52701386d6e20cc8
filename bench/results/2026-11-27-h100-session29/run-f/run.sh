#!/bin/bash
# Session 29 run-f (generator 34): `magicube tune --verify --flush-l2` on a decode and a prefill
# problem (every candidate, the warps knob included), then `magicube run` with the stored choice.
R=$OUT/s29f; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c29f
B=.carry/bin
for a in "-m=6144 -k=4096 -n=16 --sparsity=0.5" "-m=4096 -k=4096 -n=2048 --sparsity=0.9"; do
  echo "== run before tune: $a" >> $R/tune.txt
  timeout 60 $B/magicube run -v=8 --lhs=s8 --rhs=s8 --flush-l2 --route=sparse --repeat=20 $a 2>&1 | grep -E "^time|chosen|exact" >> $R/tune.txt
  echo "== tune: $a" >> $R/tune.txt
  ( time timeout 200 $B/magicube tune -v=8 --lhs=s8 --rhs=s8 --flush-l2 --verify --repeat=20 $a ) >> $R/tune.txt 2>&1
  echo "== run after tune: $a" >> $R/tune.txt
  timeout 60 $B/magicube run -v=8 --lhs=s8 --rhs=s8 --flush-l2 --route=sparse --repeat=20 $a 2>&1 | grep -E "^time|chosen|exact" >> $R/tune.txt
done
echo "done $(date -u +%T)" >> $R/gpu.txt
cat $R/tune.txt | cut -c1-220
