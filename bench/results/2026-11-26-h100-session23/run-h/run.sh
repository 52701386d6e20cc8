#!/bin/bash
# Session 23 run-h: the torch op's per-call host work cached (headers, workspace sizes, the raw
# stream, float32 scales as given): pytest, then hostprobe2.py against run-g.
R=$OUT/s23h; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/ch
MAGICUBE_LIBRARY=$PWD/.carry/lib/libmagicube.so.0 PYTHONPATH=python timeout 150 python3 -m pytest -q -rs python/tests > $R/pytest.txt 2>&1; echo "pytest rc=$? $(date -u +%T) $(tail -1 $R/pytest.txt)" >> $R/gpu.txt
MAGICUBE_LIBRARY=$PWD/.carry/lib/libmagicube.so.0 PYTHONPATH=python timeout 200 python3 .carry/hostprobe2.py > $R/host.txt 2>&1; echo "probe rc=$? $(date -u +%T)" >> $R/gpu.txt
MAGICUBE_LIBRARY=$PWD/.carry/lib/libmagicube.so.0 PYTHONPATH=python timeout 200 python3 examples/torch_sparse_linear.py --quick > $R/torch_example.txt 2>&1; echo "example rc=$? $(date -u +%T)" >> $R/gpu.txt
cp .carry/hostprobe2.py $R/
cd $OUT && tar czf s23h.tgz s23h && rm -rf s23h
