#!/bin/bash
# Session 30 run-a: the long-K slice probe (probes/kslice.cu), then the GPU tests whole on
# generator 34 (e0b8b85), the CLI tests with MAGICUBE_CLI_PATH, pytest.
tar xJf .carry/pkg.tar.xz -C .carry
R=$OUT/s30a; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CLI_PATH=$PWD/.carry/bin/magicube
timeout 60 .carry/kslice > $R/kslice.txt 2>&1; echo "kslice rc=$? $(date -u +%T)" >> $R/gpu.txt
B=.carry/bin
t() { name=$1; lim=$2; shift 2; MAGICUBE_CACHE_DIR=/tmp/t30a timeout $lim $B/$name "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $R/$name.txt | tr '\n' ' ' | cut -c1-300) $(date -u +%T)" >> $R/gpu.txt; }
t test_capi_gpu 120
t test_api 120 --gtest_filter='ApiGpu.*'
t test_dense_route_gpu 90
t test_epilogue_gpu 90
t test_autotune 150
t test_cuda_driver 30
MAGICUBE_CACHE_DIR=/tmp/t30a MAGICUBE_LIBRARY=$PWD/.carry/lib/libmagicube.so.0 PYTHONPATH=python timeout 120 python3 -m pytest -q -rs python/tests > $R/pytest.txt 2>&1; echo "pytest rc=$? $(tail -1 $R/pytest.txt) $(date -u +%T)" >> $R/gpu.txt
cat $R/gpu.txt; grep -h -E "Failure|FAILED" -A3 $R/test_*.txt | head -30
cd $OUT && tar czf s30a.tgz s30a && rm -rf s30a
