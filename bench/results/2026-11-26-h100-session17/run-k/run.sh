#!/bin/bash
# The sparse estimate's float-epilogue term: what auto runs for bf16 at s=0.9 prefill and at decode
R=$OUT/s17k; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c79
B=.carry/bin
{ for shape in "4096 4096" "11008 4096" "4096 11008" "14336 4096"; do set -- $shape
   for n in 512 2048 8192; do s=0.9
    echo "== $1x$2 n=$n s=$s out=bf16 route=auto"
    timeout 100 $B/magicube run --lhs=s8 --rhs=s8 --m=$1 --k=$2 --sparsity=$s --n=$n --out=bf16 --scale=rowcol --bias=row --flush-l2 --repeat=20 2>&1 | grep -E "^(route|exact|time)|rror"
   done; done
  for shape in "4096 4096" "4096 11008" "4096 14336" "14336 4096"; do set -- $shape
   for n in 1 16 64; do s=0.5
    echo "== $1x$2 n=$n s=$s out=bf16 route=auto"
    timeout 100 $B/magicube run --lhs=s8 --rhs=s8 --m=$1 --k=$2 --sparsity=$s --n=$n --out=bf16 --scale=rowcol --bias=row --flush-l2 --repeat=50 2>&1 | grep -E "^(route|exact|time)|rror"
   done; done; } > $R/auto.txt 2>&1
date -u >> $R/gpu.txt
cd $OUT && tar czf s17k.tgz s17k && rm -rf s17k
