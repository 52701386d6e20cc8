#!/bin/bash
# Session 35 s35h: sanitize_gpu.sh's dec-shares case at N=4096 (86 slices: the shares grid for
# certain), all four tools, and its grid size under ncu.
R=$OUT/s35h; mkdir -p $R
tar xJf .carry/pkg.tar.xz -C .carry
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
MAGICUBE_CACHE_DIR=/tmp/c35h timeout 120 ncu --metrics launch__grid_size -k regex:magicube_spmm --launch-count 1 .carry/bin/magicube run --lhs=s8 --rhs=s8 --v=8 --shares --warps=20 --m=1024 --k=4096 --sparsity=0.9 --n=4096 --repeat=1 --warmup=0 2>&1 | grep -E 'launch__grid_size|^kernel' > $R/grid.txt
OUT=$R CASES="dec-shares" RUN_TIMEOUT=200 MAGICUBE_CACHE_DIR=/tmp/c35h bash .carry/x/sanitize_gpu.sh .carry/bin > $R/summary.txt 2>&1
echo "rc=$? done $(date -u +%T)" >> $R/gpu.txt
cat $R/grid.txt $R/summary.txt
cd $OUT && tar czf s35h.tgz s35h && rm -rf s35h
