#!/usr/bin/env bash
# The CPU test suite under AddressSanitizer and UndefinedBehaviorSanitizer: builds
# everything with -fsanitize=address,undefined (gcc) into build-asan/ and runs ctest there
# (GPU tests skip without a GPU; on a GPU machine they run too). Any sanitizer report fails
# its test (halt_on_error, abort_on_error); the last line is ctest's summary.
#   bash scripts/sanitize.sh            # JOBS=N to limit the build's parallelism
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMAGICUBE_SANITIZE=ON >/dev/null
cmake --build build-asan -j"${JOBS:-$(nproc)}"
cd build-asan
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --output-on-failure -j"$(nproc)" --timeout 1800 2>&1 | tee ctest.log | grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)|Exception"
