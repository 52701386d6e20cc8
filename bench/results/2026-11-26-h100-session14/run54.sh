#!/bin/bash
# final (generator 24): every GPU check, pytest
R=$OUT/s14j; mkdir -p $R
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c54
B=.carry/bin
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
OUT=$R/gpu-check timeout 470 bash scripts/gpu_check.sh $B > $R/gpu_check.txt 2>&1; echo "gpu_check rc=$?" >> $R/gpu_check.txt
date -u >> $R/gpu.txt
MAGICUBE_LIBRARY=$PWD/.carry/lib/libmagicube.so.0 PYTHONPATH=python timeout 100 python3 -m pytest -q -rs python/tests > $R/pytest.txt 2>&1
date -u >> $R/gpu.txt
cd $OUT && tar czf s14j.tgz s14j && rm -rf s14j
