#!/bin/bash
# Session 36, run s36c: SparseLinear checks a loaded state dict's blob (python/tests/test_torch.py),
# the whole Python suite and the C ABI's CPU tests on the H100 machine, after the C ABI's header
# reader was shared by read_header and packed_check.
set -u
tar xJf .carry/pkg.tar.xz -C .carry
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
export MAGICUBE_CACHE_DIR=$PWD/.carry/cache MAGICUBE_BUNDLE=0
export MAGICUBE_CLI=$PWD/.carry/bin/magicube MAGICUBE_CLI_PATH=$PWD/.carry/bin/magicube
O=$OUT/s36c
mkdir -p "$O"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > "$O/gpu.txt"
for t in test_packed_check test_capi; do
  timeout 300 .carry/bin/$t > "$O/$t.txt" 2>&1
  echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$O/$t.txt" | tr '\n' ' ')" | tee -a "$O/summary.txt"
done
MAGICUBE_LIBRARY=$PWD/.carry/lib/libmagicube.so.0 PYTHONPATH=python timeout 300 python3 -m pytest -q -rs -p no:cacheprovider python/tests > "$O/pytest.txt" 2>&1
echo "pytest rc=$? $(tail -1 "$O/pytest.txt")" | tee -a "$O/summary.txt"
MAGICUBE_LIBRARY=$PWD/.carry/lib/libmagicube.so.0 PYTHONPATH=python timeout 300 python3 -m pytest -q -rs -p no:cacheprovider python/tests/test_torch.py -k state_dict -v > "$O/pytest_state_dict.txt" 2>&1
echo "state_dict: $(tail -1 "$O/pytest_state_dict.txt")" | tee -a "$O/summary.txt"
