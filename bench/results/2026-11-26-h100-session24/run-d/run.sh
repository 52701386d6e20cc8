#!/bin/bash
# Session 24 run-d: SparseLinear's forward as one op (magicube::linear) against the two ops
# (quantize_rows, then spmm: pyprev), per call, alternating; pytest; the torch example.
R=$OUT/s24d; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/cd MAGICUBE_LIBRARY=$PWD/.carry/lib/libmagicube.so.0
PYTHONPATH=python timeout 200 python3 -m pytest -q -rs python/tests > $R/pytest.txt 2>&1; echo "pytest rc=$? $(date -u +%T) $(tail -1 $R/pytest.txt)" >> $R/gpu.txt
for rep in 1 2; do
  PYTHONPATH=.carry/pyprev timeout 120 python3 .carry/qab.py two-ops >> $R/qab.txt 2>&1
  PYTHONPATH=python timeout 120 python3 .carry/qab.py one-op >> $R/qab.txt 2>&1
done
echo "qab done $(date -u +%T)" >> $R/gpu.txt
PYTHONPATH=python timeout $((590 - SECONDS)) python3 examples/torch_sparse_linear.py --quick > $R/torch_example.txt 2>&1; echo "example rc=$? $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s24d.tgz s24d && rm -rf s24d
