#!/bin/bash
# Session 24 run-b: magicube_quantize_rows (one kernel per call) and the torch layer on it:
# GPU tests, pytest, HEAD's python (pyhead) against the new one per call, the torch example.
R=$OUT/s24b; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/cb MAGICUBE_LIBRARY=$PWD/.carry/lib/libmagicube.so.0
B=.carry/bin
t() { n=$1; shift; timeout $1 $B/$n "${@:2}" > $R/$n.txt 2>&1; echo "$n rc=$? $(date -u +%T) $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' $R/$n.txt | tr '\n' ' ')" >> $R/gpu.txt; }
t test_quantize 60
t test_capi_gpu 120
PYTHONPATH=python timeout 200 python3 -m pytest -q -rs python/tests > $R/pytest.txt 2>&1; echo "pytest rc=$? $(date -u +%T) $(tail -1 $R/pytest.txt)" >> $R/gpu.txt
for rep in 1 2; do
  PYTHONPATH=.carry/pyhead timeout 120 python3 .carry/qab.py head >> $R/qab.txt 2>&1
  PYTHONPATH=python timeout 120 python3 .carry/qab.py new >> $R/qab.txt 2>&1
done
echo "qab done $(date -u +%T)" >> $R/gpu.txt
PYTHONPATH=python timeout $((590 - SECONDS)) python3 examples/torch_sparse_linear.py --quick > $R/torch_example.txt 2>&1; echo "example rc=$? $(date -u +%T)" >> $R/gpu.txt
cp .carry/qab.py $R/
cd $OUT && tar czf s24b.tgz s24b && rm -rf s24b
