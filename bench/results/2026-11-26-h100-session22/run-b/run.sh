#!/bin/bash
# Session 22 run-b: why one K panel of all K runs 1.36x the n48d kernel (ncu), SASS of both
R=$OUT/s22b; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib PATH=$PATH:/usr/local/cuda/bin
B=.carry/bin
for v in d p0 p128; do cuobjdump -sass .carry/cubin/$v.cubin > $R/$v.sass 2>&1; cuobjdump -res-usage .carry/cubin/$v.cubin > $R/$v.res 2>&1; done
which ncu >> $R/gpu.txt
n() { local tag=$1 ch=$2; shift 2
  if [ "$ch" = 0 ]; then unset MAGICUBE_EXP_PANEL_CHUNK; else export MAGICUBE_EXP_PANEL_CHUNK=$ch; fi
  MAGICUBE_CACHE_DIR=/tmp/n$tag timeout 150 ncu --kernel-name regex:magicube_spmm --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section LaunchStats --section Occupancy --section SchedulerStats --section WarpStateStats \
    --section InstructionStats --section MemoryWorkloadAnalysis --section SourceCounters \
    $B/magicube run --lhs=s8 --rhs=s8 -v=8 --sparsity=0.9 -m=4096 -k=4096 -n=2048 --bsn=48 --repeat=3 --warmup=2 "$@" > $R/ncu_$tag.txt 2>&1
  echo "$tag rc=$? $(date -u +%T)" >> $R/gpu.txt; }
n d 0 --decode
n p0 0 --panel=4096
n p128 128 --panel=4096
cd $OUT && tar czf s22b.tgz s22b && rm -rf s22b
