#!/bin/bash
# Session 28 run-c: B's slice by cp.async.bulk (TMA, one mbarrier; MAGICUBE_EXP_BULK, an experiment
# switch in codegen) against the cp.async copy, alternating; GPU tests with the switch; the timeline.
R=$OUT/s28c; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
B=.carry/bin; T0=$(date +%s)
MAGICUBE_EXP_BULK=1 MAGICUBE_CACHE_DIR=/tmp/t28c timeout 200 $B/test_spmm_gpu --gtest_filter='*Decode*:*ColumnMajor*' > $R/test_spmm_gpu.txt 2>&1
MAGICUBE_EXP_BULK=1 MAGICUBE_CACHE_DIR=/tmp/t28c timeout 100 $B/test_epilogue_gpu --gtest_filter='*Decode*' > $R/test_epilogue_gpu.txt 2>&1
tail -3 $R/test_spmm_gpu.txt $R/test_epilogue_gpu.txt
one() { tag=$1; shift; x=$( ( [ $tag = bulk ] && export MAGICUBE_EXP_BULK=1; MAGICUBE_CACHE_DIR=/tmp/c28c$tag timeout 120 $B/magicube run -v=8 --lhs=s8 --rhs=s8 --flush-l2 --route=sparse "$@" 2>&1 ) | grep -E "^plan|^time|exact|rror" | sed -e 's/(chosen.*//' -e 's/(bitwise.*//' -e 's/ elements equal.*//' -e 's/over .*//' -e 's/(min.*//' | tr '\n' ' ')
  echo "$tag $* | $x" >> $R/ab.txt; }
for rep in 1 2; do
for a in "-m=4096 -k=4096 -n=2048 --sparsity=0.9" "-m=14336 -k=4096 -n=2048 --sparsity=0.9" "-m=4096 -k=11008 -n=2048 --sparsity=0.9" \
         "-m=4096 -k=4096 -n=8192 --sparsity=0.9" "-m=4096 -k=4096 -n=512 --sparsity=0.7" "-m=4096 -k=4096 -n=16 --sparsity=0.5" \
         "-m=14336 -k=4096 -n=16 --sparsity=0.5" "-m=4096 -k=14336 -n=16 --sparsity=0.5" "-m=4096 -k=14336 -n=512 --sparsity=0.7 --panel=4800 --bsn=48" \
         "-m=4096 -k=4096 -n=16 --sparsity=0.7" "-m=4096 -k=4096 -n=128 --sparsity=0.9"; do
  [ $(( $(date +%s) - T0 )) -gt 420 ] && break 2
  r=20; case "$a" in *8192*) r=10;; esac
  one cpa --repeat=$r $a
  one bulk --repeat=$r $a
done; done
MAGICUBE_EXP_BULK=1 MAGICUBE_EXP_TIMES=1 MAGICUBE_CACHE_DIR=/tmp/c28cT timeout 60 $B/magicube run -v=8 --lhs=s8 --rhs=s8 --flush-l2 --route=sparse --warmup=1 --repeat=3 -m=4096 -k=4096 -n=2048 --sparsity=0.9 > $R/tl_bulk_a4096n2048.txt 2>&1
MAGICUBE_EXP_BULK=1 MAGICUBE_EXP_TIMES=1 MAGICUBE_CACHE_DIR=/tmp/c28cT timeout 60 $B/magicube run -v=8 --lhs=s8 --rhs=s8 --flush-l2 --route=sparse --warmup=1 --repeat=3 -m=4096 -k=11008 -n=2048 --sparsity=0.9 > $R/tl_bulk_k11008n2048.txt 2>&1
MAGICUBE_EXP_BULK=1 MAGICUBE_EXP_TIMES=1 MAGICUBE_CACHE_DIR=/tmp/c28cT timeout 60 $B/magicube run -v=8 --lhs=s8 --rhs=s8 --flush-l2 --route=sparse --warmup=1 --repeat=3 -m=4096 -k=4096 -n=16 --sparsity=0.5 > $R/tl_bulk_d4096n16.txt 2>&1
echo "done $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s28c.tgz s28c && rm -rf s28c
