#!/bin/bash
# Session 30 run-d (generator 35: 4096x14336 at N <= 16 in two K panels, a cluster of two blocks):
# the L8-R8 V=8 grid, the L4-R8 grid's 4096x14336 rows, the chain at N=16 on 4096x14336.
R=$OUT/s30d; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 MAGICUBE_CACHE_DIR=/tmp/c30d
B=.carry/magicube-bench
timeout 300 $B --sections=llm --llm-grid=default --filter=L8-R8 --v=8 --no-plots --out-dir=$R/llm-l8r8 > $R/llm-l8r8.log 2>&1; echo "l8r8 rc=$? $(date -u +%T)" >> $R/gpu.txt
timeout 100 $B --sections=llm --llm-grid=default --filter=L4-R8 --v=8 --llm-shapes=4096x14336 --no-plots --out-dir=$R/llm-l4r8-4096x14336 > $R/llm-l4r8.log 2>&1; echo "l4r8 rc=$? $(date -u +%T)" >> $R/gpu.txt
timeout $((570 - SECONDS)) $B --sections=chain --filter=L8-R8 --v=8 --llm-n=16 --llm-shapes=4096x14336,14336x4096 --no-plots --out-dir=$R/chain-l8r8 > $R/chain.log 2>&1; echo "chain rc=$? $(date -u +%T)" >> $R/gpu.txt
cat $R/gpu.txt; grep -E "^\| (4096x14336) \| (1|2|4|8|16) \|" $R/llm-l8r8/summary.md | cut -c1-200; grep -E "never slower|bit-exact" $R/llm-l8r8/summary.md | head -4
cd $OUT && tar czf s30d.tgz s30d && rm -rf s30d
