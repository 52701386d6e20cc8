#!/bin/bash
# decode kernel in K panels (generator 28): exactness, then long-K prefill against the policy's kernel and dense
R=$OUT/s15b; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
MAGICUBE_CACHE_DIR=/tmp/c59 timeout 300 .carry/bin/test_spmm_gpu --gtest_filter='*Panels*:*ComparisonCatches*' > $R/test_panels.log 2>&1; echo "test panels rc=$?" >> $R/gpu.txt
date -u >> $R/gpu.txt
run() { MAGICUBE_CACHE_DIR=/tmp/ab59 timeout 90 .carry/bin/magicube run --op=spmm --lhs=s8 --rhs=s8 -v=8 "$@" --flush-l2 --repeat=20 2>&1 | grep -E 'median|exact|^plan|error' | tr '\n' ' '; echo; }
for rep in 1 2; do
  for shape in "--m=4096 --k=14336" "--m=4096 --k=11008"; do
    for sp in 0.9 0.7; do for n in 512 2048 8192; do
      for v in "--route=sparse" "--route=sparse --panel=4800 --bsn=48" "--route=sparse --panel=3712 --bsn=48" "--route=dense"; do
        echo "rep$rep $shape --n=$n --sparsity=$sp $v :: $(run $shape --n=$n --sparsity=$sp $v)" >> $R/ab.txt
      done; done; done; done
  for v in "--route=sparse" "--route=sparse --panel=2048 --bsn=48"; do
    echo "rep$rep --m=4096 --k=4096 --n=2048 --sparsity=0.9 $v :: $(run --m=4096 --k=4096 --n=2048 --sparsity=0.9 $v)" >> $R/ab.txt; done
  date -u >> $R/gpu.txt
done
cd $OUT && tar czf s15b.tgz s15b && rm -rf s15b
