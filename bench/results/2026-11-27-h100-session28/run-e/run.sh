#!/bin/bash
# Session 28 run-e: generator 34 (slice positions for the decode kernels of 20+ warps): GPU tests,
# then the policy's kernels with slice positions against the same without (MAGICUBE_EXP_NOPERM, an
# experiment switch in the planner, not committed), alternating, twice.
R=$OUT/s28e; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
B=.carry/bin; T0=$(date +%s)
export MAGICUBE_CACHE_DIR=/tmp/t28e
timeout 200 $B/test_spmm_gpu --gtest_filter='*Decode*:*ColumnMajor*' > $R/test_spmm_gpu.txt 2>&1
timeout 100 $B/test_epilogue_gpu --gtest_filter='*Decode*' > $R/test_epilogue_gpu.txt 2>&1
timeout 100 $B/test_capi_gpu > $R/test_capi_gpu.txt 2>&1
timeout 100 $B/test_api --gtest_filter='ApiGpu.*' > $R/test_api.txt 2>&1
for f in $R/test_*.txt; do echo "$(basename $f): $(grep -E '^\[  (PASSED|FAILED) ' $f | tr '\n' ' ')"; done > $R/tests.txt
one() { tag=$1; shift; x=$( ( [ $tag = noperm ] && export MAGICUBE_EXP_NOPERM=1; MAGICUBE_CACHE_DIR=/tmp/c28e$tag timeout 120 $B/magicube run -v=8 --flush-l2 --route=sparse "$@" 2>&1 ) | grep -E "^plan|^time|exact|rror" | sed -e 's/(chosen.*//' -e 's/(bitwise.*//' -e 's/ elements equal.*//' -e 's/over .*//' -e 's/(min.*//' | tr '\n' ' ')
  echo "$tag $* | $x" >> $R/ab.txt; }
for rep in 1 2; do
for a in "-m=4096 -k=4096 -n=2048 --sparsity=0.9" "-m=6144 -k=4096 -n=2048 --sparsity=0.9" "-m=11008 -k=4096 -n=2048 --sparsity=0.9" \
         "-m=14336 -k=4096 -n=2048 --sparsity=0.9" "-m=4096 -k=11008 -n=2048 --sparsity=0.9" "-m=4096 -k=4096 -n=8192 --sparsity=0.9" \
         "-m=4096 -k=4096 -n=512 --sparsity=0.7" "-m=4096 -k=4096 -n=128 --sparsity=0.9" "-m=11008 -k=4096 -n=512 --sparsity=0.9" \
         "-m=14336 -k=4096 -n=8192 --sparsity=0.9"; do
  [ $(( $(date +%s) - T0 )) -gt 480 ] && break 2
  r=20; case "$a" in *8192*) r=10;; esac
  one perm --lhs=s8 --rhs=s8 --repeat=$r $a
  one noperm --lhs=s8 --rhs=s8 --repeat=$r $a
done
one perm --lhs=s4 --rhs=s8 --repeat=20 -m=11008 -k=4096 -n=2048 --sparsity=0.9
one noperm --lhs=s4 --rhs=s8 --repeat=20 -m=11008 -k=4096 -n=2048 --sparsity=0.9
done
echo "done $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s28e.tgz s28e && rm -rf s28e
