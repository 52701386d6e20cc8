#!/bin/bash
# Session 31 run-a: generator 37 (the decode kernel's blocks take equal shares of all slices'
# strides, slice after slice; a grid of (1, SMs) where whole waves would leave SMs idle) against
# generator 36, alternating, twice; the decode GPU tests with the new shares test.
tar xJf .carry/pkg.tar.xz -C .carry
R=$OUT/s31a; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
MAGICUBE_CACHE_DIR=/tmp/t31a timeout 240 .carry/bin/test_spmm_gpu --gtest_filter='*Decode*:*ColumnMajor*' > $R/test_spmm_gpu.txt 2>&1
echo "test_spmm_gpu rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $R/test_spmm_gpu.txt | tr '\n' ' ') $(date -u +%T)" >> $R/gpu.txt
grep -E "Failure|FAILED" -A4 $R/test_spmm_gpu.txt | head -20 >> $R/gpu.txt
one() { tag=$1; shift; case $tag in g36) bin=.carry/magicube36 ;; g37) bin=.carry/bin/magicube ;; esac
  y=$( ( MAGICUBE_CACHE_DIR=/tmp/c31a$tag timeout 90 $bin run -v=8 --flush-l2 --lhs=s8 --rhs=s8 "$@" 2>&1 ) | grep -E "^time|exact|rror|^plan" | sed -e 's/(chosen.*//' -e 's/(bitwise.*//' -e 's/ elements equal.*//' -e 's/over .*//' -e 's/(min.*//' | tr '\n' ' ')
  echo "$tag $* | $y" >> $R/ab.txt; }
T0=$(date +%s)
for rep in 1 2; do
  for a in "-m=4096 -k=4096 -n=8192 --sparsity=0.9" "-m=14336 -k=4096 -n=8192 --sparsity=0.9" "-m=6144 -k=4096 -n=8192 --sparsity=0.9" \
           "-m=11008 -k=4096 -n=8192 --sparsity=0.9" "-m=4096 -k=14336 -n=8192 --sparsity=0.9" "-m=4096 -k=4096 -n=2048 --sparsity=0.9" \
           "-m=4096 -k=4096 -n=16 --sparsity=0.5" "-m=14336 -k=4096 -n=16 --sparsity=0.5" "-m=14336 -k=4096 -n=16 --sparsity=0.7" \
           "-m=4096 -k=14336 -n=16 --sparsity=0.5" "-m=4096 -k=4096 -n=512 --sparsity=0.9"; do
    [ $(( $(date +%s) - T0 )) -gt 330 ] && break 2
    for tag in g36 g37; do one $tag --route=sparse --repeat=20 $a; done
  done
done
echo "done $(date -u +%T)" >> $R/gpu.txt
cat $R/gpu.txt; sed -e 's/exact: yes ([0-9]*//' $R/ab.txt | cut -c1-200
cd $OUT && tar czf s31a.tgz s31a && rm -rf s31a
