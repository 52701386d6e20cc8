#!/bin/bash
# the fixed SDDMM PTX test (BSn 32-256)
R=$OUT/s14e; mkdir -p $R
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c49
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
timeout 200 .carry/bin/test_sddmm_gpu > $R/test_sddmm_gpu.log 2>&1; echo "test_sddmm_gpu rc=$?" >> $R/gpu.txt
date -u >> $R/gpu.txt
cd $OUT && tar czf s14e.tgz s14e && rm -rf s14e
