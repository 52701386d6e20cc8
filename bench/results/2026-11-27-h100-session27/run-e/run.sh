#!/bin/bash
# Session 27 run-e: long K at prefill: the policy's K-panel kernel (n48dp, 16 warps) against the
# decode kernel on 16-column slices of all K (n16d: one tile, no panels, no adds) at 16 / 24 / 32
# warps (MAGICUBE_EXP_WARPS, MAGICUBE_EXP_DEPTH); and n16d with more warps at decode.
R=$OUT/s27e; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
B=.carry/bin; T0=$(date +%s)
one() { tag=$1; w=$2; d=$3; shift 3; x=$( ( [ -n "$w" ] && export MAGICUBE_EXP_WARPS=$w MAGICUBE_EXP_DEPTH=$d; MAGICUBE_CACHE_DIR=/tmp/c$tag$w-$d timeout 90 $B/magicube run -v=8 --lhs=s8 --rhs=s8 --flush-l2 --route=sparse "$@" 2>&1 ) | grep -E "^plan|^time|exact|rror" | sed -e 's/(chosen.*//' -e 's/(bitwise.*//' -e 's/ elements equal.*//' -e 's/over .*//' -e 's/(min.*//' | tr '\n' ' ')
  echo "$tag w$w d$d $* | $x" >> $R/ab.txt; }
for rep in 1 2; do
  for p in "-m=4096 -k=14336 -n=2048 --sparsity=0.9" "-m=4096 -k=11008 -n=2048 --sparsity=0.9" "-m=4096 -k=14336 -n=512 --sparsity=0.9" "-m=4096 -k=11008 -n=512 --sparsity=0.7" "-m=14336 -k=4096 -n=2048 --sparsity=0.9"; do
    [ $(( $(date +%s) - T0 )) -gt 500 ] && break 2
    one pol "" "" --repeat=10 $p
    one n16 16 10 --repeat=10 $p --decode --bsn=16
    one n16 24 10 --repeat=10 $p --decode --bsn=16
    one n16 32 8 --repeat=10 $p --decode --bsn=16
  done
  for p in "-m=4096 -k=14336 -n=16 --sparsity=0.5" "-m=4096 -k=4096 -n=16 --sparsity=0.5"; do
    one pol "" "" --repeat=20 $p
    one n16 24 10 --repeat=20 $p --decode --bsn=16
    one n16 32 8 --repeat=20 $p --decode --bsn=16
  done
done
echo "done $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s27e.tgz s27e && rm -rf s27e
