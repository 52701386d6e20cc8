#!/bin/bash
# Session 30 run-h: the final build (generator 36, 8ca13c1): the C ABI, API, autotune, driver and epilogue GPU tests, pytest.
tar xJf .carry/pkg.tar.xz -C .carry
R=$OUT/s30h; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CLI_PATH=$PWD/.carry/bin/magicube MAGICUBE_CLI=$PWD/.carry/bin/magicube
B=.carry/bin
t() { name=$1; lim=$2; shift 2; MAGICUBE_CACHE_DIR=/tmp/t30e timeout $lim $B/$name "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $R/$name.txt | tr '\n' ' ' | cut -c1-300) $(date -u +%T)" >> $R/gpu.txt; }
t test_cuda_driver 60
t test_epilogue_gpu 120
t test_capi_gpu 90
t test_api 90 --gtest_filter='ApiGpu.*'
t test_autotune 120
MAGICUBE_CACHE_DIR=/tmp/t30e MAGICUBE_LIBRARY=$PWD/.carry/lib/libmagicube.so.0 PYTHONPATH=python timeout 100 python3 -m pytest -q -rs python/tests > $R/pytest.txt 2>&1; echo "pytest rc=$? $(tail -1 $R/pytest.txt) $(date -u +%T)" >> $R/gpu.txt
cat $R/gpu.txt; grep -h -E "Failure|FAILED" -A3 $R/test_*.txt | head -30
cd $OUT && tar czf s30h.tgz s30h && rm -rf s30h
