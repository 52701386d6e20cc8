#!/bin/bash
# Session 36, run s36d: the final build of session 36 (after the review's fixes): the packed check's
# tests, the C ABI's CPU and GPU tests (the host runs check the whole blob they upload, given its own
# header), the Python suite (Packed.from_bytes and SparseLinear's state-dict load check the blob).
set -u
tar xJf .carry/pkg.tar.xz -C .carry
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
export MAGICUBE_CACHE_DIR=$PWD/.carry/cache MAGICUBE_BUNDLE=0
export MAGICUBE_CLI=$PWD/.carry/bin/magicube MAGICUBE_CLI_PATH=$PWD/.carry/bin/magicube
O=$OUT/s36d
mkdir -p "$O"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > "$O/gpu.txt"
for t in test_packed_check test_capi test_capi_gpu; do
  timeout 300 .carry/bin/$t > "$O/$t.txt" 2>&1
  echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$O/$t.txt" | tr '\n' ' ')" | tee -a "$O/summary.txt"
done
MAGICUBE_LIBRARY=$PWD/.carry/lib/libmagicube.so.0 PYTHONPATH=python timeout 300 python3 -m pytest -q -rs -p no:cacheprovider python/tests > "$O/pytest.txt" 2>&1
echo "pytest rc=$? $(tail -1 "$O/pytest.txt")" | tee -a "$O/summary.txt"
