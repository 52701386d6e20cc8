#!/bin/bash
# Session 27 run-c: ncu of generator 33's n48d (20 warps) at prefill, 4096x4096 s=0.9 N=2048.
R=$OUT/s27c; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
P="-m=4096 -k=4096 -n=2048 --sparsity=0.9"
MAGICUBE_CACHE_DIR=/tmp/c timeout 200 ncu --clock-control none --cache-control all \
  --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis_Tables --section ComputeWorkloadAnalysis --section InstructionStats --section LaunchStats \
  --metrics l1tex__data_pipe_lsu_wavefronts.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_lg.sum,l1tex__lsu_writeback_active.sum,l1tex__throughput.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,smsp__inst_executed_op_ldsm.sum,sm__cycles_elapsed.avg,smsp__inst_executed_pipe_lsu.sum,sm__inst_executed_pipe_tensor_op_imma.sum,sm__pipe_tensor_op_imma_cycles_active.avg.pct_of_peak_sustained_active \
  -k regex:magicube_spmm --launch-skip 2 --launch-count 1 .carry/bin/magicube run -v=8 --lhs=s8 --rhs=s8 --route=sparse --repeat=3 $P > $R/ncu.txt 2>&1
MAGICUBE_CACHE_DIR=/tmp/c timeout 200 ncu --clock-control none --section SourceCounters --section WarpStateStats \
  -k regex:magicube_spmm --launch-skip 2 --launch-count 1 --page source --csv --print-source sass .carry/bin/magicube run -v=8 --lhs=s8 --rhs=s8 --route=sparse --repeat=3 $P > $R/source.csv 2>&1
B=.carry/bin
$B/test_spmm_gpu --gtest_filter='*Decode*:*ColumnMajor*' > $R/test_spmm_gpu.txt 2>&1
$B/test_capi_gpu > $R/test_capi_gpu.txt 2>&1
$B/test_epilogue_gpu --gtest_filter='*Decode*' > $R/test_epilogue_gpu.txt 2>&1
$B/test_api --gtest_filter='ApiGpu.*' > $R/test_api.txt 2>&1
echo "done $(date -u +%T)" >> $R/gpu.txt
cd $OUT && tar czf s27c.tgz s27c && rm -rf s27c
