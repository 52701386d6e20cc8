#!/bin/bash
# Session 35 s35a: compute-sanitizer (memcheck, racecheck; TOOLS overrides) over every kernel family
# the dispatch runs now, scripts/sanitize_gpu.sh's 19 cases, generator 37.
R=$OUT/s35a; mkdir -p $R
tar xJf .carry/pkg.tar.xz -C .carry
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
OUT=$R TOOLS="${TOOLS:-memcheck racecheck}" RUN_TIMEOUT=200 MAGICUBE_CACHE_DIR=/tmp/mc-san \
  timeout 560 bash .carry/x/sanitize_gpu.sh .carry/bin > $R/summary.txt 2>&1
echo "rc=$? done $(date -u +%T)" >> $R/gpu.txt
cat $R/summary.txt
cd $OUT && tar czf s35a.tgz s35a && rm -rf s35a
