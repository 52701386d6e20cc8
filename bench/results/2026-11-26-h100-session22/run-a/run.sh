#!/bin/bash
# Session 22 run-a: K panels in row-block chunks (MAGICUBE_EXP_PANEL_CHUNK, experiment): is the panels' red into C the cost?
R=$OUT/s22a; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
B=.carry/bin
one() { local ch=$1; shift
  if [ "$ch" = 0 ]; then unset MAGICUBE_EXP_PANEL_CHUNK; else export MAGICUBE_EXP_PANEL_CHUNK=$ch; fi
  x=$(MAGICUBE_CACHE_DIR=/tmp/c$ch timeout 60 $B/magicube run --lhs=s8 --rhs=s8 -v=8 --flush-l2 --repeat=20 --sparsity=0.9 "$@" 2>&1 | grep -E "^time|^kernel|exact|rror" | tr '\n' ' ')
  echo "chunk=$ch $* | $x" >> $R/ab.txt; }
for rep in 1 2; do
 for ch in 0 32 64 128; do
  one $ch -m=4096 -k=11008 -n=8192 --panel=3712 --bsn=48
  one $ch -m=4096 -k=11008 -n=2048 --panel=3712 --bsn=48
  one $ch -m=4096 -k=14336 -n=8192 --panel=4800 --bsn=48
  one $ch -m=4096 -k=14336 -n=2048 --panel=4800 --bsn=48
  one $ch -m=4096 -k=14336 -n=512 --panel=4800 --bsn=48
  one $ch -m=4096 -k=4096 -n=2048 --panel=2048 --bsn=48
  one $ch -m=4096 -k=4096 -n=2048 --panel=4096 --bsn=48
 done
 one 0 -m=4096 -k=4096 -n=2048 --decode --bsn=48
 one 0 -m=11008 -k=4096 -n=8192 --decode --bsn=48
 echo "rep $rep $(date -u +%T)" >> $R/gpu.txt
done
cd $OUT && tar czf s22a.tgz s22a && rm -rf s22a
