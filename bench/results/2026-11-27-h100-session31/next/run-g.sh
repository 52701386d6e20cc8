#!/bin/bash
# For the next device session (not run yet): the float epilogue in shares of all slices, then
# the policy may ask shares for float outputs (runtime/policy.cpp: `!is_float(d.out)`).
# Stage first: .carry/stage.sh magicube test_epilogue_gpu test_spmm_gpu
# 1. EpilogueGpu.DecodeFloatOutputsInShares (bf16 / f32, scales and biases by row and column, both
#    C orders, 48 / 32 / 16-column tiles on (1, SMs) grids) and the integer shares test again.
# 2. A float output at N=8192 s=0.9 with shares (`--shares`, the tile pinned: n16dw32s / n48dw20s)
#    against the same tile in whole waves, alternating, twice.
tar xJf .carry/pkg.tar.xz -C .carry
R=$OUT/next-g; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
MAGICUBE_CACHE_DIR=/tmp/tng timeout 200 .carry/bin/test_epilogue_gpu --gtest_filter='*Shares*:*DecodeFloat*' > $R/test_epilogue_gpu.txt 2>&1
echo "test_epilogue_gpu rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $R/test_epilogue_gpu.txt | tr '\n' ' ')" >> $R/gpu.txt
MAGICUBE_CACHE_DIR=/tmp/tng timeout 120 .carry/bin/test_spmm_gpu --gtest_filter='*Shares*' > $R/test_spmm_gpu.txt 2>&1
echo "test_spmm_gpu rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $R/test_spmm_gpu.txt | tr '\n' ' ')" >> $R/gpu.txt
one() { y=$( ( MAGICUBE_CACHE_DIR=/tmp/cng timeout 90 .carry/bin/magicube run -v=8 --flush-l2 --route=sparse --lhs=s8 --rhs=s8 \
          --out=bf16 --scale=rowcol --bias=row --c-order=col --repeat=20 --sparsity=0.9 "$@" 2>&1 ) | grep -E "^time|exact|rror|^plan" | tr '\n' ' ')
  echo "$* | $y" >> $R/ab.txt; }
for rep in 1 2; do
  one -m=4096 -k=14336 -n=8192 --bsn=16 --warps=32; one -m=4096 -k=14336 -n=8192 --bsn=16 --warps=32 --shares
  one -m=4096 -k=4096 -n=8192 --bsn=48 --warps=20;  one -m=4096 -k=4096 -n=8192 --bsn=48 --warps=20 --shares
done
cat $R/gpu.txt $R/ab.txt
cd $OUT && tar czf next-g.tgz next-g && rm -rf next-g
