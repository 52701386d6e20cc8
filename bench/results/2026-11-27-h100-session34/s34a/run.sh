#!/bin/bash
# Session 34 run-a: B's slice landing in chunks (Launch::slice_chunks, experiment build: MAGICUBE_EXP_SLICE_CHUNKS=n)
# against the whole-slice wait (n=0): GPU tests with chunks on, then alternating timings, twice.
R=$OUT/s34a; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
tar xJf .carry/pkg.tar.xz -C .carry
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CLI_PATH=$PWD/.carry/bin/magicube MAGICUBE_CLI=$PWD/.carry/bin/magicube
for n in 8 3; do
  MAGICUBE_EXP_SLICE_CHUNKS=$n MAGICUBE_CACHE_DIR=/tmp/t34$n timeout 200 .carry/bin/test_spmm_gpu --gtest_filter='*Decode*' 2>&1 | grep -E "^\[  (PASSED|FAILED) |FAILED|Failure" | head -20 > $R/tests$n.txt
  MAGICUBE_EXP_SLICE_CHUNKS=$n MAGICUBE_CACHE_DIR=/tmp/t34$n timeout 100 .carry/bin/test_epilogue_gpu --gtest_filter='*Decode*' 2>&1 | grep -E "^\[  (PASSED|FAILED) |FAILED|Failure" | head -20 >> $R/tests$n.txt
done
one() { n=$1; shift
  x=$( ( MAGICUBE_EXP_SLICE_CHUNKS=$n MAGICUBE_CACHE_DIR=/tmp/c34$n timeout 60 .carry/bin/magicube run -v=8 --flush-l2 --route=sparse --lhs=s8 --rhs=s8 --repeat=20 "$@" 2>&1 ) | grep -E "^time|exact|rror" | sed -e 's/ elements equal.*//' -e 's/over .*//' | tr '\n' ' ')
  echo "c$n $* | $x" >> $R/ab.txt; }
for rep in 1 2; do
for a in "-m=4096 -k=4096 -n=2048 --sparsity=0.9" "-m=14336 -k=4096 -n=2048 --sparsity=0.9" "-m=4096 -k=4096 -n=8192 --sparsity=0.9" "-m=4096 -k=14336 -n=2048 --sparsity=0.9" "-m=4096 -k=4096 -n=512 --sparsity=0.9" "-m=4096 -k=4096 -n=16 --sparsity=0.5" "-m=14336 -k=4096 -n=16 --sparsity=0.5" "-m=4096 -k=11008 -n=16 --sparsity=0.7"; do
  [ $SECONDS -gt 520 ] && break 2
  for n in 0 8 4 16; do one $n $a; done
done; done
cat $R/tests*.txt $R/ab.txt
cd $OUT && tar czf s34a.tgz s34a && rm -rf s34a
