#!/bin/bash
# Generator 28 (f16/bf16 through round-to-odd floats): GPU tests of every float path, A/B timings
R=$OUT/s17b; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c70
B=.carry/bin
for t in test_epilogue_gpu test_dense_route_gpu test_capi_gpu test_sddmm_gpu; do timeout 240 $B/$t > $R/$t.txt 2>&1; echo "$t rc=$? $(date -u +%T)" >> $R/gpu.txt; done
timeout 200 $B/test_api --gtest_filter='ApiGpu.*' > $R/test_api.txt 2>&1; echo "test_api rc=$? $(date -u +%T)" >> $R/gpu.txt
timeout 300 $B/test_spmm_gpu > $R/test_spmm_gpu.txt 2>&1; echo "test_spmm_gpu rc=$? $(date -u +%T)" >> $R/gpu.txt
(MAGICUBE_LIBRARY=$PWD/.carry/lib/libmagicube.so.0 PYTHONPATH=python timeout 100 python3 -m pytest -q -rs python/tests 2>&1 | tail -4) > $R/pytest.txt
for shape in "4096 4096" "11008 4096"; do set -- $shape
 for n in 512 2048 8192; do s=0.5
  for cfg in "int32 none none dense" "int32 none none sparse" "bf16 rowcol row dense" "bf16 rowcol row sparse" "f16 tensor col dense" "f32 rowcol none dense" "int64 none none dense" "bf16 rowcol row auto"; do set -- $shape $cfg
   echo "== $1x$2 n=$n s=$s out=$3 scale=$4 bias=$5 route=$6"
   timeout 120 $B/magicube run --lhs=s8 --rhs=s8 --m=$1 --k=$2 --sparsity=$s --n=$n --out=$3 --scale=$4 --bias=$5 --route=$6 --flush-l2 --repeat=20 2>&1 | grep -E "^(route|exact|time)|rror"
  done; done; done > $R/ab.txt 2>&1
date -u >> $R/gpu.txt
cd $OUT && tar czf s17b.tgz s17b && rm -rf s17b
