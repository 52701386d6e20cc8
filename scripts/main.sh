#!/usr/bin/env bash
# The main job: build, then show what the compiler does: plans for a few ops, and, where a
# GPU is present, a bit-exact SpMM run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
./build/bin/magicube plan --op=spmm --lhs=s8 --rhs=s8 --v=8 --arch=sm_90
./build/bin/magicube plan --op=spmm --lhs=s12 --rhs=u4 --v=4 --arch=sm_80
./build/bin/magicube plan --op=sddmm --lhs=u3 --rhs=s7 --v=2 --arch=sm_90 --format=json
# A bit-exact SpMM on the GPU, timed (prints one line and goes on where there is no GPU).
./build/bin/magicube run --op=spmm --lhs=s8 --rhs=s4 --v=8 --bsn=128 --m=4096 --k=4096 --sparsity=0.9 --n=256 || true
