#!/bin/bash
# Session 33 run-i (b8b399d): the bench's llm section at N = 16384 (--llm-grid=full), one shape, L8-R8 V=8.
tar xJf .carry/pkg.tar.xz -C .carry
R=$OUT/s33i; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c33i
timeout 200 .carry/bin/magicube-bench --sections=llm --llm-grid=full --llm-n=16384 --llm-shapes=4096x4096 --filter=L8-R8 --v=8 --no-plots --out-dir=$R/llm > $R/llm.log 2>&1; echo "rc=$? $(date -u +%T)" >> $R/gpu.txt
cat $R/gpu.txt; grep -E "^\| (LLM|every)|^- (never|bit)|^\| 4096x4096 \| 16384" $R/llm/summary.md | cut -c1-260; tail -3 $R/llm.log
cd $OUT && tar czf s33i.tgz s33i && rm -rf s33i
