#!/bin/bash
# Session 34 run-f: a piece's head partial (the row-block begun in an earlier warp's piece) written into C by the
# head warp as if it were the whole row-block, the owner adding the rest with red.global.add (integer outputs,
# no cluster; experiment build, MAGICUBE_EXP_HEADC=1): no hd_* registers through the ring (n48dw20 96 -> 86
# registers, 31 -> 29 instructions a slot). GPU tests with it on, then alternating with the shipped kernel, twice.
R=$OUT/s34f; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
tar xJf .carry/pkg.tar.xz -C .carry
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CLI_PATH=$PWD/.carry/bin/magicube MAGICUBE_CLI=$PWD/.carry/bin/magicube
MAGICUBE_EXP_HEADC=1 MAGICUBE_CACHE_DIR=/tmp/t34f timeout 240 .carry/bin/test_spmm_gpu 2>&1 | grep -E "^\[  (PASSED|FAILED) |FAILED|Failure" | head -20 > $R/tests.txt
MAGICUBE_EXP_HEADC=1 MAGICUBE_CACHE_DIR=/tmp/t34f timeout 100 .carry/bin/test_epilogue_gpu 2>&1 | grep -E "^\[  (PASSED|FAILED) |FAILED|Failure" | head -20 >> $R/tests.txt
one() { tag=$1; shift; case $tag in g37) env="MAGICUBE_EXP_NONE=1";; hc) env="MAGICUBE_EXP_HEADC=1";; esac
  x=$( ( env $env MAGICUBE_CACHE_DIR=/tmp/c34f$tag timeout 60 .carry/bin/magicube run -v=8 --flush-l2 --route=sparse --repeat=20 "$@" 2>&1 ) | grep -E "^time|exact|rror" | sed -e 's/ elements equal.*//' -e 's/over .*//' | tr '\n' ' ')
  echo "$tag $* | $x" >> $R/ab.txt; }
for rep in 1 2; do
for a in "-m=4096 -k=4096 -n=2048 --sparsity=0.9" "-m=6144 -k=4096 -n=2048 --sparsity=0.9" "-m=11008 -k=4096 -n=2048 --sparsity=0.9" "-m=14336 -k=4096 -n=2048 --sparsity=0.9" "-m=4096 -k=4096 -n=8192 --sparsity=0.9" "-m=4096 -k=14336 -n=2048 --sparsity=0.9" "-m=4096 -k=4096 -n=512 --sparsity=0.9" "-m=4096 -k=4096 -n=16 --sparsity=0.5" "-m=14336 -k=4096 -n=16 --sparsity=0.7" "-m=11008 -k=4096 -n=16 --sparsity=0.7" "-m=4096 -k=4096 -n=2048 --sparsity=0.9 --lhs=s4" "-m=4096 -k=4096 -n=2048 --sparsity=0.9 --c-order=col"; do
  [ $SECONDS -gt 500 ] && break 2
  case "$a" in *--lhs*) l=;; *) l=--lhs=s8;; esac; for tag in g37 hc; do one $tag $l --rhs=s8 $a; done
done; done
cat $R/tests.txt $R/ab.txt
cd $OUT && tar czf s34f.tgz s34f && rm -rf s34f
