#!/bin/bash
# Session 25 run-m: the quantization's row kept in shared memory (staged, new) against the unit
# kernel (mid, run-l's new) and the element kernel (old), alternating; test_capi_gpu; pytest.
R=$OUT/s25m; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
MAGICUBE_CACHE_DIR=/tmp/t timeout 100 .carry/bin/test_capi_gpu > $R/capi.txt 2>&1; echo "capi rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/capi.txt | tr '\n' ' ')" >> $R/gpu.txt
for rep in 1 2; do for v in old mid new; do
  lib=$PWD/.carry/lib/libmagicube.so.0; [ $v = old ] && lib=$PWD/.carry/oldlib/libmagicube.so.0; [ $v = mid ] && lib=$PWD/.carry/midlib/libmagicube.so.0
  MAGICUBE_CACHE_DIR=/tmp/q$v MAGICUBE_LIBRARY=$lib PYTHONPATH=python timeout 100 python3 .carry/qgpu.py $v >> $R/qgpu.txt 2>&1
done; done
echo "timing done $(date -u +%T)" >> $R/gpu.txt
MAGICUBE_CACHE_DIR=/tmp/t MAGICUBE_LIBRARY=$PWD/.carry/lib/libmagicube.so.0 PYTHONPATH=python timeout 150 python3 -m pytest -q -rs python/tests > $R/pytest.txt 2>&1; echo "pytest rc=$? $(tail -1 $R/pytest.txt)" >> $R/gpu.txt
echo "done $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s25m.tgz s25m && rm -rf s25m
