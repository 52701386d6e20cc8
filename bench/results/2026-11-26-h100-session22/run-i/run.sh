#!/bin/bash
# Session 22 run-i: generator 30 (flat row-major int epilogue, panel depth 8): L4-R8, L4-R4 and L8-R8 V=4/2 grids
R=$OUT/s22i; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c222
B=.carry/bin
g() { local tag=$1 lim=$2; shift 2; timeout $lim $B/magicube-bench --sections=llm --llm-grid=default --no-plots --out-dir=$R/llm-$tag "$@" > $R/llm-$tag.log 2>&1; echo "$tag rc=$? $(date -u +%T)" >> $R/gpu.txt; }
g l4r8 240 --filter=L4-R8 --v=8
g l4r4 230 --filter=L4-R4 --v=8
if [ $SECONDS -lt 530 ]; then g l8r8-v42 $((585 - SECONDS)) --filter=L8-R8 --v=4,2; fi
cd $OUT && tar czf s22i.tgz s22i && rm -rf s22i
