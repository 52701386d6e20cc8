#!/bin/bash
# decode/resident: B's slice copied from a per-block rotated start (generator 27, .carry/bin) vs generator 26 (.carry/old)
R=$OUT/s15a; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c58 timeout 240 .carry/bin/test_spmm_gpu --gtest_filter='*Decode*:*Resident*:*ComparisonCatches*' > $R/test_spmm_gpu.log 2>&1; echo "test_spmm_gpu rc=$?" >> $R/gpu.txt
date -u >> $R/gpu.txt
run() { local v=$1; shift
  local dir=.carry; [ $v = old ] && dir=.carry/old
  LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/$dir/lib MAGICUBE_CACHE_DIR=/tmp/ab58_$v timeout 60 $dir/bin/magicube run --op=spmm --lhs=s8 --rhs=s8 -v=8 "$@" --route=sparse --flush-l2 --repeat=30 2>&1 | grep -E 'median|exact|^plan' | tr '\n' ' '; echo; }
for rep in 1 2; do for v in new old; do
  for args in "--m=4096 --k=4096 --n=16 --sparsity=0.5" "--m=4096 --k=4096 --n=1 --sparsity=0.5" "--m=4096 --k=4096 --n=16 --sparsity=0.7" "--m=4096 --k=4096 --n=16 --sparsity=0.9" \
              "--m=4096 --k=14336 --n=16 --sparsity=0.5" "--m=14336 --k=4096 --n=8 --sparsity=0.7" "--m=4096 --k=11008 --n=4 --sparsity=0.7" \
              "--m=4096 --k=4096 --n=48 --sparsity=0.5" "--m=4096 --k=4096 --n=2048 --sparsity=0.9" "--m=11008 --k=4096 --n=128 --sparsity=0.9"; do
    echo "rep$rep $v $args :: $(run $v $args)" >> $R/ab.txt
  done; done; done
date -u >> $R/gpu.txt
cd $OUT && tar czf s15a.tgz s15a && rm -rf s15a
