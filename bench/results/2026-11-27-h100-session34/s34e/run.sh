#!/bin/bash
# Session 34 run-e: the decode kernel's accumulators never zeroed (experiment build, MAGICUBE_EXP_BASE=1):
# a row-block's sums are the running sums less those at its start (kept in registers), so the ring's
# hot path has no merge of zeroed and running accumulators (SASS: 31 -> 28 instructions a slot at
# n48dw20, 4 -> 1 moves). GPU tests with it on, then alternating with the shipped kernel (g37), twice.
R=$OUT/s34e; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
tar xJf .carry/pkg.tar.xz -C .carry
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CLI_PATH=$PWD/.carry/bin/magicube MAGICUBE_CLI=$PWD/.carry/bin/magicube
MAGICUBE_EXP_BASE=1 MAGICUBE_CACHE_DIR=/tmp/t34e timeout 200 .carry/bin/test_spmm_gpu --gtest_filter='*Decode*:*ColumnMajor*' 2>&1 | grep -E "^\[  (PASSED|FAILED) |FAILED|Failure" | head -20 > $R/tests.txt
MAGICUBE_EXP_BASE=1 MAGICUBE_CACHE_DIR=/tmp/t34e timeout 100 .carry/bin/test_epilogue_gpu --gtest_filter='*Decode*' 2>&1 | grep -E "^\[  (PASSED|FAILED) |FAILED|Failure" | head -20 >> $R/tests.txt
one() { tag=$1; shift; case $tag in g37) env="MAGICUBE_EXP_NONE=1";; base) env="MAGICUBE_EXP_BASE=1";; esac
  x=$( ( env $env MAGICUBE_CACHE_DIR=/tmp/c34e$tag timeout 60 .carry/bin/magicube run -v=8 --flush-l2 --route=sparse --repeat=20 "$@" 2>&1 ) | grep -E "^time|exact|rror" | sed -e 's/ elements equal.*//' -e 's/over .*//' | tr '\n' ' ')
  echo "$tag $* | $x" >> $R/ab.txt; }
for rep in 1 2; do
for a in "-m=4096 -k=4096 -n=2048 --sparsity=0.9" "-m=6144 -k=4096 -n=2048 --sparsity=0.9" "-m=11008 -k=4096 -n=2048 --sparsity=0.9" "-m=14336 -k=4096 -n=2048 --sparsity=0.9" "-m=4096 -k=4096 -n=8192 --sparsity=0.9" "-m=4096 -k=14336 -n=2048 --sparsity=0.9" "-m=4096 -k=4096 -n=512 --sparsity=0.9" "-m=4096 -k=4096 -n=16 --sparsity=0.5" "-m=14336 -k=4096 -n=16 --sparsity=0.7" "-m=11008 -k=4096 -n=16 --sparsity=0.7" "-m=4096 -k=4096 -n=2048 --sparsity=0.9 --lhs=s4" "-m=4096 -k=4096 -n=2048 --sparsity=0.9 --out=bf16 --scale=rowcol --bias=row --c-order=col"; do
  [ $SECONDS -gt 480 ] && break 2
  case "$a" in *--lhs*) l=;; *) l=--lhs=s8;; esac; for tag in g37 base; do one $tag $l --rhs=s8 $a; done
done; done
cat $R/tests.txt $R/ab.txt
cd $OUT && tar czf s34e.tgz s34e && rm -rf s34e
