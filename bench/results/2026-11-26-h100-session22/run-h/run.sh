#!/bin/bash
# Session 22 run-h: the flat row-major int epilogue, panel depth 8 (generator 30): GPU tests, pytest, quick grid, L8-R8 V=8 grid
R=$OUT/s22h; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c221
B=.carry/bin
t() { local name=$1; shift; timeout 280 "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(date -u +%T) $(grep -E '^\[  (PASSED|FAILED)' $R/$name.txt | tr '\n' ' ')" >> $R/gpu.txt; }
t spmm $B/test_spmm_gpu
t epilogue $B/test_epilogue_gpu
t capi $B/test_capi_gpu
t api $B/test_api --gtest_filter='ApiGpu*'
export MAGICUBE_LIBRARY=$PWD/.carry/lib/libmagicube.so.0
PYTHONPATH=python timeout 150 python3 -m pytest -q -rs python/tests > $R/pytest.txt 2>&1; echo "pytest rc=$? $(tail -1 $R/pytest.txt)" >> $R/gpu.txt
if [ $SECONDS -lt 330 ]; then timeout $((580 - SECONDS)) $B/magicube-bench --sections=llm --llm-grid=default --filter=L8-R8 --v=8 --no-plots --out-dir=$R/llm-l8r8 > $R/llm-l8r8.log 2>&1; echo "l8r8 rc=$? $(date -u +%T)" >> $R/gpu.txt; else echo "l8r8 skipped at $SECONDS s" >> $R/gpu.txt; fi
cd $OUT && tar czf s22h.tgz s22h && rm -rf s22h
