#!/bin/bash
# Session 32 run-c (6411282: one dense selection a process, paced; float outputs in shares):
# the L8-R8 V=8 grid, and the L4-R8 / L4-R4 grids' N=8192 rows.
tar xJf .carry/pkg.tar.xz -C .carry
R=$OUT/s32c; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c32c
B=.carry/bin/magicube-bench
timeout 300 $B --sections=llm --llm-grid=default --filter=L8-R8 --v=8 --no-plots --out-dir=$R/llm-l8r8 > $R/llm-l8r8.log 2>&1; echo "l8r8 rc=$? $(date -u +%T)" >> $R/gpu.txt
timeout 100 $B --sections=llm --llm-grid=default --filter=L4-R8 --v=8 --llm-n=8192 --no-plots --out-dir=$R/llm-l4r8-n8192 > $R/llm-l4r8.log 2>&1; echo "l4r8 rc=$? $(date -u +%T)" >> $R/gpu.txt
timeout 100 $B --sections=llm --llm-grid=default --filter=L4-R4 --v=8 --llm-n=8192 --no-plots --out-dir=$R/llm-l4r4-n8192 > $R/llm-l4r4.log 2>&1; echo "l4r4 rc=$? $(date -u +%T)" >> $R/gpu.txt
cat $R/gpu.txt; grep -E "^\| [0-9]+x[0-9]+ \| (2048|8192) \|" $R/llm-l8r8/summary.md | cut -c1-220; grep -E "never slower|bit-exact" $R/llm-l8r8/summary.md | head -4
cd $OUT && tar czf s32c.tgz s32c && rm -rf s32c
