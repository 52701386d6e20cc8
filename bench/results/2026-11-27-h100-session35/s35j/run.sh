#!/bin/bash
# Session 35 s35j: pytest on the H100 with the session's library (the C ABI's enum reads, the dense-scratch poison).
R=$OUT/s35j; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
tar xJf .carry/pkg.tar.xz -C .carry
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
export MAGICUBE_CLI_PATH=$PWD/.carry/bin/magicube MAGICUBE_CLI=$PWD/.carry/bin/magicube
MAGICUBE_CACHE_DIR=/tmp/t35j MAGICUBE_LIBRARY=$PWD/.carry/lib/libmagicube.so.0 PYTHONPATH=python timeout 300 python3 -m pytest -q -rs python/tests > $R/pytest.txt 2>&1
echo "pytest rc=$? $(tail -1 $R/pytest.txt) $(date -u +%T)" >> $R/gpu.txt
cat $R/gpu.txt; tail -5 $R/pytest.txt
cd $OUT && tar czf s35j.tgz s35j && rm -rf s35j
