#!/bin/bash
# Decode shapes with a bf16 output: the sparse kernel (int32 and bf16), the dense route, what auto runs
R=$OUT/s17d; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c72
B=.carry/bin
for shape in "4096 4096" "4096 11008" "4096 14336" "14336 4096"; do set -- $shape
 for n in 1 16 64; do s=0.5
  for cfg in "int32 none none sparse" "bf16 rowcol row sparse" "bf16 rowcol row dense" "bf16 rowcol row auto"; do set -- $shape $cfg
   echo "== $1x$2 n=$n s=$s out=$3 scale=$4 bias=$5 route=$6"
   timeout 120 $B/magicube run --lhs=s8 --rhs=s8 --m=$1 --k=$2 --sparsity=$s --n=$n --out=$3 --scale=$4 --bias=$5 --route=$6 --flush-l2 --repeat=50 2>&1 | grep -E "^(plan|route|exact|time)|rror"
  done; done; done > $R/ab.txt 2>&1
date -u >> $R/gpu.txt
cd $OUT && tar czf s17d.tgz s17d && rm -rf s17d
