#!/bin/bash
# Session 20 run-b: why the 4-bit-A panel kernel runs 2x the 8-bit one (times, then ncu)
R=$OUT/s20b; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c102
B=.carry/bin
run() { echo "== $*" >> $R/times.txt; timeout 60 $B/magicube run --rhs=s8 -v=8 --route=sparse --flush-l2 --repeat=20 "$@" >> $R/times.txt 2>&1; }
for l in s8 s4; do
  run --lhs=$l --m=4096 --k=14336 --n=512 --sparsity=0.5
  run --lhs=$l --m=4096 --k=4096 --n=512 --sparsity=0.5 --decode --bsn=48
  run --lhs=$l --m=4096 --k=4096 --n=512 --sparsity=0.5 --panel=4096
  run --lhs=$l --m=4096 --k=4096 --n=512 --sparsity=0.5 --panel=2048
  run --lhs=$l --m=4096 --k=4096 --n=512 --sparsity=0.5 --panel=1024
done
echo "times done $(date -u +%T)" >> $R/gpu.txt
for l in s8 s4; do for p in "--decode --bsn=48" "--panel=2048"; do
  t=${l}_$(echo $p | tr -dc 'a-z0-9')
  timeout 120 ncu --section SpeedOfLight --section WarpStateStats --section InstructionStats --section SchedulerStats --section LaunchStats --section Occupancy --metrics smsp__inst_executed.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,smsp__sass_inst_executed_op_global_red.sum -k regex:magicube_spmm --launch-count 1 $B/magicube run --lhs=$l --rhs=s8 -v=8 --m=4096 --k=4096 --n=512 --sparsity=0.5 --route=sparse $p --repeat=1 --warmup=0 > $R/ncu_$t.txt 2>&1
done; done
echo "ncu done $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s20b.tgz s20b && rm -rf s20b
