#!/bin/bash
# final: the JIT section; PTX against CUDA on more SDDMM / SpMM problems with the L2 flushed
R=$OUT/s14g; mkdir -p $R
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
B=.carry/bin
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
MAGICUBE_CACHE_DIR=/tmp/c51 CUDA_CACHE_PATH=/tmp/cc51 timeout 120 $B/magicube-bench --sections=jit --no-plots --out-dir=$R/jit > $R/jit.log 2>&1
date -u >> $R/gpu.txt
run() { local lang=$1; shift
  MAGICUBE_PTX=$lang MAGICUBE_CACHE_DIR=/tmp/ab51_$lang timeout 90 $B/magicube run "$@" --flush-l2 --repeat=30 2>&1 | grep -E 'median|exact|^plan' | tr '\n' ' '; echo; }
for rep in 1 2; do for lang in 1 0; do
  for args in "--op=sddmm --lhs=s4 --rhs=s4 -v=8 --m=4096 --n=4096 --k=256 --sparsity=0.9 --bsn=128" \
              "--op=sddmm --lhs=s4 --rhs=s4 -v=8 --m=4096 --n=4096 --k=1024 --sparsity=0.7 --bsn=128" \
              "--op=sddmm --lhs=s8 --rhs=s8 -v=8 --m=4096 --n=4096 --k=512 --sparsity=0.7 --bsn=128" \
              "--op=sddmm --lhs=s8 --rhs=u4 -v=8 --m=2048 --n=2048 --k=1024 --sparsity=0.9 --bsn=64" \
              "--op=spmm --lhs=s8 --rhs=s8 -v=8 --m=4096 --k=4096 --n=1024 --sparsity=0.95 --bsn=128 --route=sparse" \
              "--op=spmm --lhs=u4 --rhs=u4 -v=8 --m=4096 --k=4096 --n=512 --sparsity=0.7 --bsn=128 --route=sparse"; do
    echo "rep$rep ptx=$lang $args :: $(run $lang $args)" >> $R/ab.txt
  done; done; done
date -u >> $R/gpu.txt
cd $OUT && tar czf s14g.tgz s14g && rm -rf s14g
