#!/bin/bash
# Session 23 run-a: float outputs with the hardware's cvt and the flat epilogue (generator 31):
# A/B against session 22's build (.carry/old), then the GPU tests of the new build.
R=$OUT/s23a; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
ab() { for rep in 1 2; do for v in old new; do
  if [ $v = old ]; then L=.carry/old/lib; B=.carry/old/bin; else L=.carry/lib; B=.carry/bin; fi
  x=$(LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/$L MAGICUBE_CACHE_DIR=/tmp/c$v timeout 60 $B/magicube run -v=8 --lhs=s8 --rhs=s8 --flush-l2 --repeat=20 --route=sparse "$@" 2>&1 | grep -E "^time|^kernel|exact|rror" | tr '\n' ' ')
  echo "$v $* | $x" >> $R/ab.txt; done; done; }
for o in "--out=int32" "--out=bf16 --scale=rowcol --bias=row" "--out=f16 --scale=rowcol" "--out=f32 --scale=tensor"; do
  ab -m=4096 -k=4096 -n=2048 --sparsity=0.9 $o
  ab -m=4096 -k=4096 -n=16 --sparsity=0.5 $o
done
for o in "--out=int32" "--out=bf16 --scale=rowcol --bias=row"; do
  ab -m=11008 -k=4096 -n=512 --sparsity=0.9 $o
  ab -m=4096 -k=4096 -n=8192 --sparsity=0.9 $o
  ab -m=4096 -k=4096 -n=2048 --sparsity=0.5 $o
  ab -m=4096 -k=11008 -n=512 --sparsity=0.9 $o
done
echo "ab done $(date -u +%T)" >> $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/ct
B=.carry/bin
t() { n=$1; shift; timeout $1 $B/$n "${@:2}" > $R/$n.txt 2>&1; echo "$n rc=$? $(date -u +%T) $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' $R/$n.txt | tr '\n' ' ')" >> $R/gpu.txt; }
t test_epilogue_gpu 150
t test_dense_route_gpu 120
t test_capi_gpu 90
t test_api 90 --gtest_filter='ApiGpu*'
MAGICUBE_LIBRARY=$PWD/.carry/lib/libmagicube.so.0 PYTHONPATH=python timeout $((590 - SECONDS)) python3 -m pytest -q -rs python/tests > $R/pytest.txt 2>&1; echo "pytest rc=$? $(date -u +%T) $(tail -1 $R/pytest.txt)" >> $R/gpu.txt
cd $OUT && tar czf s23a.tgz s23a && rm -rf s23a
