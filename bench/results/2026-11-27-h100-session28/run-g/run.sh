#!/bin/bash
# Session 28 run-g: the dispatch's float outputs at long K on the new policy (16-column slices of
# all K at 32 warps at s=0.9): the sparse kernel and the dense route on session 23's float rows
# (bf16 + row/col scales + row bias, 4096x11008 s=0.9, row- and column-major C), then the auto route.
R=$OUT/s28g; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c28g
B=.carry/bin
timeout 100 $B/test_epilogue_gpu --gtest_filter='*Decode*' > $R/test_epilogue_gpu.txt 2>&1
fl() { order=$1; route=$2; shift 2; [ $SECONDS -gt 300 ] && return
  x=$(timeout 40 $B/magicube run -v=8 --lhs=s8 --rhs=s8 --flush-l2 --repeat=20 --out=bf16 --scale=rowcol --bias=row --c-order=$order --route=$route "$@" 2>&1 | grep -E "^time|^kernel|^plan|^route|exact|rror" | sed -e 's/(bitwise.*//' -e 's/ elements equal.*//' -e 's/over .*//' | tr '\n' ' ')
  echo "$order $route $* | $x" >> $R/float.txt; }
for order in col row; do for n in 128 512 2048; do for route in sparse dense auto; do
  fl $order $route -m=4096 -k=11008 -n=$n --sparsity=0.9
done; done; done
for n in 512 2048; do for route in sparse dense auto; do fl col $route -m=4096 -k=14336 -n=$n --sparsity=0.9; done; done
echo "done $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s28g.tgz s28g && rm -rf s28g
