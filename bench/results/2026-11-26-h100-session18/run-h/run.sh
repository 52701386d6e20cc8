#!/bin/bash
# Session 18, the final commit: every GPU test binary, pytest, and the torch example with allow_dense
R=$OUT/s18h; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; git log --oneline -1 2>/dev/null; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c88
B=.carry/bin
for t in test_dense_route_gpu test_capi_gpu test_epilogue_gpu test_sddmm_gpu test_spmm_gpu; do
  timeout 300 $B/$t > $R/$t.txt 2>&1; echo "$t rc=$? $(date -u +%T)" >> $R/gpu.txt; done
timeout 200 $B/test_api --gtest_filter='ApiGpu.*' > $R/test_api.txt 2>&1; echo "test_api rc=$? $(date -u +%T)" >> $R/gpu.txt
(MAGICUBE_LIBRARY=$PWD/.carry/lib/libmagicube.so.0 PYTHONPATH=python timeout 200 python3 -m pytest -q -rs python/tests 2>&1 | tail -4) > $R/pytest.txt
MAGICUBE_LIBRARY=$PWD/.carry/lib/libmagicube.so.0 PYTHONPATH=python timeout 200 python3 examples/torch_sparse_linear.py --quick > $R/torch_example.txt 2>&1; echo "example rc=$? $(date -u +%T)" >> $R/gpu.txt
date -u >> $R/gpu.txt
cd $OUT && tar czf s18h.tgz s18h && rm -rf s18h
