#!/bin/bash
# Session 35 s35i: the C ABI on the GPU after its enum fields are read as ints (f140f50):
# test_capi_gpu and test_capi (its GPU test included).
R=$OUT/s35i; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
tar xJf .carry/pkg.tar.xz -C .carry
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c35i
export MAGICUBE_CLI_PATH=$PWD/.carry/bin/magicube MAGICUBE_CLI=$PWD/.carry/bin/magicube
for t in test_capi_gpu test_capi; do
  timeout 300 .carry/bin/$t > $R/$t.txt 2>&1
  echo "$t: rc=$? $(grep -E '^\[  PASSED  \]|^\[  FAILED  \]|^\[  SKIPPED \] [0-9]' $R/$t.txt | tr '\n' ' ')" >> $R/summary.txt
done
echo "done $(date -u +%T)" >> $R/gpu.txt
cat $R/summary.txt
cd $OUT && tar czf s35i.tgz s35i && rm -rf s35i
