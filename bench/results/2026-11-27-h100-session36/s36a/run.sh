#!/bin/bash
# Session 36, run s36a: the packed-blob check on the H100. The CPU tests of the check, the C ABI's
# GPU tests (magicube_spmm_host / magicube_sddmm_host now check the whole blob they upload), the
# Python suite (Packed.from_bytes checks the blob), and plots of the latest llm grids.
set -u
tar xJf .carry/pkg.tar.xz -C .carry
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
export MAGICUBE_CACHE_DIR=$PWD/.carry/cache MAGICUBE_BUNDLE=0
export MAGICUBE_CLI=$PWD/.carry/bin/magicube MAGICUBE_CLI_PATH=$PWD/.carry/bin/magicube
O=$OUT/s36a
mkdir -p "$O"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > "$O/gpu.txt"
for t in test_packed_check test_capi test_capi_gpu; do
  timeout 300 .carry/bin/$t > "$O/$t.txt" 2>&1
  echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$O/$t.txt" | tr '\n' ' ')" | tee -a "$O/summary.txt"
done
MAGICUBE_LIBRARY=$PWD/.carry/lib/libmagicube.so.0 PYTHONPATH=python timeout 300 python3 -m pytest -q -rs -p no:cacheprovider python/tests > "$O/pytest.txt" 2>&1
echo "pytest rc=$? $(tail -1 "$O/pytest.txt")" | tee -a "$O/summary.txt"
# Plots of the grids the README's tables come from (generator 37), where matplotlib is installed.
if python3 -c "import matplotlib" 2>/dev/null; then
  R=bench/results
  for csv in $R/2026-11-27-h100-session32/s32e/llm-l8r8/results.csv $R/2026-11-27-h100-session32/s32e/llm-l4r8/results.csv \
             $R/2026-11-27-h100-session33/s33b/llm-l4r4/results.csv $R/2026-11-27-h100-session33/s33b/llm-l8r8-v42/results.csv; do
    d=$O/plots/$(basename "$(dirname "$csv")")
    mkdir -p "$d" && python3 bench/plots.py "$csv" --out-dir "$d" >> "$O/plots.txt" 2>&1
  done
  echo "plots: $(find "$O/plots" -name '*.png' | wc -l) png" | tee -a "$O/summary.txt"
else
  echo "plots: no matplotlib" | tee -a "$O/summary.txt"
fi
tar czf "$OUT/s36a.tgz" -C "$OUT" s36a
