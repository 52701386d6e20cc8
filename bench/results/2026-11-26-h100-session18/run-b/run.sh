#!/bin/bash
# Session 18: u8 x s8 through the dense route in int8 chunks against the sparse kernel (A/B, auto)
R=$OUT/s18b; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c82
B=.carry/bin
for shape in "4096 4096 16 512 2048 8192" "11008 4096 512 2048"; do
 set -- $shape; m=$1; k=$2; shift 2; ns="$*"
 for n in $ns; do for s in 0.5 0.7; do
  for cfg in "u8 int32 none none sparse" "u8 int32 none none dense" "u8 int32 none none auto" "s8 int32 none none dense" \
             "u8 bf16 rowcol row sparse" "u8 bf16 rowcol row dense" "u8 bf16 rowcol row auto"; do set -- $cfg
   [ $SECONDS -gt 530 ] && break
   echo "== ${m}x${k} n=$n s=$s lhs=$1 out=$2 scale=$3 bias=$4 route=$5"
   timeout 100 $B/magicube run --lhs=$1 --rhs=s8 --m=$m --k=$k --sparsity=$s --n=$n --out=$2 --scale=$3 --bias=$4 --route=$5 --flush-l2 --repeat=20 2>&1 | grep -E "^(plan|route|exact|time)|rror"
  done; done; done; done > $R/ab.txt 2>&1
date -u >> $R/gpu.txt
cd $OUT && tar czf s18b.tgz s18b && rm -rf s18b
