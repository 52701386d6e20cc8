#!/bin/bash
# Session 23 run-f: the final build's GPU tests, and float outputs through the dispatch (--route=auto).
R=$OUT/s23f; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/cf
B=.carry/bin
for a in "-m=4096 -k=4096 -n=512 --sparsity=0.9" "-m=14336 -k=4096 -n=2048 --sparsity=0.9" "-m=4096 -k=4096 -n=2048 --sparsity=0.7" "-m=4096 -k=11008 -n=512 --sparsity=0.9" "-m=11008 -k=4096 -n=16 --sparsity=0.5"; do
  x=$(timeout 40 $B/magicube run -v=8 --lhs=s8 --rhs=s8 --flush-l2 --repeat=20 --out=bf16 --scale=rowcol --bias=row --c-order=col --route=auto $a 2>&1 | grep -E "^time|^kernel|^route|exact|rror" | tr '\n' ' ')
  echo "auto $a | $x" >> $R/float_auto.txt; done
t() { n=$1; shift; timeout $1 $B/$n "${@:2}" > $R/$n.txt 2>&1; echo "$n rc=$? $(date -u +%T) $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' $R/$n.txt | tr '\n' ' ')" >> $R/gpu.txt; }
t test_epilogue_gpu 120
t test_capi_gpu 60
t test_api 60 --gtest_filter='ApiGpu*'
t test_dense_route_gpu 60
MAGICUBE_LIBRARY=$PWD/.carry/lib/libmagicube.so.0 PYTHONPATH=python timeout 90 python3 -m pytest -q -rs python/tests > $R/pytest.txt 2>&1; echo "pytest rc=$? $(date -u +%T) $(tail -1 $R/pytest.txt)" >> $R/gpu.txt
t test_spmm_gpu $((590 - SECONDS))
cd $OUT && tar czf s23f.tgz s23f && rm -rf s23f
