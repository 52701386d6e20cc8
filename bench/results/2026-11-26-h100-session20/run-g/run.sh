#!/bin/bash
# Session 20 run-g: GPU tests on the final build (d73f533)
R=$OUT/s20g; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c107
B=.carry/bin
for t in test_spmm_gpu test_dense_route_gpu test_capi_gpu test_bench_timing_gpu; do
  timeout 240 $B/$t > $R/$t.txt 2>&1; echo "$t rc=$? $(tail -1 $R/$t.txt) $(date -u +%T)" >> $R/gpu.txt; done
timeout 120 $B/test_api --gtest_filter='ApiGpu.*' > $R/test_api.txt 2>&1; echo "test_api ApiGpu rc=$? $(tail -1 $R/test_api.txt) $(date -u +%T)" >> $R/gpu.txt
(MAGICUBE_LIBRARY=$PWD/.carry/lib/libmagicube.so.0 PYTHONPATH=python timeout 150 python3 -m pytest -q -rs python/tests 2>&1 | tail -4) > $R/pytest.txt; echo "pytest $(tail -1 $R/pytest.txt) $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s20g.tgz s20g && rm -rf s20g
