#!/bin/bash
# Session 23 run-d: the final build (generator 31): float outputs through the sparse kernel and
# the dense route (bf16 with row x column scales and a row bias, C column-major as the torch
# layer asks, and row-major), for the route model's float terms; the L8-R8 V=4/2 grid.
R=$OUT/s23d; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/cd
B=.carry/bin
fl() { order=$1; shift; for route in sparse dense; do
  [ $SECONDS -gt 500 ] && return
  x=$(timeout 40 $B/magicube run -v=8 --lhs=s8 --rhs=s8 --flush-l2 --repeat=20 --out=bf16 --scale=rowcol --bias=row --c-order=$order --route=$route "$@" 2>&1 | grep -E "^time|^kernel|^route|exact|rror" | tr '\n' ' ')
  echo "$order $route $* | $x" >> $R/float.txt; done; }
for order in col row; do for s in 0.9 0.7 0.5; do for n in 512 2048 128; do for mk in "-m=4096 -k=4096" "-m=11008 -k=4096" "-m=4096 -k=11008" "-m=14336 -k=4096"; do
  [ $s = 0.5 ] && [ $n = 2048 ] && [ "$mk" = "-m=14336 -k=4096" ] && continue
  [ $order = row ] && [ $s = 0.5 ] && continue
  fl $order $mk -n=$n --sparsity=$s
done; done; done; done
fl col -m=4096 -k=4096 -n=8192 --sparsity=0.9
echo "float done $(date -u +%T)" >> $R/gpu.txt
timeout $((590 - SECONDS)) $B/magicube-bench --sections=llm --llm-grid=default --filter=L8-R8 --v=4,2 --no-plots --out-dir=$R/llm-l8r8-v42 > $R/llm-l8r8-v42.log 2>&1; echo "v42 rc=$? $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s23d.tgz s23d && rm -rf s23d
