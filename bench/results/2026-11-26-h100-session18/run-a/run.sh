#!/bin/bash
# Session 18: the dense route in int8 chunks (u8, wider types): GPU tests, memcheck, and u8 A/B
R=$OUT/s18a; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c81
B=.carry/bin
timeout 240 $B/test_dense_route_gpu > $R/test_dense_route_gpu.txt 2>&1; echo "test_dense_route_gpu rc=$? $(date -u +%T)" >> $R/gpu.txt
timeout 240 $B/test_capi_gpu > $R/test_capi_gpu.txt 2>&1; echo "test_capi_gpu rc=$? $(date -u +%T)" >> $R/gpu.txt
timeout 200 $B/test_api --gtest_filter='ApiGpu.*' > $R/test_api.txt 2>&1; echo "test_api rc=$? $(date -u +%T)" >> $R/gpu.txt
(MAGICUBE_LIBRARY=$PWD/.carry/lib/libmagicube.so.0 PYTHONPATH=python timeout 200 python3 -m pytest -q -rs python/tests 2>&1 | tail -4) > $R/pytest.txt
timeout 200 compute-sanitizer --tool memcheck $B/test_dense_route_gpu --gtest_filter='*BitExactForEveryPrecision' > $R/memcheck.txt 2>&1; echo "memcheck rc=$? $(date -u +%T)" >> $R/gpu.txt
date -u >> $R/gpu.txt
cd $OUT && tar czf s18a.tgz s18a && rm -rf s18a
