#!/bin/bash
# The dense epilogue storing four outputs a thread: GPU tests, A/B timings (every output, dense and sparse)
R=$OUT/s17c; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c71
B=.carry/bin
for t in test_dense_route_gpu test_capi_gpu test_epilogue_gpu; do timeout 240 $B/$t > $R/$t.txt 2>&1; echo "$t rc=$? $(date -u +%T)" >> $R/gpu.txt; done
timeout 200 $B/test_api --gtest_filter='ApiGpu.*' > $R/test_api.txt 2>&1; echo "test_api rc=$? $(date -u +%T)" >> $R/gpu.txt
timeout 200 compute-sanitizer --tool memcheck $B/test_capi_gpu --gtest_filter='CApiGpu.DenseRoute*' > $R/memcheck_capi.txt 2>&1; echo "memcheck capi rc=$? $(date -u +%T)" >> $R/gpu.txt
for shape in "4096 4096" "11008 4096" "4096 11008"; do set -- $shape
 for n in 512 2048 8192; do s=0.5
  for cfg in "int32 none none dense" "int32 none none sparse" "bf16 rowcol row dense" "bf16 rowcol row sparse" "f16 tensor col dense" "f32 rowcol none dense" "int64 none none dense" "bf16 rowcol row auto"; do set -- $shape $cfg
   echo "== $1x$2 n=$n s=$s out=$3 scale=$4 bias=$5 route=$6"
   timeout 120 $B/magicube run --lhs=s8 --rhs=s8 --m=$1 --k=$2 --sparsity=$s --n=$n --out=$3 --scale=$4 --bias=$5 --route=$6 --flush-l2 --repeat=20 2>&1 | grep -E "^(route|exact|time)|rror"
  done; done; done > $R/ab.txt 2>&1
date -u >> $R/gpu.txt
cd $OUT && tar czf s17c.tgz s17c && rm -rf s17c
