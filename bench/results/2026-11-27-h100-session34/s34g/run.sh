#!/bin/bash
# Session 34 run-g: run-f's head partials into C with the owner's adds as a load, an add and the paired store
# (MAGICUBE_EXP_HEADC=1 MAGICUBE_EXP_LOADADD=1: no atomics where the warp's tile lies in C) against the shipped
# kernel; GPU tests with it on, then alternating, twice.
R=$OUT/s34g; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
tar xJf .carry/pkg.tar.xz -C .carry
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CLI_PATH=$PWD/.carry/bin/magicube MAGICUBE_CLI=$PWD/.carry/bin/magicube
MAGICUBE_EXP_HEADC=1 MAGICUBE_EXP_LOADADD=1 MAGICUBE_CACHE_DIR=/tmp/t34g timeout 200 .carry/bin/test_spmm_gpu --gtest_filter='*Decode*:*ColumnMajor*' 2>&1 | grep -E "^\[  (PASSED|FAILED) |FAILED|Failure" | head -20 > $R/tests.txt
one() { tag=$1; shift; case $tag in g37) env="MAGICUBE_EXP_NONE=1";; hl) env="MAGICUBE_EXP_HEADC=1 MAGICUBE_EXP_LOADADD=1";; esac
  x=$( ( env $env MAGICUBE_CACHE_DIR=/tmp/c34g$tag timeout 60 .carry/bin/magicube run -v=8 --flush-l2 --route=sparse --repeat=20 "$@" 2>&1 ) | grep -E "^time|exact|rror" | sed -e 's/ elements equal.*//' -e 's/over .*//' | tr '\n' ' ')
  echo "$tag $* | $x" >> $R/ab.txt; }
for rep in 1 2; do
for a in "-m=4096 -k=4096 -n=2048 --sparsity=0.9" "-m=6144 -k=4096 -n=2048 --sparsity=0.9" "-m=14336 -k=4096 -n=2048 --sparsity=0.9" "-m=4096 -k=4096 -n=8192 --sparsity=0.9" "-m=4096 -k=4096 -n=512 --sparsity=0.9" "-m=4096 -k=4096 -n=16 --sparsity=0.5" "-m=14336 -k=4096 -n=16 --sparsity=0.7"; do
  [ $SECONDS -gt 400 ] && break 2
  for tag in g37 hl; do one $tag --lhs=s8 --rhs=s8 $a; done
done; done
cat $R/tests.txt $R/ab.txt
cd $OUT && tar czf s34g.tgz s34g && rm -rf s34g
