#!/bin/bash
# Session 25 run-b: shared-memory carve-out probe; ncu of the decode kernel (4096x4096 s=0.5 N=16).
R=$OUT/s25b; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
.carry/exp/smemprobe > $R/smemprobe.txt 2>&1
for p in "-m=4096 -k=4096 -n=16 --sparsity=0.5" "-m=14336 -k=4096 -n=16 --sparsity=0.5"; do
MAGICUBE_EXP_DEC=1 MAGICUBE_CACHE_DIR=/tmp/c1 timeout 300 ncu --clock-control none --cache-control all \
  --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy \
  -k regex:magicube_spmm --launch-skip 2 --launch-count 1 .carry/bin/magicube run -v=8 --lhs=s8 --rhs=s8 --route=sparse --repeat=3 $p >> $R/ncu.txt 2>&1
done
echo "done $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s25b.tgz s25b && rm -rf s25b
