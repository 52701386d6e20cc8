#!/bin/bash
# s=0.9 prefill with a bf16 output: does auto pick the faster route where the sparse kernel is near dense?
R=$OUT/s17j; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c78
B=.carry/bin
for shape in "4096 4096" "11008 4096" "4096 11008" "14336 4096"; do set -- $shape
 for n in 512 2048 8192; do s=0.9
  for r in sparse dense auto; do
   echo "== $1x$2 n=$n s=$s out=bf16 scale=rowcol bias=row route=$r"
   timeout 100 $B/magicube run --lhs=s8 --rhs=s8 --m=$1 --k=$2 --sparsity=$s --n=$n --out=bf16 --scale=rowcol --bias=row --route=$r --flush-l2 --repeat=20 2>&1 | grep -E "^(plan|route|exact|time)|rror"
  done
  echo "== $1x$2 n=$n s=$s out=int32 scale=none bias=none route=sparse"
  timeout 100 $B/magicube run --lhs=s8 --rhs=s8 --m=$1 --k=$2 --sparsity=$s --n=$n --route=sparse --flush-l2 --repeat=20 2>&1 | grep -E "^(plan|route|exact|time)|rror"
 done; done > $R/ab.txt 2>&1
date -u >> $R/gpu.txt
cd $OUT && tar czf s17j.tgz s17j && rm -rf s17j
