#!/bin/bash
# Session 18: host time per torch op call, before (old_lib) and after the repack-name memo (lib)
R=$OUT/s18i; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 MAGICUBE_CACHE_DIR=/tmp/c89
for which in old_lib lib old_lib lib; do
  echo "===== $which"
  MAGICUBE_LIBRARY=$PWD/.carry/$which/libmagicube.so.0 PYTHONPATH=python timeout 200 python3 .carry/hostprobe.py 2>&1
done > $R/host.txt
date -u >> $R/gpu.txt
cd $OUT && tar czf s18i.tgz s18i && rm -rf s18i
