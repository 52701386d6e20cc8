#!/bin/bash
# Session 23 run-c: float outputs into a column-major C as pair stores (prev = run-b's build,
# per-element stores): A/B; GPU tests; then the L4-R4 grid (the model reading B's stored bytes,
# cut in session 22) and L8-R8 V=4/2.
R=$OUT/s23c; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
ab() { for rep in 1 2; do for v in prev new; do
  if [ $v = prev ]; then L=.carry/prev/lib; B=.carry/prev/bin; else L=.carry/lib; B=.carry/bin; fi
  x=$(LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/$L MAGICUBE_CACHE_DIR=/tmp/c$v timeout 60 $B/magicube run -v=8 --lhs=s8 --rhs=s8 --flush-l2 --repeat=20 --route=sparse "$@" 2>&1 | grep -E "^time|^kernel|exact|rror" | tr '\n' ' ')
  echo "$v $* | $x" >> $R/ab.txt; done; done; }
for o in "--out=bf16 --scale=rowcol --bias=row --c-order=col" "--out=f16 --scale=rowcol --c-order=col" "--out=int32 --c-order=col"; do
  ab -m=4096 -k=4096 -n=2048 --sparsity=0.9 $o
  ab -m=11008 -k=4096 -n=512 --sparsity=0.9 $o
  ab -m=4096 -k=4096 -n=16 --sparsity=0.5 $o
done
ab -m=4096 -k=4096 -n=2048 --sparsity=0.7 --out=bf16 --scale=rowcol --bias=row --c-order=col
ab -m=4096 -k=11008 -n=512 --sparsity=0.9 --out=bf16 --scale=rowcol --bias=row --c-order=col
echo "ab done $(date -u +%T)" >> $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/cc
B=.carry/bin
timeout 150 $B/test_epilogue_gpu > $R/epilogue.txt 2>&1; echo "epilogue rc=$? $(date -u +%T) $(grep -E '^\[  (PASSED|FAILED)' $R/epilogue.txt | tr '\n' ' ')" >> $R/gpu.txt
MAGICUBE_LIBRARY=$PWD/.carry/lib/libmagicube.so.0 PYTHONPATH=python timeout 120 python3 -m pytest -q -rs python/tests > $R/pytest.txt 2>&1; echo "pytest rc=$? $(date -u +%T) $(tail -1 $R/pytest.txt)" >> $R/gpu.txt
timeout $((590 - SECONDS)) $B/magicube-bench --sections=llm --llm-grid=default --filter=L4-R4 --v=8 --no-plots --out-dir=$R/llm-l4r4 > $R/llm-l4r4.log 2>&1; echo "l4r4 rc=$? $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s23c.tgz s23c && rm -rf s23c
