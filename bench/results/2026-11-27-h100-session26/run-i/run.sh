#!/bin/bash
# Session 26 run-i: the bench's chain section (8 layers back to back, per layer, against the
# library's dense route chained the same way) on generator 32, L8-R8 V=8 (run-h's 280 s limit was too short).
R=$OUT/s26i; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/ch
B=.carry/bin
timeout 480 $B/magicube-bench --sections=chain --filter=L8-R8 --v=8 --no-plots --out-dir=$R/chain-l8r8 > $R/chain-l8r8.log 2>&1; echo "chain l8r8 rc=$? $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s26i.tgz s26i && rm -rf s26i
