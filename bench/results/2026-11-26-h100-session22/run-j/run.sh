#!/bin/bash
# Session 22 run-j: 4-bit B packed as bytes in the decode kernel: GPU tests, pytest, the L4-R4 grid, A/B spot checks in the log
R=$OUT/s22j; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c223
B=.carry/bin
t() { local name=$1; shift; timeout 200 "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(date -u +%T) $(grep -E '^\[  (PASSED|FAILED)' $R/$name.txt | tr '\n' ' ')" >> $R/gpu.txt; }
t spmm $B/test_spmm_gpu --gtest_filter='SpmmGpu.Decode*:SpmmGpu.ColumnMajorC*'
t epilogue $B/test_epilogue_gpu
t capi $B/test_capi_gpu
for n in 16 2048; do for l in s4 s8; do timeout 60 $B/magicube run --lhs=$l --rhs=s4 -v=8 --flush-l2 --repeat=20 -m=4096 -k=4096 -n=$n --sparsity=0.9 2>&1 | grep -E "^plan|^time|exact" | tr '\n' ' ' >> $R/runs.txt; echo >> $R/runs.txt; done; done
timeout $((580 - SECONDS)) $B/magicube-bench --sections=llm --llm-grid=default --filter=L4-R4 --v=8 --no-plots --out-dir=$R/llm-l4r4 > $R/llm-l4r4.log 2>&1; echo "l4r4 rc=$? $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s22j.tgz s22j && rm -rf s22j
