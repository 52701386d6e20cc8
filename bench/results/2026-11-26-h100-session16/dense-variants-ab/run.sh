#!/bin/bash
# A/B: the dense route's candidates with and without the variants (swizzle toggled, column-major C configurations), llm grid N=128,512,2048,8192, interleaved
R=$OUT/s16c; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/exp/lib
for rep in 1 2; do
  for v in novar var; do
    if [ $v = novar ]; then export MAGICUBE_EXP_NO_VARIANTS=1; else unset MAGICUBE_EXP_NO_VARIANTS; fi
    MAGICUBE_CACHE_DIR=/tmp/c68 timeout 200 .carry/exp/bin/magicube-bench --sections=llm --llm-grid=default --filter=L8-R8 --v=8 --llm-n=512,2048,8192 --no-plots --out-dir=$R/$v-$rep > $R/$v-$rep.log 2>&1; echo "$v-$rep rc=$? $(date -u)" >> $R/gpu.txt
  done
done
cd $OUT && tar czf s16c.tgz s16c && rm -rf s16c
