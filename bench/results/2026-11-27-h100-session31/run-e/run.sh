#!/bin/bash
# Session 31 run-e (generator 37, the build of run-d): the L4-R8 grid's N=8192 rows (run-d's cut
# off at 100 s).
tar xJf .carry/pkg.tar.xz -C .carry
R=$OUT/s31e; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c31e
B=.carry/bin/magicube-bench
timeout 170 $B --sections=llm --llm-grid=default --filter=L4-R8 --v=8 --llm-n=8192 --no-plots --out-dir=$R/llm-l4r8-n8192 > $R/llm-l4r8.log 2>&1; echo "l4r8 rc=$? $(date -u +%T)" >> $R/gpu.txt
cat $R/gpu.txt; grep -E "^\| [0-9]+x[0-9]+ \| 8192 \|" $R/llm-l4r8-n8192/summary.md | cut -c1-200; grep -E "never slower|bit-exact" $R/llm-l4r8-n8192/summary.md | head -3
cd $OUT && tar czf s31e.tgz s31e && rm -rf s31e
