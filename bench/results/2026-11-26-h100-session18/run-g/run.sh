#!/bin/bash
# Session 18: the dense route with chunk offsets (u8 one GEMM): GPU tests, memcheck, u8 x s8 A/B and auto, wider types
R=$OUT/s18g; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c87
B=.carry/bin
timeout 240 $B/test_dense_route_gpu > $R/test_dense_route_gpu.txt 2>&1; echo "test_dense_route_gpu rc=$? $(date -u +%T)" >> $R/gpu.txt
timeout 240 $B/test_capi_gpu > $R/test_capi_gpu.txt 2>&1; echo "test_capi_gpu rc=$? $(date -u +%T)" >> $R/gpu.txt
timeout 200 $B/test_api --gtest_filter='ApiGpu.*' > $R/test_api.txt 2>&1; echo "test_api rc=$? $(date -u +%T)" >> $R/gpu.txt
timeout 200 compute-sanitizer --tool memcheck $B/test_dense_route_gpu --gtest_filter='*BitExactForEveryPrecision' > $R/memcheck.txt 2>&1; echo "memcheck rc=$? $(date -u +%T)" >> $R/gpu.txt
(MAGICUBE_LIBRARY=$PWD/.carry/lib/libmagicube.so.0 PYTHONPATH=python timeout 200 python3 -m pytest -q -rs python/tests 2>&1 | tail -4) > $R/pytest.txt
run() { echo "== $*"; timeout 100 $B/magicube run "$@" --flush-l2 --repeat=20 2>&1 | grep -E "^(plan|route|exact|time)|rror"; }
{
for shape in "4096 4096 16 512 2048 8192" "11008 4096 512 2048"; do
 set -- $shape; m=$1; k=$2; shift 2; ns="$*"
 for n in $ns; do for s in 0.5 0.7; do
  for cfg in "u8 int32 none none sparse" "u8 int32 none none dense" "u8 int32 none none auto" \
             "u8 bf16 rowcol row sparse" "u8 bf16 rowcol row dense" "u8 bf16 rowcol row auto"; do set -- $cfg
   [ $SECONDS -gt 480 ] && break
   run --lhs=$1 --rhs=s8 --m=$m --k=$k --sparsity=$s --n=$n --out=$2 --scale=$3 --bias=$4 --route=$5
  done; done; done; done
for t in "s12 s8 int32" "u8 u8 int32" "s16 s8 int64" "s8 u8 bf16"; do set -- $t
 for r in sparse dense auto; do [ $SECONDS -gt 540 ] && break; run --lhs=$1 --rhs=$2 --out=$3 --m=4096 --k=4096 --sparsity=0.5 --n=2048 --route=$r; done; done
} > $R/ab.txt 2>&1
date -u >> $R/gpu.txt
cd $OUT && tar czf s18g.tgz s18g && rm -rf s18g
