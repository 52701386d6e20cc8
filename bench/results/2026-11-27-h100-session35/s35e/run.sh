#!/bin/bash
# Session 35 s35e: the dense route's checked run poisons the GEMMs' planes too (Pipeline::poison):
# test_dense_route_gpu, and initcheck over every sanitize_gpu.sh case (the chunked dense route's
# reads of cuBLASLt's algo-39 output were initcheck's false positives, s35d).
R=$OUT/s35e; mkdir -p $R
tar xJf .carry/pkg.tar.xz -C .carry
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
.carry/bin/test_dense_route_gpu > $R/test_dense_route_gpu.txt 2>&1
OUT=$R TOOLS="initcheck" RUN_TIMEOUT=200 MAGICUBE_CACHE_DIR=/tmp/mc-san2 bash .carry/x/sanitize_gpu.sh .carry/bin > $R/summary.txt 2>&1
echo "rc=$? done $(date -u +%T)" >> $R/gpu.txt
tail -3 $R/test_dense_route_gpu.txt; cat $R/summary.txt
cd $OUT && tar czf s35e.tgz s35e && rm -rf s35e
