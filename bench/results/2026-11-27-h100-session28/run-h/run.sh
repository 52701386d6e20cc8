#!/bin/bash
# Session 28 run-h: test_epilogue_gpu with the dispatch's float output at long K (DecodeFloatOutputs:
# s8 and s4 weights, K = 11008, bf16 +rc +rowbias +ccol, the spec policy_spec picks: n16dw32).
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; MAGICUBE_CACHE_DIR=/tmp/c28h timeout 200 .carry/bin/test_epilogue_gpu 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED|SKIPPED) |Failure|mismatch" | head -20
