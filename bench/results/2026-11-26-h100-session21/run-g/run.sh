#!/bin/bash
# Session 21 run-g: the final tidy (float C check in one helper; the bench's layout flag reset): test_epilogue_gpu, the quick llm grid
R=$OUT/s21g; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c207
B=.carry/bin
timeout 120 $B/test_epilogue_gpu > $R/epilogue.txt 2>&1; echo "epilogue rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/epilogue.txt | tr '\n' ' ')" >> $R/gpu.txt
timeout 200 $B/magicube-bench --sections=llm --llm-grid=quick --no-plots --out-dir=$R/llm-quick > $R/llm-quick.log 2>&1; echo "quick rc=$? $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s21g.tgz s21g && rm -rf s21g
