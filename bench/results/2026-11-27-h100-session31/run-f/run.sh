#!/bin/bash
# Session 31 run-f: the final build (314f381): the shares and slices GPU tests, the C ABI and API
# GPU tests.
tar xJf .carry/pkg.tar.xz -C .carry
R=$OUT/s31f; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CLI_PATH=$PWD/.carry/bin/magicube MAGICUBE_CLI=$PWD/.carry/bin/magicube
t() { name=$1; shift; MAGICUBE_CACHE_DIR=/tmp/t31f timeout $1 .carry/bin/$name "${@:2}" > $R/$name.txt 2>&1
  echo "$name rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $R/$name.txt | tr '\n' ' ') $(date -u +%T)" >> $R/gpu.txt; grep -E "Failure" -A4 $R/$name.txt | head -10 >> $R/gpu.txt; }
t test_spmm_gpu 60 --gtest_filter='*Shares*:*InSlicesAtPrefillN*:*DecodeKernelIsExact*'
t test_capi_gpu 60
t test_api 50 --gtest_filter='ApiGpu.*'
cat $R/gpu.txt
cd $OUT && tar czf s31f.tgz s31f && rm -rf s31f
