#!/bin/bash
# Session 33 run-f: shares kernels with the next segment's slice asked of L2 (cp.async.bulk.prefetch.L2
# by thread 0 once the segment's slice has landed; experiment build, MAGICUBE_EXP_PFNEXT=1 plain,
# =2 with an evict_last policy) against the shipped kernel (g37), alternating, twice.
R=$OUT/s33f; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
one() { tag=$1; shift; case $tag in g37) env=;; pf1) env=MAGICUBE_EXP_PFNEXT=1;; pf2) env=MAGICUBE_EXP_PFNEXT=2;; esac
  x=$( ( env $env MAGICUBE_CACHE_DIR=/tmp/c33f$tag timeout 60 .carry/exp/magicube run -v=8 --flush-l2 --route=sparse --lhs=s8 --rhs=s8 --repeat=20 --sparsity=0.9 "$@" 2>&1 ) | grep -E "^time|exact|rror" | sed -e 's/(24379392.*//' -e 's/ elements equal.*//' -e 's/over .*//' | tr '\n' ' ')
  echo "$tag $* | $x" >> $R/ab.txt; }
for rep in 1 2; do
for a in "-m=4096 -k=4096 -n=8192" "-m=6144 -k=4096 -n=8192" "-m=11008 -k=4096 -n=8192" "-m=14336 -k=4096 -n=8192" "-m=4096 -k=4096 -n=8192 --c-order=col" "-m=4096 -k=14336 -n=8192" "-m=4096 -k=11008 -n=8192 --c-order=col"; do
  [ $SECONDS -gt 420 ] && break 2
  for tag in g37 pf1 pf2; do one $tag $a; done
done; done
cat $R/ab.txt
cd $OUT && tar czf s33f.tgz s33f && rm -rf s33f
