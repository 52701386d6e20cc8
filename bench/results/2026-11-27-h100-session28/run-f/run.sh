#!/bin/bash
# Session 28 run-f (generator 33, the committed build): float outputs at long K: the ring kernel
# (the policy's today), 16-column slices of all K at 32 warps (n16dw32, forced) and the dense
# route; then the L4-R4 V=8 grid and the L8-R8 V=4/2 grid on generator 33.
R=$OUT/s28f; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c28f
B=.carry/bin
fl() { order=$1; tag=$2; shift 2; [ $SECONDS -gt 170 ] && return
  x=$(timeout 40 $B/magicube run -v=8 --lhs=s8 --rhs=s8 --flush-l2 --repeat=20 --out=bf16 --scale=rowcol --bias=row --c-order=$order "$@" 2>&1 | grep -E "^time|^kernel|exact|rror" | sed -e 's/(bitwise.*//' -e 's/ elements equal.*//' -e 's/over .*//' | tr '\n' ' ')
  echo "$order $tag $* | $x" >> $R/float.txt; }
for n in 2048 512 8192 128; do for k in 11008 14336; do for order in col row; do
  [ $order = row ] && [ $n != 2048 ] && continue
  fl $order ring -m=4096 -k=$k -n=$n --sparsity=0.9 --route=sparse
  fl $order n16dw32 -m=4096 -k=$k -n=$n --sparsity=0.9 --route=sparse --decode --bsn=16 --warps=32
  fl $order dense -m=4096 -k=$k -n=$n --sparsity=0.9 --route=dense
done; done; done
echo "float done $(date -u +%T)" >> $R/gpu.txt
timeout $((400 - SECONDS)) $B/magicube-bench --sections=llm --llm-grid=default --filter=L4-R4 --v=8 --no-plots --out-dir=$R/llm-l4r4 > $R/llm-l4r4.log 2>&1; echo "l4r4 rc=$? $(date -u +%T)" >> $R/gpu.txt
timeout $((590 - SECONDS)) $B/magicube-bench --sections=llm --llm-grid=default --filter=L8-R8 --v=4,2 --no-plots --out-dir=$R/llm-l8r8-v42 > $R/llm-l8r8-v42.log 2>&1; echo "v42 rc=$? $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s28f.tgz s28f && rm -rf s28f
