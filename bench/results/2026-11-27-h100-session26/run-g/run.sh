#!/bin/bash
# Session 26 run-g: the decode kernel gathering the next stride's B fragments (ldmatrix) before
# this stride's mma and epilogue branch (MAGICUBE_EXP_PIPE, two fragment buffers) against generator 32:
# GPU tests with the switch on, then alternating timings at decode and prefill sizes.
R=$OUT/s26g; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
B=.carry/bin
MAGICUBE_EXP_PIPE=1 MAGICUBE_CACHE_DIR=/tmp/tp timeout 200 $B/test_spmm_gpu --gtest_filter='*Decode*:*ColumnMajor*' > $R/spmm_gpu.txt 2>&1; echo "spmm_gpu (pipe) rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/spmm_gpu.txt | tr '\n' ' ')" >> $R/gpu.txt
MAGICUBE_EXP_PIPE=1 MAGICUBE_CACHE_DIR=/tmp/tp timeout 60 $B/test_epilogue_gpu --gtest_filter='*Decode*' > $R/epi.txt 2>&1; echo "epilogue_gpu (pipe) rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/epi.txt | tr '\n' ' ')" >> $R/gpu.txt
echo "tests done $(date -u +%T)" >> $R/gpu.txt
one() { tag=$1; shift; if [ $tag = base ]; then unset MAGICUBE_EXP_PIPE; else export MAGICUBE_EXP_PIPE=1; fi
  x=$(MAGICUBE_CACHE_DIR=/tmp/c$tag timeout 60 $B/magicube run -v=8 --lhs=s8 --rhs=s8 --flush-l2 --route=sparse "$@" 2>&1 | grep -E "^plan|^time|^layer|exact|rror" | sed -e 's/(chosen.*//' -e 's/(bitwise.*//' -e 's/ elements equal.*//' -e 's/over .*//' -e 's/(min.*//' | tr '\n' ' ')
  echo "$tag $* | $x" >> $R/ab.txt; }
for p in "-m=4096 -k=4096 -n=16 --sparsity=0.5" "-m=4096 -k=4096 -n=16 --sparsity=0.7" "-m=14336 -k=4096 -n=16 --sparsity=0.5" "-m=4096 -k=14336 -n=16 --sparsity=0.5" "-m=4096 -k=4096 -n=2048 --sparsity=0.9" "-m=14336 -k=4096 -n=2048 --sparsity=0.9" "-m=4096 -k=14336 -n=2048 --sparsity=0.9" "-m=4096 -k=4096 -n=64 --sparsity=0.7"; do
  for rep in 1 2; do for v in base pipe; do one $v --repeat=20 $p; done; done
done
for rep in 1 2; do for v in base pipe; do one $v --repeat=10 --layers=16 -m=4096 -k=4096 -n=16 --sparsity=0.5; done; done
echo "done $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s26g.tgz s26g && rm -rf s26g
