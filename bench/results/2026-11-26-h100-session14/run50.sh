#!/bin/bash
# split-2 ring kernels in PTX: GPU tests, PTX against CUDA on the llm grid's long-K prefill plans (L2 flushed)
R=$OUT/s14f; mkdir -p $R
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
B=.carry/bin
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
MAGICUBE_CACHE_DIR=/tmp/c50 timeout 240 $B/test_spmm_gpu --gtest_filter='*Ptx*:*EveryCandidate*:*ComparisonCatches*:*EveryWidthPair*' > $R/test_spmm_gpu.log 2>&1; echo "test_spmm_gpu rc=$?" >> $R/gpu.txt
date -u >> $R/gpu.txt
run() { local lang=$1; shift
  MAGICUBE_PTX=$lang MAGICUBE_CACHE_DIR=/tmp/ab50_$lang timeout 90 $B/magicube run "$@" --route=sparse --flush-l2 --repeat=20 2>&1 | grep -E 'median|exact|^plan' | tr '\n' ' '; echo; }
for rep in 1 2; do for lang in 1 0; do
  for args in "--m=4096 --k=11008 --n=2048 --sparsity=0.9" "--m=4096 --k=14336 --n=8192 --sparsity=0.5" \
              "--m=4096 --k=11008 --n=512 --sparsity=0.7" "--m=4096 --k=14336 --n=2048 --sparsity=0.9" \
              "--m=4096 --k=14336 --n=128 --sparsity=0.9"; do
    echo "rep$rep ptx=$lang $args :: $(run $lang --op=spmm --lhs=s8 --rhs=s8 -v=8 $args)" >> $R/ab.txt
  done; done; done
date -u >> $R/gpu.txt
cd $OUT && tar czf s14f.tgz s14f && rm -rf s14f
