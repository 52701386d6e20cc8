#!/bin/bash
# Tidy commit: the dense route's GPU tests (pipeline, C++ API, C ABI), pytest
R=$OUT/s17m; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c80
B=.carry/bin
for t in test_dense_route_gpu test_capi_gpu test_epilogue_gpu; do timeout 240 $B/$t > $R/$t.txt 2>&1; echo "$t rc=$? $(date -u +%T)" >> $R/gpu.txt; done
timeout 200 $B/test_api --gtest_filter='ApiGpu.*' > $R/test_api.txt 2>&1; echo "test_api rc=$? $(date -u +%T)" >> $R/gpu.txt
(MAGICUBE_LIBRARY=$PWD/.carry/lib/libmagicube.so.0 PYTHONPATH=python timeout 200 python3 -m pytest -q -rs python/tests 2>&1 | tail -3) > $R/pytest.txt
date -u >> $R/gpu.txt
cd $OUT && tar czf s17m.tgz s17m && rm -rf s17m
