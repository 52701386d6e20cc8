#!/bin/bash
# Session 24 run-f: pytest (with the CUDA-graph layer test); decode layers in a CUDA graph
# against bf16 F.linear (gprobe.py).
R=$OUT/s24f; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/cf MAGICUBE_LIBRARY=$PWD/.carry/lib/libmagicube.so.0
PYTHONPATH=python timeout 200 python3 -m pytest -q -rs python/tests > $R/pytest.txt 2>&1; echo "pytest rc=$? $(date -u +%T) $(tail -1 $R/pytest.txt)" >> $R/gpu.txt
PYTHONPATH=python timeout $((560 - SECONDS)) python3 .carry/gprobe.py > $R/graph.txt 2>&1; echo "graph rc=$? $(date -u +%T)" >> $R/gpu.txt
cp .carry/gprobe.py $R/
cd $OUT && tar czf s24f.tgz s24f && rm -rf s24f
