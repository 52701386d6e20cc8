#!/bin/bash
# Session 22 run-c: the panel kernel's ring depth and chunking (experiment env vars), ncu of depth 8
R=$OUT/s22c; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
B=.carry/bin
one() { local tag=$1; shift
  unset MAGICUBE_EXP_PANEL_CHUNK MAGICUBE_EXP_DEPTH
  case $tag in c128) export MAGICUBE_EXP_PANEL_CHUNK=128;; d8) export MAGICUBE_EXP_DEPTH=8;; d6) export MAGICUBE_EXP_DEPTH=6;; d8c128) export MAGICUBE_EXP_DEPTH=8 MAGICUBE_EXP_PANEL_CHUNK=128;; esac
  x=$(MAGICUBE_CACHE_DIR=/tmp/c$tag timeout 60 $B/magicube run --lhs=s8 --rhs=s8 -v=8 --flush-l2 --repeat=20 --sparsity=0.9 --bsn=48 "$@" 2>&1 | grep -E "^time|^kernel|exact|rror" | tr '\n' ' ')
  echo "$tag $* | $x" >> $R/ab.txt; }
for rep in 1 2; do
 for tag in base d8 d6 c128 d8c128; do
  one $tag -m=4096 -k=4096 -n=2048 --panel=4096
  one $tag -m=4096 -k=4096 -n=2048 --decode
  one $tag -m=4096 -k=11008 -n=8192 --panel=3712
  one $tag -m=4096 -k=11008 -n=2048 --panel=3712
  one $tag -m=4096 -k=11008 -n=512 --panel=3712
  one $tag -m=4096 -k=14336 -n=2048 --panel=4800
 done
 echo "rep $rep $(date -u +%T)" >> $R/gpu.txt
done
cd $OUT && tar czf s22c.tgz s22c && rm -rf s22c
