#!/bin/bash
# The dense route's float / int64 outputs: GPU tests, memcheck, pytest, A/B timings
R=$OUT/s17a; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c69
B=.carry/bin
for t in test_dense_route_gpu test_capi_gpu test_epilogue_gpu; do timeout 200 $B/$t > $R/$t.txt 2>&1; echo "$t rc=$?" >> $R/gpu.txt; done
timeout 200 $B/test_api --gtest_filter='ApiGpu.*' > $R/test_api.txt 2>&1; echo "test_api rc=$?" >> $R/gpu.txt
timeout 200 compute-sanitizer --tool memcheck $B/test_api --gtest_filter='ApiGpu.DenseRouteFloatAndInt64Outputs' > $R/memcheck_api.txt 2>&1; echo "memcheck api rc=$?" >> $R/gpu.txt
timeout 200 compute-sanitizer --tool memcheck $B/test_capi_gpu --gtest_filter='CApiGpu.DenseRouteFloat*' > $R/memcheck_capi.txt 2>&1; echo "memcheck capi rc=$?" >> $R/gpu.txt
(MAGICUBE_LIBRARY=$PWD/.carry/lib/libmagicube.so.0 PYTHONPATH=python timeout 100 python3 -m pytest -q -rs python/tests 2>&1 | tail -8) > $R/pytest.txt
date -u >> $R/gpu.txt
# A/B: bf16 with row/col scales and a row bias, dense route vs sparse kernel vs the dense int32 GEMM alone, and what auto picks
for shape in "4096 4096" "11008 4096" "4096 11008"; do set -- $shape
 for n in 512 2048 8192; do for s in 0.5 0.7; do
  for cfg in "int32 none none dense" "bf16 rowcol row dense" "bf16 rowcol row sparse" "bf16 rowcol row auto"; do set -- $shape $cfg
   echo "== $1x$2 n=$n s=$s out=$3 scale=$4 bias=$5 route=$6"
   timeout 120 $B/magicube run --lhs=s8 --rhs=s8 --m=$1 --k=$2 --sparsity=$s --n=$n --out=$3 --scale=$4 --bias=$5 --route=$6 --flush-l2 --repeat=20 2>&1 | grep -E "^(route|exact|time|error)|rror"
  done; done; done; done > $R/ab.txt 2>&1
date -u >> $R/gpu.txt
cd $OUT && tar czf s17a.tgz s17a && rm -rf s17a
