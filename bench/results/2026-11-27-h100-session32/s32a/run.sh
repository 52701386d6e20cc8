#!/bin/bash
# Session 32 run-a: session 31's next/run-g.sh (float epilogue in shares: its GPU test and a bf16 A/B),
# then the dense route's selection at N=8192 s=0.5 with debug logs, four processes a shape.
tar xJf .carry/pkg.tar.xz -C .carry
R=$OUT/s32a; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
MAGICUBE_CACHE_DIR=/tmp/tng timeout 200 .carry/bin/test_epilogue_gpu --gtest_filter='*Shares*:*DecodeFloat*' > $R/test_epilogue_gpu.txt 2>&1
echo "test_epilogue_gpu rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $R/test_epilogue_gpu.txt | tr '\n' ' ') $(date -u +%T)" >> $R/gpu.txt
MAGICUBE_CACHE_DIR=/tmp/tng timeout 120 .carry/bin/test_spmm_gpu --gtest_filter='*Shares*' > $R/test_spmm_gpu.txt 2>&1
echo "test_spmm_gpu rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $R/test_spmm_gpu.txt | tr '\n' ' ') $(date -u +%T)" >> $R/gpu.txt
one() { y=$( ( MAGICUBE_CACHE_DIR=/tmp/cng timeout 90 .carry/bin/magicube run -v=8 --flush-l2 --route=sparse --lhs=s8 --rhs=s8 \
          --out=bf16 --scale=rowcol --bias=row --c-order=col --repeat=20 --sparsity=0.9 "$@" 2>&1 ) | grep -E "^time|exact|rror|^plan" | tr '\n' ' ')
  echo "$* | $y" >> $R/ab.txt; }
for rep in 1 2; do
  one -m=4096 -k=14336 -n=8192 --bsn=16 --warps=32; one -m=4096 -k=14336 -n=8192 --bsn=16 --warps=32 --shares
  one -m=4096 -k=4096 -n=8192 --bsn=48 --warps=20;  one -m=4096 -k=4096 -n=8192 --bsn=48 --warps=20 --shares
done
echo "ab done $(date -u +%T)" >> $R/gpu.txt
for shape in "-m=4096 -k=14336" "-m=14336 -k=4096" "-m=11008 -k=4096"; do
  for rep in 1 2 3 4; do
    f=$R/dense_$(echo $shape | tr -d ' =-')_$rep.txt
    MAGICUBE_LOG_LEVEL=debug MAGICUBE_CACHE_DIR=/tmp/cng timeout 90 .carry/bin/magicube run -v=8 --flush-l2 --route=dense --lhs=s8 --rhs=s8 \
      $shape -n=8192 --sparsity=0.5 --repeat=20 > $f 2>&1
    echo "$shape rep $rep: $(grep -E '^time|exact|cuBLASLt int8' $f | tr '\n' ' ')" >> $R/dense.txt
  done
done
cat $R/gpu.txt $R/ab.txt $R/dense.txt
cd $OUT && tar czf s32a.tgz s32a && rm -rf s32a
