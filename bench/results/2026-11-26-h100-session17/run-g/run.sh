#!/bin/bash
# Final build: the C ABI / C++ API / pipeline GPU tests, tune with a bf16 output (times the dense route too), then run with its record
R=$OUT/s17g; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c75
B=.carry/bin
for t in test_capi_gpu test_dense_route_gpu test_epilogue_gpu; do timeout 240 $B/$t > $R/$t.txt 2>&1; echo "$t rc=$? $(date -u +%T)" >> $R/gpu.txt; done
timeout 200 $B/test_api --gtest_filter='ApiGpu.*' > $R/test_api.txt 2>&1; echo "test_api rc=$? $(date -u +%T)" >> $R/gpu.txt
(MAGICUBE_LIBRARY=$PWD/.carry/lib/libmagicube.so.0 PYTHONPATH=python timeout 200 python3 -m pytest -q -rs python/tests 2>&1 | tail -4) > $R/pytest.txt
echo "pytest done $(date -u +%T)" >> $R/gpu.txt
{ timeout 200 $B/magicube tune --lhs=s8 --rhs=s8 --m=4096 --k=4096 --sparsity=0.5 --n=2048 --out=bf16 --scale=rowcol --bias=row --flush-l2 --repeat=10 --verify 2>&1 | tail -25
  echo "== run after tune"
  timeout 100 $B/magicube run --lhs=s8 --rhs=s8 --m=4096 --k=4096 --sparsity=0.5 --n=2048 --out=bf16 --scale=rowcol --bias=row --flush-l2 --repeat=20 2>&1 | grep -E "^(plan|route|chosen|exact|time)|rror"; } > $R/tune.txt 2>&1
date -u >> $R/gpu.txt
cd $OUT && tar czf s17g.tgz s17g && rm -rf s17g
