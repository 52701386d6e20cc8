#!/bin/bash
# Session 25 run-c: ncu stall sampling per SASS instruction, decode kernel 4096x4096 s=0.5 N=16.
R=$OUT/s25c; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
p="-m=4096 -k=4096 -n=16 --sparsity=0.5"
MAGICUBE_EXP_DEC=1 MAGICUBE_CACHE_DIR=/tmp/c1 timeout 300 ncu --clock-control none --cache-control all \
  --section WarpStateStats --section SourceCounters --section SpeedOfLight -k regex:magicube_spmm --launch-skip 2 --launch-count 1 \
  -o $R/prof .carry/bin/magicube run -v=8 --lhs=s8 --rhs=s8 --route=sparse --repeat=3 $p > $R/ncu_run.txt 2>&1
ncu -i $R/prof.ncu-rep --page source --print-source sass --csv > $R/source.csv 2>&1
ncu -i $R/prof.ncu-rep --page details > $R/details.txt 2>&1
ls -la $R >> $R/gpu.txt
echo "done $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s25c.tgz s25c && rm -rf s25c
