#!/bin/bash
# Session 22 run-d: instruction-fetch stalls in the decode-family kernels (ncu metrics), SASS sizes
R=$OUT/s22d; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib PATH=$PATH:/usr/local/cuda/bin
B=.carry/bin
M=gpu__time_duration.sum,smsp__inst_executed.sum,smsp__average_warp_latency_per_inst_issued.ratio
for s in no_instruction long_scoreboard short_scoreboard mio_throttle lg_throttle wait barrier math_pipe_throttle branch_resolving not_selected selected dispatch_stall imc_miss drain sleeping membar; do M=$M,smsp__average_warps_issue_stalled_${s}_per_issue_active.ratio; done
n() { local tag=$1 dep=$2; shift 2
  unset MAGICUBE_EXP_DEPTH; [ "$dep" != 0 ] && export MAGICUBE_EXP_DEPTH=$dep
  MAGICUBE_CACHE_DIR=/tmp/n$tag timeout 100 ncu --kernel-name regex:magicube_spmm --launch-skip 3 --launch-count 1 --metrics $M \
    $B/magicube run -v=8 --sparsity=0.9 -m=4096 -k=4096 -n=2048 --repeat=3 --warmup=2 --route=sparse "$@" > $R/ncu_$tag.txt 2>&1
  echo "$tag rc=$? $(date -u +%T)" >> $R/gpu.txt
  MAGICUBE_CACHE_DIR=/tmp/n$tag timeout 60 $B/magicube run -v=8 --sparsity=0.9 -m=4096 -k=4096 -n=2048 --flush-l2 --repeat=20 --route=sparse "$@" 2>&1 | grep -E "^time|^kernel" | tr '\n' ' ' >> $R/time_$tag.txt
  MAGICUBE_CACHE_DIR=/tmp/n$tag $B/magicube compile --op=spmm -v=8 --out=int32 --arch=sm_90 --emit=cubin -o /tmp/$tag.cubin "$@" > /dev/null 2>&1
  cuobjdump -sass /tmp/$tag.cubin > $R/$tag.sass; grep -cE '^\s+/\*[0-9a-f]{4}\*/' $R/$tag.sass >> $R/time_$tag.txt
}
n s8row 0 --rhs=s8 --lhs=s8 --decode --bsn=48
n s8col 0 --rhs=s8 --lhs=s8 --decode --bsn=48 --c-order=col
n s4row 0 --rhs=s8 --lhs=s4 --decode --bsn=48
n s4col 0 --rhs=s8 --lhs=s4 --decode --bsn=48 --c-order=col
n s4row8 8 --rhs=s8 --lhs=s4 --decode --bsn=48
n p4096 0 --rhs=s8 --lhs=s8 --panel=4096 --bsn=48
n p4096d8 8 --rhs=s8 --lhs=s8 --panel=4096 --bsn=48
n s4s4row 0 --lhs=s4 --rhs=s4 --decode --bsn=64
n s4s4col 0 --lhs=s4 --rhs=s4 --decode --bsn=64 --c-order=col
cd $OUT && tar czf s22d.tgz s22d && rm -rf s22d
