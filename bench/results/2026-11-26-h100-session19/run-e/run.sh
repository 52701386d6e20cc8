#!/bin/bash
# Session 19 run-e, the final build: GPU tests, pytest, the SM clock under sustained dense load, the llm grid
R=$OUT/s19e; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c99
B=.carry/bin
for t in test_bench_timing_gpu test_dense_route_gpu test_capi_gpu; do
  timeout 120 $B/$t > $R/$t.txt 2>&1; echo "$t rc=$? $(date -u +%T)" >> $R/gpu.txt; done
timeout 120 $B/test_api --gtest_filter='ApiGpu.*' > $R/test_api.txt 2>&1; echo "test_api rc=$? $(date -u +%T)" >> $R/gpu.txt
(MAGICUBE_LIBRARY=$PWD/.carry/lib/libmagicube.so.0 PYTHONPATH=python timeout 150 python3 -m pytest -q -rs python/tests 2>&1 | tail -4) > $R/pytest.txt; echo "pytest $(tail -1 $R/pytest.txt) $(date -u +%T)" >> $R/gpu.txt
# The SM clock and power every 20 ms while one dense GEMM (6144x4096 N=8192) runs 1000 times back to back
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv -lms 20 > $R/clock_trace.csv 2>&1 &
SMI=$!; sleep 1
timeout 60 $B/magicube run --m=6144 --k=4096 --n=8192 --sparsity=0.5 --route=dense --flush-l2 --repeat=1000 --warmup=0 > $R/sustained_run.txt 2>&1
sleep 1; kill $SMI
timeout 60 $B/magicube run --m=6144 --k=4096 --n=8192 --sparsity=0.5 --route=dense --flush-l2 --repeat=20 > $R/short_run.txt 2>&1
echo "clock trace done $(date -u +%T)" >> $R/gpu.txt
timeout 420 $B/magicube-bench --sections=llm --llm-grid=default --filter=L8-R8 --v=8 --no-plots --out-dir=$R/llm-l8r8 > $R/llm.log 2>&1; echo "llm grid rc=$? $(date -u +%T)" >> $R/gpu.txt
date -u >> $R/gpu.txt
cd $OUT && tar czf s19e.tgz s19e && rm -rf s19e
