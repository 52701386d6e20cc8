#!/bin/bash
# generator 23 (PTX kernels): the JIT section, the llm grid L8-R8
R=$OUT/s14d; mkdir -p $R
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c48
B=.carry/bin
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
CUDA_CACHE_PATH=/tmp/cc48 timeout 120 $B/magicube-bench --sections=jit --no-plots --out-dir=$R/jit > $R/jit.log 2>&1
echo "jit done $(date -u)" >> $R/gpu.txt
timeout 400 $B/magicube-bench --sections=llm --llm-grid=default --filter=L8-R8 --v=8 --out-dir=$R/llm-l8r8 > $R/llm.log 2>&1
echo "llm done $(date -u)" >> $R/gpu.txt
cd $OUT && tar czf s14d.tgz s14d && rm -rf s14d
