#!/bin/bash
# dense route: heuristic configurations with the other CTA swizzle and the column-major C form's configurations
R=$OUT/s16b; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
C=/tmp/c66
MAGICUBE_CACHE_DIR=$C timeout 200 .carry/bin/test_dense_route_gpu > $R/test_dense_route_gpu.log 2>&1; echo "test_dense_route_gpu rc=$?" >> $R/gpu.txt
MAGICUBE_CACHE_DIR=$C timeout 100 .carry/bin/test_capi_gpu > $R/test_capi_gpu.log 2>&1; echo "test_capi_gpu rc=$?" >> $R/gpu.txt
date -u >> $R/gpu.txt
for a in "--m=4096 --k=11008 --n=512" "--m=11008 --k=4096 --n=8192" "--m=4096 --k=11008 --n=8192" "--m=6144 --k=4096 --n=512"; do
  echo "$a :: $(MAGICUBE_CACHE_DIR=$C timeout 60 .carry/bin/magicube run --op=spmm $a --sparsity=0.5 --route=dense --flush-l2 --repeat=20 2>&1 | grep -E 'median|exact|route|error' | tr '\n' ' ')" >> $R/dense_runs.txt
done
date -u >> $R/gpu.txt
MAGICUBE_CACHE_DIR=$C timeout 300 .carry/bin/magicube-bench --sections=llm --llm-grid=default --filter=L8-R8 --v=8 --no-plots --out-dir=$R/llm-l8r8 > $R/llm.log 2>&1; echo "llm grid rc=$?" >> $R/gpu.txt
date -u >> $R/gpu.txt
cd $OUT && tar czf s16b.tgz s16b && rm -rf s16b
