#!/bin/bash
# Session 26 run-k: the bench's chain section (8 layers back to back, per layer, against the
# library's dense route chained the same way) on generator 32, L4-R8 V=8.
R=$OUT/s26k; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/ch
B=.carry/bin
timeout 480 $B/magicube-bench --sections=chain --filter=L4-R8 --v=8 --no-plots --out-dir=$R/chain-l4r8 > $R/chain-l4r8.log 2>&1; echo "chain l4r8 rc=$? $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s26k.tgz s26k && rm -rf s26k
