#!/bin/bash
# Session 25 run-h: generator 32 (cut sums apart from the slice, no block barrier; the tail's
# schedule-word load hoisted) against generator 31 (.carry/old, MAGICUBE_EXP_DEC=0) and 31 with
# the hoist only (=1). GPU tests of the decode kernel first.
R=$OUT/s25h; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
B=.carry/bin
MAGICUBE_CACHE_DIR=/tmp/t timeout 280 $B/test_spmm_gpu --gtest_filter='*Decode*:*ColumnMajor*' > $R/spmm_gpu.txt 2>&1; echo "spmm_gpu rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/spmm_gpu.txt | tr '\n' ' ')" >> $R/gpu.txt
one() { tag=$1; bin=$2; v=$3; shift 3; x=$(MAGICUBE_EXP_DEC=$v MAGICUBE_CACHE_DIR=/tmp/c$tag timeout 60 $bin run -v=8 --flush-l2 "$@" 2>&1 | grep -E "^time|^layer|exact|rror" | sed -e 's/(bitwise.*//' -e 's/ elements equal.*//' -e 's/over .*//' -e 's/(min.*//' | tr '\n' ' ')
  echo "$tag $* | $x" >> $R/ab.txt; }
for p in "-m=4096 -k=4096 -n=16 --sparsity=0.5" "-m=4096 -k=4096 -n=1 --sparsity=0.5" "-m=4096 -k=4096 -n=16 --sparsity=0.7" "-m=14336 -k=4096 -n=16 --sparsity=0.5" "-m=11008 -k=4096 -n=16 --sparsity=0.5" "-m=6144 -k=4096 -n=16 --sparsity=0.7" "-m=4096 -k=14336 -n=16 --sparsity=0.5" "-m=11008 -k=4096 -n=64 --sparsity=0.5"; do
  for rep in 1 2; do one g31 .carry/old/magicube 0 --lhs=s8 --rhs=s8 --route=sparse --repeat=20 $p; one g31h .carry/old/magicube 1 --lhs=s8 --rhs=s8 --route=sparse --repeat=20 $p; one g32 $B/magicube 0 --lhs=s8 --rhs=s8 --route=sparse --repeat=20 $p; done
done
for rep in 1 2; do for p in "-m=4096 -k=4096 -n=16 --sparsity=0.5" "-m=11008 -k=4096 -n=16 --sparsity=0.7"; do
  one g31 .carry/old/magicube 0 --lhs=s8 --rhs=s8 --route=sparse --repeat=10 --layers=16 $p; one g32 $B/magicube 0 --lhs=s8 --rhs=s8 --route=sparse --repeat=10 --layers=16 $p; done; done
for p in "--lhs=s4 --rhs=s8 -m=4096 -k=4096 -n=16 --sparsity=0.5" "--lhs=s8 --rhs=s8 -m=4096 -k=4096 -n=16 --sparsity=0.5 --out=bf16 --scale=rowcol --c-order=col"; do
  for rep in 1 2; do one g31 .carry/old/magicube 0 --route=sparse --repeat=20 $p; one g32 $B/magicube 0 --route=sparse --repeat=20 $p; done; done
echo "ab done $(date -u +%T)" >> $R/gpu.txt
MAGICUBE_CACHE_DIR=/tmp/t timeout 100 $B/test_capi_gpu > $R/capi.txt 2>&1; echo "capi rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/capi.txt | tr '\n' ' ')" >> $R/gpu.txt
MAGICUBE_CACHE_DIR=/tmp/t timeout 100 $B/test_epilogue_gpu > $R/epi.txt 2>&1; echo "epilogue_gpu rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/epi.txt | tr '\n' ' ')" >> $R/gpu.txt
echo "done $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s25h.tgz s25h && rm -rf s25h
