#!/bin/bash
# Session 21 run-e: the final build (14899d2): GPU tests, pytest, the torch op with +ccol, the L8-R8 and L4-R8 grids
R=$OUT/s21e; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c205
B=.carry/bin
t() { local name=$1; shift; timeout 150 "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(date -u +%T) $(grep -E '^\[  (PASSED|FAILED)' $R/$name.txt | tr '\n' ' ')" >> $R/gpu.txt; }
t capi $B/test_capi_gpu
t dense_route $B/test_dense_route_gpu
t api $B/test_api --gtest_filter='ApiGpu*'
export MAGICUBE_LIBRARY=$PWD/.carry/lib/libmagicube.so.0
PYTHONPATH=python timeout 150 python3 -m pytest -q -rs python/tests > $R/pytest.txt 2>&1; echo "pytest rc=$? $(tail -1 $R/pytest.txt)" >> $R/gpu.txt
timeout 90 python3 .carry/ccol_probe.py > $R/ccol_probe.txt 2>&1; echo "probe rc=$? $(date -u +%T)" >> $R/gpu.txt
timeout 250 $B/magicube-bench --sections=llm --llm-grid=default --filter=L8-R8 --v=8 --no-plots --out-dir=$R/llm-l8r8 > $R/llm-l8r8.log 2>&1; echo "l8r8 rc=$? $(date -u +%T)" >> $R/gpu.txt
if [ $SECONDS -lt 340 ]; then timeout $((575 - SECONDS)) $B/magicube-bench --sections=llm --llm-grid=default --filter=L4-R8 --v=8 --no-plots --out-dir=$R/llm-l4r8 > $R/llm-l4r8.log 2>&1; echo "l4r8 rc=$? $(date -u +%T)" >> $R/gpu.txt; else echo "l4r8 skipped at $SECONDS s" >> $R/gpu.txt; fi
cd $OUT && tar czf s21e.tgz s21e && rm -rf s21e
