#!/bin/bash
# Session 34 run-b: the chunked slice (MAGICUBE_EXP_SLICE_CHUNKS=n) with the gate's wait as mbarrier.try_wait
# (default), test_wait in a loop (MAGICUBE_EXP_WAIT=spin) or try_wait with a 40 ns suspend hint (=hint),
# against the whole-slice wait (c0); alternating, twice.
R=$OUT/s34b; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
tar xJf .carry/pkg.tar.xz -C .carry
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CLI_PATH=$PWD/.carry/bin/magicube MAGICUBE_CLI=$PWD/.carry/bin/magicube
MAGICUBE_EXP_WAIT=spin MAGICUBE_EXP_SLICE_CHUNKS=8 MAGICUBE_CACHE_DIR=/tmp/t34s timeout 200 .carry/bin/test_spmm_gpu --gtest_filter='*Decode*' 2>&1 | grep -E "^\[  (PASSED|FAILED) |FAILED|Failure" | head -20 > $R/tests.txt
one() { tag=$1; shift; case $tag in c0) env="MAGICUBE_EXP_SLICE_CHUNKS=0";; c8) env="MAGICUBE_EXP_SLICE_CHUNKS=8";; s8) env="MAGICUBE_EXP_SLICE_CHUNKS=8 MAGICUBE_EXP_WAIT=spin";; h8) env="MAGICUBE_EXP_SLICE_CHUNKS=8 MAGICUBE_EXP_WAIT=hint";; s4) env="MAGICUBE_EXP_SLICE_CHUNKS=4 MAGICUBE_EXP_WAIT=spin";; esac
  x=$( ( env $env MAGICUBE_CACHE_DIR=/tmp/c34$tag timeout 60 .carry/bin/magicube run -v=8 --flush-l2 --route=sparse --lhs=s8 --rhs=s8 --repeat=20 "$@" 2>&1 ) | grep -E "^time|exact|rror" | sed -e 's/ elements equal.*//' -e 's/over .*//' | tr '\n' ' ')
  echo "$tag $* | $x" >> $R/ab.txt; }
for rep in 1 2; do
for a in "-m=4096 -k=4096 -n=2048 --sparsity=0.9" "-m=14336 -k=4096 -n=2048 --sparsity=0.9" "-m=4096 -k=4096 -n=8192 --sparsity=0.9" "-m=4096 -k=4096 -n=16 --sparsity=0.5" "-m=14336 -k=4096 -n=16 --sparsity=0.5"; do
  [ $SECONDS -gt 400 ] && break 2
  for tag in c0 c8 s8 h8 s4; do one $tag $a; done
done; done
cat $R/tests*.txt $R/ab.txt
cd $OUT && tar czf s34b.tgz s34b && rm -rf s34b
