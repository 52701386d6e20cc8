#!/bin/bash
# Session 23 run-i: the torch op's host time per call, old python/magicube/torch.py (HEAD) against the cached one, alternating.
R=$OUT/s23i; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/ci MAGICUBE_LIBRARY=$PWD/.carry/lib/libmagicube.so.0
for rep in 1 2 3; do
  PYTHONPATH=.carry/pyold timeout 100 python3 .carry/hostab.py old >> $R/host_ab.txt 2>&1
  PYTHONPATH=python timeout 100 python3 .carry/hostab.py new >> $R/host_ab.txt 2>&1
done
echo "done $(date -u +%T)" >> $R/gpu.txt
cp .carry/hostab.py $R/
cd $OUT && tar czf s23i.tgz s23i && rm -rf s23i
