#!/bin/bash
# Session 24 run-c: the allow_dense layer at N = 2048 in the torch example ran slower in run-b:
# HEAD's python against the new one, per part, alternating; a profile of the new layer.
R=$OUT/s24c; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/cc MAGICUBE_LIBRARY=$PWD/.carry/lib/libmagicube.so.0
for rep in 1 2; do
  PYTHONPATH=.carry/pyhead timeout 150 python3 .carry/dprobe.py head >> $R/dprobe.txt 2>&1
  PYTHONPATH=python timeout 150 python3 .carry/dprobe.py new >> $R/dprobe.txt 2>&1
done
echo "done $(date -u +%T)" >> $R/gpu.txt
cp .carry/dprobe.py $R/
cd $OUT && tar czf s24c.tgz s24c && rm -rf s24c
