#!/bin/bash
# Session 34 run-h: the dense route's GPU tests on the tidy-up commit (DenseGemm::select's event pairs from one helper).
R=$OUT/s34h; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
tar xJf .carry/pkg.tar.xz -C .carry
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c34h
timeout 400 .carry/bin/test_dense_route_gpu 2>&1 | grep -E "^\[( +OK|  PASSED  |  FAILED  |  SKIPPED )|Failure" > $R/tests.txt
cat $R/tests.txt
cd $OUT && tar czf s34h.tgz s34h && rm -rf s34h
