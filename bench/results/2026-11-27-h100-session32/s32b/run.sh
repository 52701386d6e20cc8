#!/bin/bash
# Session 32 run-b (6411282): GPU tests of the dense route (one selection a process, paced
# timing), the float epilogue, autotune and the API; then the dense route's selection at N=8192
# s=0.5, three processes a shape, as in run-a.
tar xJf .carry/pkg.tar.xz -C .carry
R=$OUT/s32b; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CLI_PATH=$PWD/.carry/bin/magicube MAGICUBE_CLI=$PWD/.carry/bin/magicube
t() { b=$1; shift; MAGICUBE_CACHE_DIR=/tmp/t32b timeout 200 .carry/bin/$b "$@" > $R/$b.txt 2>&1
  echo "$b rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $R/$b.txt | tr '\n' ' ') $(date -u +%T)" >> $R/gpu.txt; }
t test_dense_route_gpu
t test_epilogue_gpu --gtest_filter='*Decode*:*Shares*'
t test_autotune
t test_api --gtest_filter='ApiGpu*'
for shape in "-m=4096 -k=14336" "-m=14336 -k=4096" "-m=11008 -k=4096"; do
  for rep in 1 2 3; do
    f=$R/dense_$(echo $shape | tr -d ' =-')_$rep.txt
    s0=$(date +%s%N)
    MAGICUBE_LOG_LEVEL=debug MAGICUBE_CACHE_DIR=/tmp/cng timeout 90 .carry/bin/magicube run -v=8 --flush-l2 --route=dense --lhs=s8 --rhs=s8 \
      $shape -n=8192 --sparsity=0.5 --repeat=20 > $f 2>&1
    echo "$shape rep $rep ($(( ($(date +%s%N) - s0) / 1000000 )) ms): $(grep -E '^time|exact|cuBLASLt int8' $f | cut -c1-200 | tr '\n' ' ')" >> $R/dense.txt
  done
done
cat $R/gpu.txt $R/dense.txt
cd $OUT && tar czf s32b.tgz s32b && rm -rf s32b
