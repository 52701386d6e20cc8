#!/bin/bash
# final (generator 26): every GPU check, pytest, the JIT section
R=$OUT/s14l; mkdir -p $R
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c56
B=.carry/bin
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
OUT=$R/gpu-check timeout 420 bash scripts/gpu_check.sh $B > $R/gpu_check.txt 2>&1; echo "gpu_check rc=$?" >> $R/gpu_check.txt
date -u >> $R/gpu.txt
MAGICUBE_LIBRARY=$PWD/.carry/lib/libmagicube.so.0 PYTHONPATH=python timeout 80 python3 -m pytest -q -rs python/tests > $R/pytest.txt 2>&1
date -u >> $R/gpu.txt
MAGICUBE_CACHE_DIR=/tmp/c56j CUDA_CACHE_PATH=/tmp/cc56 timeout 60 $B/magicube-bench --sections=jit --no-plots --out-dir=$R/jit > $R/jit.log 2>&1
date -u >> $R/gpu.txt
cd $OUT && tar czf s14l.tgz s14l && rm -rf s14l
