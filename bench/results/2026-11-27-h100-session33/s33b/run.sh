#!/bin/bash
# Session 33 run-b (f438ad9, generator 37): the shares GPU tests on the closed-form decode_segments,
# then the L4-R4 V=8 grid and the L8-R8 V=4/V=2 grid (the rest of the default llm grid), each
# packed as soon as it ends.
tar xJf .carry/pkg.tar.xz -C .carry
R=$OUT/s33b; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c33b
B=.carry/bin
$B/test_spmm_gpu --gtest_filter='*Shares*:*Decode*' > $R/test_spmm_gpu.txt 2>&1; echo "spmm rc=$?" >> $R/gpu.txt
$B/test_epilogue_gpu --gtest_filter='*Shares*:*DecodeFloat*' > $R/test_epilogue_gpu.txt 2>&1; echo "epi rc=$?" >> $R/gpu.txt
timeout 280 $B/magicube-bench --sections=llm --llm-grid=default --filter=L4-R4 --v=8 --no-plots --out-dir=$R/llm-l4r4 > $R/llm-l4r4.log 2>&1; echo "l4r4 rc=$? $(date -u +%T)" >> $R/gpu.txt
(cd $OUT && tar czf s33b-l4r4.tgz s33b/llm-l4r4 s33b/llm-l4r4.log s33b/test_*.txt)
timeout $((570 - SECONDS)) $B/magicube-bench --sections=llm --llm-grid=default --filter=L8-R8 --v=4,2 --no-plots --out-dir=$R/llm-l8r8-v42 > $R/llm-l8r8-v42.log 2>&1; echo "v42 rc=$? $(date -u +%T)" >> $R/gpu.txt
(cd $OUT && tar czf s33b-v42.tgz s33b/llm-l8r8-v42 s33b/llm-l8r8-v42.log s33b/gpu.txt && rm -rf s33b)
