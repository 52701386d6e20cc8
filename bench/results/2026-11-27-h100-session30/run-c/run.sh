#!/bin/bash
# Session 30 run-c: generator 35 (long-K decode in two K panels, a cluster of two blocks, one a
# panel) against generator 34, alternating, twice; the decode GPU tests (the new cluster test).
R=$OUT/s30c; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
MAGICUBE_CACHE_DIR=/tmp/t30c timeout 200 .carry/test_spmm_gpu --gtest_filter='*Decode*:*ColumnMajor*' > $R/test_spmm_gpu.txt 2>&1
echo "test_spmm_gpu rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $R/test_spmm_gpu.txt | tr '\n' ' ') $(date -u +%T)" >> $R/gpu.txt
grep -E "Failure|FAILED|error" -A4 $R/test_spmm_gpu.txt | head -30 >> $R/gpu.txt
T0=$(date +%s)
one() { tag=$1; shift; case $tag in g34) bin=.carry/magicube34 ;; *) bin=.carry/magicube35 ;; esac
  x=$( ( MAGICUBE_CACHE_DIR=/tmp/c30c$tag timeout 60 $bin run -v=8 --flush-l2 "$@" 2>&1 ) | grep -E "^time|exact|rror|^plan" | sed -e 's/(bitwise.*//' -e 's/ elements equal.*//' -e 's/over .*//' -e 's/(min.*//' | tr '\n' ' ')
  echo "$tag $* | $x" >> $R/ab.txt; }
for rep in 1 2; do
for a in "-m=4096 -k=14336 -n=16 --sparsity=0.5" "-m=4096 -k=14336 -n=16 --sparsity=0.7" "-m=4096 -k=11008 -n=16 --sparsity=0.5" "-m=4096 -k=11008 -n=16 --sparsity=0.7" \
         "-m=4096 -k=14336 -n=1 --sparsity=0.5" "-m=4096 -k=14336 -n=16 --sparsity=0.9" "-m=4096 -k=11008 -n=8 --sparsity=0.9"; do
  [ $(( $(date +%s) - T0 )) -gt 300 ] && break 2
  for tag in g34 g35; do one $tag --route=sparse --lhs=s8 --rhs=s8 --repeat=20 $a; done
  [ $rep = 1 ] && one g34 --route=dense --lhs=s8 --rhs=s8 --repeat=20 $a
done
for tag in g34 g35; do one $tag --route=sparse --lhs=s4 --rhs=s8 --repeat=20 -m=4096 -k=14336 -n=16 --sparsity=0.5; done
for tag in g34 g35; do one $tag --route=sparse --lhs=s8 --rhs=s8 --repeat=10 --layers=16 -m=4096 -k=14336 -n=16 --sparsity=0.5; done
for tag in g34 g35p; do one $tag --route=sparse --lhs=s8 --rhs=s8 --repeat=20 -m=4096 -k=4096 -n=16 --sparsity=0.5 $([ $tag = g35p ] && echo --panel=2048); done
for tag in g34 g35p; do one $tag --route=sparse --lhs=s8 --rhs=s8 --repeat=20 -m=14336 -k=4096 -n=16 --sparsity=0.5 $([ $tag = g35p ] && echo --panel=2048); done
done
echo "done $(date -u +%T)" >> $R/gpu.txt
cat $R/gpu.txt; sed -e 's/--lhs=s8 --rhs=s8 //' -e 's/exact: yes ([0-9]*//' $R/ab.txt | cut -c1-250
cd $OUT && tar czf s30c.tgz s30c && rm -rf s30c
