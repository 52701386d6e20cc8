#!/bin/bash
# Session 32 run-d (6411282): the dense route's selection at 11008x4096 N=128 s=0.5 (run-c's grid
# kept a configuration that ran 45-79 us against the contender's 31-41), five processes with debug
# logs, then the L4-R8 grid's N=8192 rows.
tar xJf .carry/pkg.tar.xz -C .carry
R=$OUT/s32d; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
for rep in 1 2 3 4 5; do
  f=$R/dense_m11008k4096n128_$rep.txt
  MAGICUBE_LOG_LEVEL=debug MAGICUBE_CACHE_DIR=/tmp/cng timeout 60 .carry/bin/magicube run -v=8 --flush-l2 --route=dense --lhs=s8 --rhs=s8 \
    -m=11008 -k=4096 -n=128 --sparsity=0.5 --repeat=100 > $f 2>&1
  echo "rep $rep: $(grep -E '^time|cuBLASLt int8' $f | cut -c1-220 | tr '\n' ' ')" >> $R/dense.txt
done
echo "diag done $(date -u +%T)" >> $R/gpu.txt
MAGICUBE_CACHE_DIR=/tmp/c32d timeout 240 .carry/bin/magicube-bench --sections=llm --llm-grid=default --filter=L4-R8 --v=8 --llm-n=8192 --no-plots \
  --out-dir=$R/llm-l4r8-n8192 > $R/llm-l4r8.log 2>&1; echo "l4r8 rc=$? $(date -u +%T)" >> $R/gpu.txt
cat $R/gpu.txt $R/dense.txt; grep -E "^\| [0-9]+x[0-9]+ \| 8192 \|" $R/llm-l4r8-n8192/summary.md | cut -c1-200; grep -E "never slower" $R/llm-l4r8-n8192/summary.md | head -2 | cut -c1-300
cd $OUT && tar czf s32d.tgz s32d && rm -rf s32d
