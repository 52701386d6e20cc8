#!/bin/bash
# Session 30 run-g: generator 36 (the cluster pair's sums kept in shared memory and added after
# both passes through distributed shared memory; no zeros, no barrier before the loop) against
# generator 35 as landed (the experiment build, MAGICUBE_EXP_CL=0) and the unpanelled n16d,
# alternating, twice; the decode GPU tests.
tar xJf .carry/pkg.tar.xz -C .carry
R=$OUT/s30g; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
MAGICUBE_CACHE_DIR=/tmp/t30g timeout 200 .carry/bin/test_spmm_gpu --gtest_filter='*Cluster*:*KPanels*:*ColumnMajor*:*DecodeKernelIsExact*' > $R/test_spmm_gpu.txt 2>&1
echo "test_spmm_gpu rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $R/test_spmm_gpu.txt | tr '\n' ' ') $(date -u +%T)" >> $R/gpu.txt
grep -E "Failure|FAILED" -A4 $R/test_spmm_gpu.txt | head -20 >> $R/gpu.txt
one() { tag=$1; shift; case $tag in g35) bin=.carry/magicube_exp; extra="" ;; g36) bin=.carry/bin/magicube; extra="" ;; n16d) bin=.carry/bin/magicube; extra="--decode --bsn=16" ;; esac
  y=$( ( MAGICUBE_EXP_CL=0 MAGICUBE_CACHE_DIR=/tmp/c30g$tag timeout 60 $bin run -v=8 --flush-l2 --route=sparse --lhs=s8 --rhs=s8 $extra "$@" 2>&1 ) | grep -E "^time|exact|rror|^plan" | sed -e 's/(chosen.*//' -e 's/(bitwise.*//' -e 's/ elements equal.*//' -e 's/over .*//' -e 's/(min.*//' | tr '\n' ' ')
  echo "$tag $* | $y" >> $R/ab.txt; }
for rep in 1 2; do
  for a in "-m=4096 -k=14336 -n=16 --sparsity=0.5" "-m=4096 -k=14336 -n=16 --sparsity=0.7" "-m=4096 -k=14336 -n=16 --sparsity=0.9" "-m=4096 -k=14336 -n=1 --sparsity=0.5" \
           "-m=4096 -k=11008 -n=16 --sparsity=0.5 --panel=5504" "-m=4096 -k=11008 -n=16 --sparsity=0.7 --panel=5504"; do
    for tag in n16d g35 g36; do
      if [ $tag = n16d ]; then one $tag --repeat=20 $(echo $a | sed 's/--panel=[0-9]*//'); else one $tag --repeat=20 $a $(echo "$a" | grep -q panel || echo --panel=7168); fi
    done
  done
  for tag in n16d g36; do one $tag --repeat=10 --layers=16 -m=4096 -k=14336 -n=16 --sparsity=0.5 $([ $tag = g36 ] && echo --panel=7168); done
done
echo "done $(date -u +%T)" >> $R/gpu.txt
cat $R/gpu.txt; sed -e 's/exact: yes ([0-9]*//' $R/ab.txt | cut -c1-170
cd $OUT && tar czf s30g.tgz s30g && rm -rf s30g
