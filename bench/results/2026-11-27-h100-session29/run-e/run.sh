#!/bin/bash
# Session 29 run-e (generator 34): the L8-R8 V=4/2 grid again (run-d's ran after 4 min of L4-R4; one
# dense-route row there timed both GEMMs 40 % slow), with the clocks before and after.
R=$OUT/s29e; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw,clocks_throttle_reasons.active --format=csv; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c29e
B=.carry/bin
timeout 300 $B/magicube-bench --sections=llm --llm-grid=default --filter=L8-R8 --v=4,2 --no-plots --out-dir=$R/llm-l8r8-v42 > $R/llm-l8r8-v42.log 2>&1; echo "v42 rc=$? $(date -u +%T)" >> $R/gpu.txt
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw,clocks_throttle_reasons.active --format=csv >> $R/gpu.txt
cd $OUT && tar czf s29e.tgz s29e && rm -rf s29e
