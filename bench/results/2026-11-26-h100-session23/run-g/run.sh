#!/bin/bash
# Session 23 run-g: where the torch op's host time per call goes (hostprobe2.py).
R=$OUT/s23g; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/cg
MAGICUBE_LIBRARY=$PWD/.carry/lib/libmagicube.so.0 PYTHONPATH=python timeout 200 python3 .carry/hostprobe2.py > $R/host.txt 2>&1; echo "probe rc=$? $(date -u +%T)" >> $R/gpu.txt
cp .carry/hostprobe2.py $R/
cd $OUT && tar czf s23g.tgz s23g && rm -rf s23g
