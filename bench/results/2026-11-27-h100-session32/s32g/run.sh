#!/bin/bash
# Session 32 run-g (4c77f62): ncu of the prefill kernel n48dw20 at 4096x4096 N=2048, s=0.9 and
# s=0.999 (one launch each, caches flushed by ncu): where the fixed half of the time goes.
tar xJf .carry/pkg.tar.xz -C .carry
R=$OUT/s32g; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
for s in 0.9 0.999; do
  MAGICUBE_CACHE_DIR=/tmp/c32g timeout 100 ncu --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
    --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,smsp__inst_executed.sum,sm__cycles_active.avg \
    -k regex:magicube_spmm --launch-count 1 .carry/bin/magicube run --lhs=s8 --rhs=s8 -v=8 -m=4096 -k=4096 -n=2048 --sparsity=$s \
    --route=sparse --bsn=48 --warps=20 --repeat=1 --warmup=0 > $R/ncu_s$s.txt 2>&1
  echo "s=$s rc=$? $(date -u +%T)" >> $R/gpu.txt
done
cat $R/gpu.txt; for s in 0.9 0.999; do grep -E "Duration|DRAM Throughput|Memory Throughput|Compute \(SM\)|dram__bytes|lts__t_bytes|Stall|Issued Warp|No Eligible|L2 Hit|Mem Busy|Max Bandwidth" $R/ncu_s$s.txt | head -30; done
cd $OUT && tar czf s32g.tgz s32g && rm -rf s32g
