#!/bin/bash
# PTX kernels: the GPU test binaries that compile many kernels, compute-sanitizer on the PTX kernels
R=$OUT/s14b; mkdir -p $R
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c46
B=.carry/bin
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
for s in "--op=spmm --lhs=s8 --rhs=s8 -v=8 --m=512 --k=1024 --n=200 --sparsity=0.7 --bsn=128 --route=sparse" \
         "--op=spmm --lhs=u4 --rhs=s4 -v=8 --m=300 --k=777 --n=130 --sparsity=0.5 --bsn=64 --route=sparse --out=int64" \
         "--op=sddmm --lhs=s8 --rhs=u4 -v=8 --m=300 --n=500 --k=333 --sparsity=0.8 --bsn=128" \
         "--op=sddmm --lhs=s4 --rhs=s4 -v=8 --m=256 --n=512 --k=256 --sparsity=0.6 --bsn=64 --layout=bcrs --out=int64"; do
  echo "== $s" >> $R/sanitizer.txt
  timeout 60 compute-sanitizer --tool memcheck $B/magicube run $s --repeat=1 --warmup=0 2>&1 | grep -E 'exact|ERROR SUMMARY|plan ' >> $R/sanitizer.txt
done
date -u >> $R/gpu.txt
timeout 330 $B/test_spmm_gpu > $R/test_spmm_gpu.log 2>&1; echo "test_spmm_gpu rc=$? $(grep -E 'PASSED|FAILED' $R/test_spmm_gpu.log | tr '\n' ' ')" >> $R/tests.txt
date -u >> $R/gpu.txt
timeout 120 $B/test_epilogue_gpu > $R/test_epilogue_gpu.log 2>&1; echo "test_epilogue_gpu rc=$? $(grep -E 'PASSED|FAILED' $R/test_epilogue_gpu.log | tr '\n' ' ')" >> $R/tests.txt
date -u >> $R/gpu.txt
cd $OUT && tar czf s14b.tgz s14b && rm -rf s14b
