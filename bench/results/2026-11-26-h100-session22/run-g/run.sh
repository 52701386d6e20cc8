#!/bin/bash
# Session 22 run-g: the flat epilogue with a column-major C: fetch stalls (ncu), and depth 8 against 10 (MAGICUBE_EXP_DEPTH)
R=$OUT/s22g; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export PATH=$PATH:/usr/local/cuda/bin
M=gpu__time_duration.sum,smsp__inst_executed.sum,smsp__average_warp_latency_per_inst_issued.ratio
for s in no_instruction long_scoreboard short_scoreboard mio_throttle wait branch_resolving not_selected selected; do M=$M,smsp__average_warps_issue_stalled_${s}_per_issue_active.ratio; done
n() { local tag=$1 v=$2; shift 2
  if [ $v = old ]; then L=.carry/old/lib; B=.carry/old/bin; else L=.carry/lib; B=.carry/bin; fi
  LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/$L MAGICUBE_CACHE_DIR=/tmp/n$tag timeout 100 ncu --kernel-name regex:magicube_spmm --launch-skip 3 --launch-count 1 --metrics $M \
    $B/magicube run -v=8 --sparsity=0.9 -m=4096 -k=4096 -n=2048 --repeat=3 --warmup=2 "$@" > $R/ncu_$tag.txt 2>&1
  echo "$tag rc=$? $(date -u +%T)" >> $R/gpu.txt; }
n s8col_old old --lhs=s8 --rhs=s8 --decode --bsn=48 --c-order=col
n s8col_new new --lhs=s8 --rhs=s8 --decode --bsn=48 --c-order=col
n s8row_new new --lhs=s8 --rhs=s8 --decode --bsn=48
ab() { for rep in 1 2; do for v in old new new8; do
  unset MAGICUBE_EXP_DEPTH
  if [ $v = old ]; then L=.carry/old/lib; B=.carry/old/bin; else L=.carry/lib; B=.carry/bin; fi
  [ $v = new8 ] && export MAGICUBE_EXP_DEPTH=8
  x=$(LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/$L MAGICUBE_CACHE_DIR=/tmp/c$v timeout 60 $B/magicube run -v=8 --flush-l2 --repeat=20 "$@" 2>&1 | grep -E "^time|^kernel|exact|rror" | tr '\n' ' ')
  echo "$v $* | $x" >> $R/ab.txt; done; done; }
ab --lhs=s8 --rhs=s8 -m=4096 -k=4096 -n=2048 --sparsity=0.9 --decode --bsn=48
ab --lhs=s8 --rhs=s8 -m=4096 -k=4096 -n=2048 --sparsity=0.9 --decode --bsn=48 --c-order=col
ab --lhs=s4 --rhs=s8 -m=4096 -k=4096 -n=2048 --sparsity=0.9 --decode --bsn=48
ab --lhs=s4 --rhs=s8 -m=4096 -k=4096 -n=2048 --sparsity=0.9 --decode --bsn=48 --c-order=col
ab --lhs=s8 --rhs=s8 -m=4096 -k=11008 -n=2048 --sparsity=0.9 --panel=3712 --bsn=48
ab --lhs=s8 --rhs=s8 -m=14336 -k=4096 -n=2048 --sparsity=0.7 --decode --bsn=48 --c-order=col
ab --lhs=s8 --rhs=s8 -m=4096 -k=4096 -n=16 --sparsity=0.5 --route=sparse
echo "ab done $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s22g.tgz s22g && rm -rf s22g
