#!/bin/bash
# Session 24 run-e: pytest on the final python/ (the traced-graph tests expect magicube.linear).
R=$OUT/s24e; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/ce MAGICUBE_LIBRARY=$PWD/.carry/lib/libmagicube.so.0
PYTHONPATH=python timeout 300 python3 -m pytest -q -rs python/tests > $R/pytest.txt 2>&1; echo "pytest rc=$? $(date -u +%T) $(tail -1 $R/pytest.txt)" >> $R/gpu.txt
cd $OUT && tar czf s24e.tgz s24e && rm -rf s24e
