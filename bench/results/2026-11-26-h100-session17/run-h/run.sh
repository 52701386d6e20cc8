#!/bin/bash
# ncu: the K-panel decode kernel with one panel (n48dp4096) against n48d, 4096x4096 s=0.9 N=2048
R=$OUT/s17h; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c76
B=.carry/bin
for p in 0 4096; do
  extra=""; [ $p != 0 ] && extra="--panel=$p"
  timeout 200 ncu --section SpeedOfLight --section WarpStateStats --section LaunchStats --section Occupancy --section SchedulerStats --section InstructionStats -k regex:magicube_spmm --launch-skip 2 --launch-count 1 \
    $B/magicube run --lhs=s8 --rhs=s8 --m=4096 --k=4096 --sparsity=0.9 --n=2048 --decode --bsn=48 $extra --route=sparse --repeat=3 --warmup=1 > $R/ncu-panel$p.txt 2>&1
  echo "panel $p rc=$? $(date -u +%T)" >> $R/gpu.txt
done
cd $OUT && tar czf s17h.tgz s17h && rm -rf s17h
