#!/bin/bash
# SparseLinear's dense route through the fused epilogue: pytest (torch included), the torch example
R=$OUT/s17e; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c73
(MAGICUBE_LIBRARY=$PWD/.carry/lib/libmagicube.so.0 PYTHONPATH=python timeout 200 python3 -m pytest -q -rs python/tests 2>&1 | tail -15) > $R/pytest.txt
(MAGICUBE_LIBRARY=$PWD/.carry/lib/libmagicube.so.0 PYTHONPATH=python timeout 200 python3 examples/torch_sparse_linear.py 2>&1 | tail -30) > $R/example.txt
date -u >> $R/gpu.txt
cd $OUT && tar czf s17e.tgz s17e && rm -rf s17e
