#!/bin/bash
# Generator 29 (the panel kernel's epilogue: one predicated store-or-add path): panel GPU tests, interleaved A/B against generator 28
R=$OUT/s17i; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
timeout 300 .carry/bin/test_spmm_gpu > $R/test_spmm_gpu.txt 2>&1; echo "test_spmm_gpu rc=$? $(date -u +%T)" >> $R/gpu.txt
timeout 100 .carry/bin/test_epilogue_gpu --gtest_filter='*Decode*' > $R/test_epilogue_gpu.txt 2>&1; echo "test_epilogue_gpu rc=$? $(date -u +%T)" >> $R/gpu.txt
for rep in 1 2; do for build in old new; do
  if [ $build = old ]; then M=.carry/exp/bin/magicube; C=/tmp/c77old; else M=.carry/bin/magicube; C=/tmp/c77new; fi
  for shape in "4096 4096 4096" "4096 14336 4096" "4096 11008 4096"; do set -- $shape
   for s in 0.7 0.9; do for n in 512 2048; do
    echo "== rep=$rep build=$build $1x$2 s=$s n=$n panel=$3"
    MAGICUBE_CACHE_DIR=$C timeout 60 $M run --lhs=s8 --rhs=s8 --m=$1 --k=$2 --sparsity=$s --n=$n --decode --bsn=48 --panel=$3 --route=sparse --flush-l2 --repeat=20 2>&1 | grep -E "^(plan|exact|time)|rror"
   done; done; done
  echo "== rep=$rep build=$build 4096x4096 s=0.9 n=2048 nopanel"
  MAGICUBE_CACHE_DIR=$C timeout 60 $M run --lhs=s8 --rhs=s8 --m=4096 --k=4096 --sparsity=0.9 --n=2048 --decode --bsn=48 --route=sparse --flush-l2 --repeat=20 2>&1 | grep -E "^(plan|exact|time)|rror"
done; done > $R/ab.txt 2>&1
date -u >> $R/gpu.txt
cd $OUT && tar czf s17i.tgz s17i && rm -rf s17i
