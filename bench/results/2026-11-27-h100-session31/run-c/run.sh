#!/bin/bash
# Session 31 run-c: generator 37 with shares as a plan option (spec n..s; the policy asks it
# where decode_grid takes one block an SM) against generator 36, alternating, twice, at s=0.9
# where the policy now asks shares; the decode GPU tests with the shares test.
tar xJf .carry/pkg.tar.xz -C .carry
R=$OUT/s31c; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
MAGICUBE_CACHE_DIR=/tmp/t31c timeout 240 .carry/bin/test_spmm_gpu --gtest_filter='*Decode*:*ColumnMajor*' > $R/test_spmm_gpu.txt 2>&1
echo "test_spmm_gpu rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $R/test_spmm_gpu.txt | tr '\n' ' ') $(date -u +%T)" >> $R/gpu.txt
grep -E "Failure|FAILED" -A4 $R/test_spmm_gpu.txt | head -20 >> $R/gpu.txt
one() { tag=$1; shift; case $tag in g36) bin=.carry/magicube36 ;; g37) bin=.carry/bin/magicube ;; esac
  y=$( ( MAGICUBE_CACHE_DIR=/tmp/c31c$tag timeout 90 $bin run -v=8 --flush-l2 --lhs=s8 --rhs=s8 "$@" 2>&1 ) | grep -E "^time|exact|rror|^plan" | sed -e 's/(chosen.*//' -e 's/(bitwise.*//' -e 's/ elements equal.*//' -e 's/over .*//' -e 's/(min.*//' | tr '\n' ' ')
  echo "$tag $* | $y" >> $R/ab.txt; }
T0=$(date +%s)
for rep in 1 2; do
  for a in "-m=4096 -k=14336 -n=512" "-m=4096 -k=14336 -n=2048" "-m=4096 -k=11008 -n=512" "-m=4096 -k=11008 -n=2048" "-m=4096 -k=11008 -n=8192" \
           "-m=4096 -k=4096 -n=8192" "-m=14336 -k=4096 -n=8192"; do
    [ $(( $(date +%s) - T0 )) -gt 280 ] && break 2
    for tag in g36 g37; do one $tag --route=sparse --repeat=20 --sparsity=0.9 $a; done
  done
done
echo "done $(date -u +%T)" >> $R/gpu.txt
cat $R/gpu.txt; sed -e 's/exact: yes ([0-9]*//' $R/ab.txt | cut -c1-200
cd $OUT && tar czf s31c.tgz s31c && rm -rf s31c
