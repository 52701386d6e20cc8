#!/bin/bash
# Session 35 s35f: GPU tests on the poison change (Pipeline::poison fills the dense route's planes):
# test_autotune (tune --verify through the dense route), test_api ApiGpu, test_capi_gpu, test_epilogue_gpu.
R=$OUT/s35f; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
tar xJf .carry/pkg.tar.xz -C .carry
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c35f
export MAGICUBE_CLI_PATH=$PWD/.carry/bin/magicube MAGICUBE_CLI=$PWD/.carry/bin/magicube
for t in "test_autotune" "test_api --gtest_filter=ApiGpu.*" "test_capi_gpu" "test_epilogue_gpu"; do
  set -- $t
  timeout 300 .carry/bin/$t > $R/$1.txt 2>&1
  echo "$1: rc=$? $(grep -E '^\[  PASSED  \]|^\[  FAILED  \]' $R/$1.txt | tr '\n' ' ')" >> $R/summary.txt
done
echo "done $(date -u +%T)" >> $R/gpu.txt
cat $R/summary.txt
cd $OUT && tar czf s35f.tgz s35f && rm -rf s35f
