#!/bin/bash
# Session 35 s35g: which dec-shares dimensions launch the shares grid (one block an SM, x = 1:
# launch__grid_size 132), so that the sanitizer covers a block's second segment (a slice copied
# over the first one's cut sums); then the four tools on those dimensions.
R=$OUT/s35g; mkdir -p $R
tar xJf .carry/pkg.tar.xz -C .carry
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c35g
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
F="--lhs=s8 --rhs=s8 --v=8 --shares --warps=20 --k=4096 --sparsity=0.9"
for d in "--m=1024 --n=512" "--m=1024 --n=8192" "--m=2048 --n=8192" "--m=4096 --n=8192" "--m=1024 --n=4096"; do
  g=$(timeout 120 ncu --metrics launch__grid_size,launch__block_size -k regex:magicube_spmm --launch-count 1 .carry/bin/magicube run $F $d --repeat=1 --warmup=0 2>&1 | grep -E 'launch__grid_size' | awk '{print $NF}')
  echo "$d: grid $g" >> $R/grids.txt
done
cat $R/grids.txt
pick=$(grep -m1 'grid 132$' $R/grids.txt | cut -d: -f1)
echo "picked: $pick" >> $R/grids.txt
if [ -n "$pick" ]; then
  for tool in memcheck racecheck initcheck synccheck; do
    t0=$(date +%s)
    timeout 200 compute-sanitizer --tool $tool --print-limit 5 .carry/bin/magicube run $F $pick --repeat=1 --warmup=0 > $R/$tool.log 2>&1
    echo "$tool: rc=$? $(grep -h 'SUMMARY' $R/$tool.log | head -1) $(grep -h '^exact' $R/$tool.log) $(( $(date +%s) - t0 )) s" >> $R/summary.txt
  done
fi
echo "done $(date -u +%T)" >> $R/gpu.txt
cat $R/grids.txt $R/summary.txt
cd $OUT && tar czf s35g.tgz s35g && rm -rf s35g
