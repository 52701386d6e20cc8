#!/bin/bash
# Session 23 run-b: generator 31 + the 0.97 decode margin: the L8-R8 V=8 grid, then float
# outputs as the torch layer asks for them (bf16, row x column scales, row bias, column-major C)
# through the sparse kernel and the dense route, for the route model's float epilogue term.
R=$OUT/s23b; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/cb
B=.carry/bin
timeout 300 $B/magicube-bench --sections=llm --llm-grid=default --filter=L8-R8 --v=8 --no-plots --out-dir=$R/llm-l8r8 > $R/llm-l8r8.log 2>&1; echo "l8r8 rc=$? $(date -u +%T)" >> $R/gpu.txt
fl() { for route in sparse dense; do
  [ $SECONDS -gt 570 ] && return
  x=$(timeout 40 $B/magicube run -v=8 --lhs=s8 --rhs=s8 --flush-l2 --repeat=20 --out=bf16 --scale=rowcol --bias=row --c-order=col --route=$route "$@" 2>&1 | grep -E "^time|^kernel|^route|exact|rror" | tr '\n' ' ')
  echo "$route $* | $x" >> $R/float.txt; done; }
for s in 0.9 0.7; do for n in 512 2048 128; do for mk in "-m=4096 -k=4096" "-m=11008 -k=4096" "-m=4096 -k=11008" "-m=14336 -k=4096"; do
  fl $mk -n=$n --sparsity=$s
done; done; done
fl -m=4096 -k=4096 -n=8192 --sparsity=0.9
echo "float done $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s23b.tgz s23b && rm -rf s23b
