#!/bin/bash
# Session 30 run-f: where the cluster kernel's time goes (MAGICUBE_EXP_CL, this build only:
# 0 as landed; 1 no zeroing and no barrier; 2 the arrive relaxed; 3 no zeroing, no barrier and
# rank 0 storing: 1-3 time only, their results may be wrong), against the unpanelled n16d.
R=$OUT/s30f; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
one() { tag=$1; shift; case $tag in n16d) x=0; extra="--decode --bsn=16" ;; *) x=${tag#e}; extra="" ;; esac
  y=$( ( MAGICUBE_EXP_CL=$x MAGICUBE_CACHE_DIR=/tmp/c30f$tag timeout 60 .carry/magicube_exp run -v=8 --flush-l2 --route=sparse --lhs=s8 --rhs=s8 --repeat=20 $extra "$@" 2>&1 ) | grep -E "^time|exact|rror|^plan" | sed -e 's/(chosen.*//' -e 's/(bitwise.*//' -e 's/ elements equal.*//' -e 's/over .*//' -e 's/(min.*//' | tr '\n' ' ')
  echo "$tag $* | $y" >> $R/ab.txt; }
for rep in 1 2; do
  for a in "-m=4096 -k=14336 -n=16 --sparsity=0.5" "-m=4096 -k=14336 -n=16 --sparsity=0.7" "-m=4096 -k=11008 -n=16 --sparsity=0.5 --panel=5504"; do
    for tag in n16d e0 e1 e2 e3; do
      if [ $tag = n16d ]; then one $tag $(echo $a | sed 's/--panel=[0-9]*//'); else one $tag $a $(echo "$a" | grep -q panel || echo --panel=7168); fi
    done
  done
done
echo "done $(date -u +%T)" >> $R/gpu.txt
cat $R/gpu.txt; cat $R/ab.txt | cut -c1-200
cd $OUT && tar czf s30f.tgz s30f && rm -rf s30f
