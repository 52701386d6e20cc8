#!/bin/bash
# Session 32 run-f (023a8ab): how much of prefill N=2048 is fixed cost (launch, the slice copy, the
# tail): the sparse kernel at s = 0.9 / 0.97 / 0.99 / 0.999 on 4096x4096 and 14336x4096 (the same
# plan, n48dw20: 43 slices in 3 parts).
tar xJf .carry/pkg.tar.xz -C .carry
R=$OUT/s32f; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
for m in 4096 14336; do for s in 0.9 0.97 0.99 0.999; do
  y=$( (MAGICUBE_CACHE_DIR=/tmp/c32f timeout 40 .carry/bin/magicube run -v=8 --flush-l2 --route=sparse --lhs=s8 --rhs=s8 \
        -m=$m -k=4096 -n=2048 --sparsity=$s --bsn=48 --warps=20 --repeat=50 2>&1) | grep -E "^time|^plan|exact:" | cut -c1-120 | tr '\n' ' ')
  echo "m=$m s=$s | $y" >> $R/fixed.txt
done; done
cat $R/gpu.txt $R/fixed.txt
cd $OUT && tar czf s32f.tgz s32f && rm -rf s32f
