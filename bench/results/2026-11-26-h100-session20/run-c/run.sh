#!/bin/bash
# Session 20 run-c: per-instruction stall sampling of the 4-bit-A panel kernel against the 8-bit one
R=$OUT/s20c; mkdir -p $R
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c103
B=.carry/bin
for l in s4 s8; do
timeout 150 ncu --section SourceCounters --section WarpStateStats -k regex:magicube_spmm --launch-count 1 -o $R/p_$l $B/magicube run --lhs=$l --rhs=s8 -v=8 --m=4096 --k=4096 --n=512 --sparsity=0.5 --route=sparse --panel=4096 --repeat=1 --warmup=0 > $R/run_$l.log 2>&1
ncu --import $R/p_$l.ncu-rep --page source --print-source sass --csv > $R/sass_$l.csv 2>&1
ncu --import $R/p_$l.ncu-rep --page details --print-details all > $R/details_$l.txt 2>&1
rm -f $R/p_$l.ncu-rep
done
cd $OUT && tar czf s20c.tgz s20c && rm -rf s20c
