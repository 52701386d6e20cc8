#!/bin/bash
# Session 18, after the review tidy (e6e35da): dense-route and C ABI GPU tests, pytest, memcheck, u8/s16 runs
R=$OUT/s18n; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c94
B=.carry/bin
for t in test_dense_route_gpu test_capi_gpu; do
  timeout 300 $B/$t > $R/$t.txt 2>&1; echo "$t rc=$? $(date -u +%T)" >> $R/gpu.txt; done
timeout 200 $B/test_api --gtest_filter='ApiGpu.*' > $R/test_api.txt 2>&1; echo "test_api rc=$? $(date -u +%T)" >> $R/gpu.txt
timeout 200 compute-sanitizer --tool memcheck $B/test_capi_gpu --gtest_filter='*DenseRouteHostOperandsEveryLayout' > $R/memcheck_capi.txt 2>&1; echo "memcheck rc=$? $(date -u +%T)" >> $R/gpu.txt
(MAGICUBE_LIBRARY=$PWD/.carry/lib/libmagicube.so.0 PYTHONPATH=python timeout 200 python3 -m pytest -q -rs python/tests 2>&1 | tail -4) > $R/pytest.txt
for t in "u8 s8 int32 none none" "u8 u8 bf16 rowcol row" "s16 s8 int64 none none"; do set -- $t
  for r in dense auto; do
    echo "== --lhs=$1 --rhs=$2 --out=$3 --route=$r"
    timeout 100 $B/magicube run --lhs=$1 --rhs=$2 --out=$3 --scale=$4 --bias=$5 --m=4096 --k=4096 --sparsity=0.5 --n=2048 --route=$r --flush-l2 --repeat=20 2>&1 | grep -E "^(plan|route|kernel|exact|time)|rror"
  done; done > $R/runs.txt 2>&1
date -u >> $R/gpu.txt
cd $OUT && tar czf s18n.tgz s18n && rm -rf s18n
