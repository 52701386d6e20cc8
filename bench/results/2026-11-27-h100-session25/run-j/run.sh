#!/bin/bash
# Session 25 run-j: the final build (generator 32: the decode kernel's tail schedule-word load
# hoisted before the ring's wait) against generator 31 (.carry/old, MAGICUBE_EXP_DEC=0); GPU tests; pytest.
R=$OUT/s25j; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
B=.carry/bin
MAGICUBE_CACHE_DIR=/tmp/t timeout 150 $B/test_spmm_gpu --gtest_filter='*Decode*:*ColumnMajor*' > $R/spmm_gpu.txt 2>&1; echo "spmm_gpu rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/spmm_gpu.txt | tr '\n' ' ')" >> $R/gpu.txt
MAGICUBE_CACHE_DIR=/tmp/t timeout 60 $B/test_capi_gpu > $R/capi.txt 2>&1; echo "capi rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/capi.txt | tr '\n' ' ')" >> $R/gpu.txt
MAGICUBE_CACHE_DIR=/tmp/t timeout 60 $B/test_epilogue_gpu --gtest_filter='*Decode*' > $R/epi.txt 2>&1; echo "epilogue_gpu rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/epi.txt | tr '\n' ' ')" >> $R/gpu.txt
MAGICUBE_CACHE_DIR=/tmp/t timeout 60 $B/test_api --gtest_filter='ApiGpu.*' > $R/api.txt 2>&1; echo "api rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/api.txt | tr '\n' ' ')" >> $R/gpu.txt
echo "tests done $(date -u +%T)" >> $R/gpu.txt
one() { tag=$1; bin=$2; shift 2; x=$(MAGICUBE_EXP_DEC=0 MAGICUBE_CACHE_DIR=/tmp/c$tag timeout 60 $bin run -v=8 --lhs=s8 --rhs=s8 --flush-l2 "$@" 2>&1 | grep -E "^time|^layer|exact|rror" | sed -e 's/(bitwise.*//' -e 's/ elements equal.*//' -e 's/over .*//' -e 's/(min.*//' | tr '\n' ' ')
  echo "$tag $* | $x" >> $R/ab.txt; }
for p in "-m=4096 -k=4096 -n=16 --sparsity=0.5" "-m=4096 -k=4096 -n=16 --sparsity=0.7" "-m=14336 -k=4096 -n=16 --sparsity=0.5" "-m=11008 -k=4096 -n=16 --sparsity=0.5"; do
  for rep in 1 2; do one g31 .carry/old/magicube --route=sparse --repeat=20 $p; one g32 $B/magicube --route=sparse --repeat=20 $p; done
done
for rep in 1 2; do one g31 .carry/old/magicube --route=sparse --repeat=10 --layers=16 -m=4096 -k=4096 -n=16 --sparsity=0.5; one g32 $B/magicube --route=sparse --repeat=10 --layers=16 -m=4096 -k=4096 -n=16 --sparsity=0.5; done
echo "ab done $(date -u +%T)" >> $R/gpu.txt
MAGICUBE_CACHE_DIR=/tmp/t MAGICUBE_LIBRARY=$PWD/.carry/lib/libmagicube.so.0 PYTHONPATH=python timeout 150 python3 -m pytest -q -rs python/tests > $R/pytest.txt 2>&1; echo "pytest rc=$? $(tail -1 $R/pytest.txt)" >> $R/gpu.txt
echo "done $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s25j.tgz s25j && rm -rf s25j
