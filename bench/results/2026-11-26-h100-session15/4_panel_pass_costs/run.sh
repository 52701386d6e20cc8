#!/bin/bash
# where the panel passes' time goes (experimental build in .carry/exp: MAGICUBE_EXP_NORMW drops the RMW read)
R=$OUT/s15d; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/exp/lib
run() { local c=$1; shift; MAGICUBE_CACHE_DIR=/tmp/ab61_$c timeout 90 .carry/exp/bin/magicube run --op=spmm --lhs=s8 --rhs=s8 -v=8 "$@" --route=sparse --flush-l2 --repeat=20 2>&1 | grep -E 'median|exact|^plan|error' | tr '\n' ' '; echo; }
for rep in 1 2; do
  for v in "--decode --bsn=48" "--panel=4096 --bsn=48" "--panel=2048 --bsn=48" "--panel=1024 --bsn=48"; do
    echo "rep$rep 4096 N2048 $v :: $(run a --m=4096 --k=4096 --n=2048 --sparsity=0.9 $v)" >> $R/ab.txt; done
  for v in "--panel=2048 --bsn=48" "--panel=1024 --bsn=48"; do
    echo "rep$rep 4096 N2048 NORMW $v :: $(MAGICUBE_EXP_NORMW=1 MAGICUBE_EXP_TIME_ANYWAY=1 run b --m=4096 --k=4096 --n=2048 --sparsity=0.9 $v)" >> $R/ab.txt; done
  for v in "--decode --bsn=48" "--panel=2048 --bsn=48"; do
    echo "rep$rep 4096 N48 $v :: $(run a --m=4096 --k=4096 --n=48 --sparsity=0.9 $v)" >> $R/ab.txt; done
  echo "rep$rep 14336 N2048 p4800 :: $(run a --m=4096 --k=14336 --n=2048 --sparsity=0.9 --panel=4800 --bsn=48)" >> $R/ab.txt
  echo "rep$rep 14336 N2048 NORMW p4800 :: $(MAGICUBE_EXP_NORMW=1 MAGICUBE_EXP_TIME_ANYWAY=1 run b --m=4096 --k=14336 --n=2048 --sparsity=0.9 --panel=4800 --bsn=48)" >> $R/ab.txt
done
date -u >> $R/gpu.txt
cd $OUT && tar czf s15d.tgz s15d && rm -rf s15d
