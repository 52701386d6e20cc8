#!/bin/bash
# decode slices of 4 and 8 columns (B's rows 4 / 8 bytes): GPU tests, A/B against n16d, llm grid L8-R8 V=8
R=$OUT/s16a; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
C=/tmp/c65
MAGICUBE_CACHE_DIR=$C timeout 200 .carry/bin/test_spmm_gpu --gtest_filter='*Decode*:*ComparisonCatches*' > $R/test_spmm_gpu_decode.log 2>&1; echo "test_spmm_gpu decode rc=$?" >> $R/gpu.txt
MAGICUBE_CACHE_DIR=$C timeout 100 .carry/bin/test_epilogue_gpu --gtest_filter='*Decode*' > $R/test_epilogue_gpu_decode.log 2>&1; echo "test_epilogue_gpu decode rc=$?" >> $R/gpu.txt
MAGICUBE_CACHE_DIR=$C timeout 100 .carry/bin/test_capi_gpu > $R/test_capi_gpu.log 2>&1; echo "test_capi_gpu rc=$?" >> $R/gpu.txt
date -u >> $R/gpu.txt
run() { MAGICUBE_CACHE_DIR=$C timeout 60 .carry/bin/magicube run --op=spmm --lhs=s8 --rhs=s8 -v=8 "$@" --route=sparse --flush-l2 --repeat=20 2>&1 | grep -E 'median|exact|^plan|error' | tr '\n' ' '; echo; }
for rep in 1 2; do
  for shape in "--m=4096 --k=4096 --sparsity=0.5" "--m=4096 --k=4096 --sparsity=0.7" "--m=4096 --k=4096 --sparsity=0.9" "--m=14336 --k=4096 --sparsity=0.5" "--m=4096 --k=14336 --sparsity=0.5"; do
    for n in 1 8; do
      for var in "narrow:" "n16:--decode --bsn=16"; do
        echo "rep$rep ${var%%:*} $shape --n=$n :: $(run $shape --n=$n ${var#*:})" >> $R/ab.txt
      done; done; done; done
date -u >> $R/gpu.txt
MAGICUBE_CACHE_DIR=$C timeout 260 .carry/bin/magicube-bench --sections=llm --llm-grid=default --filter=L8-R8 --v=8 --no-plots --out-dir=$R/llm-l8r8 > $R/llm.log 2>&1; echo "llm grid rc=$?" >> $R/gpu.txt
date -u >> $R/gpu.txt
cd $OUT && tar czf s16a.tgz s16a && rm -rf s16a
