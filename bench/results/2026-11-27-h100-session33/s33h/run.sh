#!/bin/bash
# Session 33 run-h (a9bf038): the L8-R8 V=8 grid with the bench's bytes fixed (16-bit indices, no
# row pointers for the decode kernel), so its summary's % of HBM is the kernel's own.
tar xJf .carry/pkg.tar.xz -C .carry
R=$OUT/s33h; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c33h
timeout 400 .carry/bin/magicube-bench --sections=llm --llm-grid=default --filter=L8-R8 --v=8 --no-plots --out-dir=$R/llm-l8r8 > $R/llm-l8r8.log 2>&1; echo "l8r8 rc=$? $(date -u +%T)" >> $R/gpu.txt
cat $R/gpu.txt; grep -E "^\| (LLM|every)" $R/llm-l8r8/summary.md | cut -c1-300
cd $OUT && tar czf s33h.tgz s33h && rm -rf s33h
