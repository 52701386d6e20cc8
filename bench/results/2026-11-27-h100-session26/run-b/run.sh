#!/bin/bash
# Session 26 run-b: generator 33 (8-bit column offsets for decode): GPU tests, then A/B of the
# policy's o8 plan against the same tile pinned with 16-bit indices (--decode --bsn=W).
R=$OUT/s26b; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
B=.carry/bin
MAGICUBE_CACHE_DIR=/tmp/t timeout 200 $B/test_spmm_gpu --gtest_filter='*Decode*:*ColumnMajor*' > $R/spmm_gpu.txt 2>&1; echo "spmm_gpu rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/spmm_gpu.txt | tr '\n' ' ')" >> $R/gpu.txt
MAGICUBE_CACHE_DIR=/tmp/t timeout 60 $B/test_capi_gpu > $R/capi.txt 2>&1; echo "capi rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/capi.txt | tr '\n' ' ')" >> $R/gpu.txt
MAGICUBE_CACHE_DIR=/tmp/t timeout 60 $B/test_epilogue_gpu --gtest_filter='*Decode*' > $R/epi.txt 2>&1; echo "epilogue_gpu rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/epi.txt | tr '\n' ' ')" >> $R/gpu.txt
MAGICUBE_CACHE_DIR=/tmp/t timeout 60 $B/test_api --gtest_filter='ApiGpu.*' > $R/api.txt 2>&1; echo "api rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/api.txt | tr '\n' ' ')" >> $R/gpu.txt
echo "tests done $(date -u +%T)" >> $R/gpu.txt
one() { tag=$1; shift; x=$(MAGICUBE_CACHE_DIR=/tmp/c timeout 60 $B/magicube run -v=8 --rhs=s8 --flush-l2 --route=sparse "$@" 2>&1 | grep -E "^plan|^time|^layer|exact|rror" | sed -e 's/(bitwise.*//' -e 's/ elements equal.*//' -e 's/over .*//' -e 's/(min.*//' | tr '\n' ' ')
  echo "$tag $* | $x" >> $R/ab.txt; }
for p in "16 -m=4096 -k=4096 -n=16 --sparsity=0.5" "16 -m=4096 -k=4096 -n=16 --sparsity=0.7" "16 -m=14336 -k=4096 -n=16 --sparsity=0.5" "16 -m=14336 -k=4096 -n=16 --sparsity=0.7" "16 -m=11008 -k=4096 -n=16 --sparsity=0.5" "16 -m=4096 -k=14336 -n=16 --sparsity=0.5" "16 -m=4096 -k=11008 -n=16 --sparsity=0.7" "16 -m=4096 -k=4096 -n=1 --sparsity=0.5" "32 -m=14336 -k=4096 -n=64 --sparsity=0.5" "32 -m=4096 -k=4096 -n=32 --sparsity=0.7"; do
  set -- $p; w=$1; shift
  for rep in 1 2; do one o8 --lhs=s8 --repeat=20 "$@"; one i16 --lhs=s8 --decode --bsn=$w --repeat=20 "$@"; done
done
for p in "-m=4096 -k=4096 -n=16 --sparsity=0.5" "-m=14336 -k=4096 -n=16 --sparsity=0.5"; do
  for rep in 1 2; do one o8 --lhs=s4 --repeat=20 $p; one i16 --lhs=s4 --decode --bsn=16 --repeat=20 $p; done
done
for rep in 1 2; do one o8 --lhs=s8 --repeat=10 --layers=16 -m=4096 -k=4096 -n=16 --sparsity=0.5; one i16 --lhs=s8 --decode --bsn=16 --repeat=10 --layers=16 -m=4096 -k=4096 -n=16 --sparsity=0.5; done
echo "ab done $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s26b.tgz s26b && rm -rf s26b
