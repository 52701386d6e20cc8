#!/bin/bash
# Session 33 run-c: the shares kernel's timeline (experiment build, MAGICUBE_EXP_TIMES at generation:
# %globaltimer at entry, slice landed, loop end, segment end, printed by each warp's lane 0).
R=$OUT/s33c; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 MAGICUBE_CACHE_DIR=/tmp/c33c MAGICUBE_EXP_TIMES=1
X=.carry/exp/magicube
one() { tag=$1; shift; timeout 120 $X run -v=8 --flush-l2 --route=sparse --lhs=s8 --rhs=s8 --repeat=3 "$@" > $R/$tag.txt 2>&1; grep -E "^time|exact" $R/$tag.txt | head -3 >> $R/times.txt; }
one n8192_4096 -m=4096 -k=4096 -n=8192 --sparsity=0.9
one n8192_6144 -m=6144 -k=4096 -n=8192 --sparsity=0.9
one n2048_4096 -m=4096 -k=4096 -n=2048 --sparsity=0.9
one n8192_14336 -m=14336 -k=4096 -n=8192 --sparsity=0.9
python3 .carry/probes/et33.py $R/n8192_4096.txt $R/n8192_6144.txt $R/n2048_4096.txt $R/n8192_14336.txt > $R/timeline.txt 2>&1
cat $R/times.txt $R/timeline.txt
for f in $R/n*.txt; do grep -v "^ET " $f > $f.log; rm $f; done
cd $OUT && tar czf s33c.tgz s33c && rm -rf s33c
