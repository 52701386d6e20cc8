#!/bin/bash
# generator 26: the SDDMM PTX epilogue branches on the output layout; exactness, PTX against CUDA (L2 flushed)
R=$OUT/s14k; mkdir -p $R
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
B=.carry/bin
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
MAGICUBE_CACHE_DIR=/tmp/c55 timeout 200 $B/test_sddmm_gpu > $R/test_sddmm_gpu.log 2>&1; echo "test_sddmm_gpu rc=$?" >> $R/gpu.txt
date -u >> $R/gpu.txt
run() { local lang=$1; shift
  MAGICUBE_PTX=$lang MAGICUBE_CACHE_DIR=/tmp/ab55_$lang timeout 90 $B/magicube run "$@" --flush-l2 --repeat=30 2>&1 | grep -E 'median|exact|^plan' | tr '\n' ' '; echo; }
for rep in 1 2; do for lang in 1 0; do
  for args in "--op=sddmm --lhs=s4 --rhs=s4 -v=8 --m=4096 --n=4096 --k=256 --sparsity=0.9 --bsn=128" \
              "--op=sddmm --lhs=s4 --rhs=s4 -v=8 --m=4096 --n=4096 --k=1024 --sparsity=0.7 --bsn=128" \
              "--op=sddmm --lhs=s4 --rhs=s4 -v=8 --m=4096 --n=4096 --k=512 --sparsity=0.9 --bsn=128" \
              "--op=sddmm --lhs=s8 --rhs=s8 -v=8 --m=4096 --n=4096 --k=512 --sparsity=0.7 --bsn=128" \
              "--op=sddmm --lhs=s8 --rhs=s8 -v=8 --m=4096 --n=4096 --k=256 --sparsity=0.9 --bsn=128" \
              "--op=sddmm --lhs=s8 --rhs=u4 -v=8 --m=2048 --n=2048 --k=1024 --sparsity=0.9 --bsn=64" \
              "--op=sddmm --lhs=s8 --rhs=s8 -v=8 --m=4096 --n=4096 --k=256 --sparsity=0.7 --bsn=64 --layout=bcrs"; do
    echo "rep$rep ptx=$lang $args :: $(run $lang $args)" >> $R/ab.txt
  done; done; done
date -u >> $R/gpu.txt
MAGICUBE_CACHE_DIR=/tmp/c55j CUDA_CACHE_PATH=/tmp/cc55 timeout 120 $B/magicube-bench --sections=jit --no-plots --out-dir=$R/jit > $R/jit.log 2>&1
date -u >> $R/gpu.txt
cd $OUT && tar czf s14k.tgz s14k && rm -rf s14k
