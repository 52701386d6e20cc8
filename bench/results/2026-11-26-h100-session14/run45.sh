#!/bin/bash
# PTX kernels (generator 23): GPU tests, the JIT section, PTX against CUDA (MAGICUBE_PTX=0) on the ring and SDDMM kernels
R=$OUT/s14a; mkdir -p $R
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
B=.carry/bin
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export MAGICUBE_CACHE_DIR=/tmp/c45
for t in test_cuda_driver test_spmm_gpu test_sddmm_gpu test_capi_gpu; do
  timeout 150 $B/$t > $R/$t.log 2>&1; echo "$t rc=$? $(grep -E 'PASSED|FAILED' $R/$t.log | tr '\n' ' ')" >> $R/tests.txt
done
date -u >> $R/gpu.txt
CUDA_CACHE_PATH=$(mktemp -d) timeout 120 $B/magicube-bench --sections=jit --no-plots --out-dir=$R/jit > $R/jit.log 2>&1
date -u >> $R/gpu.txt
run() { # lang args...
  local lang=$1; shift
  MAGICUBE_PTX=$lang MAGICUBE_CACHE_DIR=/tmp/ab$lang timeout 60 $B/magicube run "$@" --repeat=30 2>&1 | grep -E 'median|exact|plan |kernel' | tr '\n' ' '
  echo
}
for rep in 1 2; do
  for lang in 1 0; do
    for args in "--op=spmm --lhs=s8 --rhs=s8 -v=8 --m=4096 --k=4096 --n=256 --sparsity=0.9 --bsn=128 --route=sparse" \
                "--op=spmm --lhs=s8 --rhs=s8 -v=8 --m=4096 --k=4096 --n=512 --sparsity=0.7 --bsn=128 --route=sparse" \
                "--op=spmm --lhs=s4 --rhs=s4 -v=8 --m=4096 --k=4096 --n=512 --sparsity=0.9 --bsn=128 --route=sparse" \
                "--op=spmm --lhs=s8 --rhs=u4 -v=8 --m=4096 --k=4096 --n=256 --sparsity=0.9 --bsn=64 --route=sparse" \
                "--op=sddmm --lhs=s8 --rhs=s8 -v=8 --m=4096 --n=4096 --k=256 --sparsity=0.9 --bsn=128" \
                "--op=sddmm --lhs=s4 --rhs=s4 -v=8 --m=4096 --n=4096 --k=512 --sparsity=0.9 --bsn=128" \
                "--op=sddmm --lhs=s8 --rhs=s8 -v=8 --m=4096 --n=4096 --k=256 --sparsity=0.7 --bsn=64 --layout=bcrs"; do
      echo "rep$rep ptx=$lang $args :: $(run $lang $args)" >> $R/ab.txt
    done
  done
done
date -u >> $R/gpu.txt
cd $OUT && tar czf s14a.tgz s14a && rm -rf s14a
