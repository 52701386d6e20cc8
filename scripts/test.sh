#!/usr/bin/env bash
# Builds, then runs every test. GPU tests skip with a one-line reason where no GPU is present.
# Then, where clang and libFuzzer are installed, a short run of each fuzz target (ASan +
# UBSan; MAGICUBE_CI_FUZZ_SECONDS per target, default 10, 0 to skip; scripts/fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
(cd build && ctest --output-on-failure -j"$(nproc)" --timeout 900)
secs=${MAGICUBE_CI_FUZZ_SECONDS:-10}
if [ "$secs" != 0 ] && command -v clang++ >/dev/null &&
   compgen -G "/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a" >/dev/null; then
  JOBS=$(nproc) bash scripts/fuzz.sh "$secs"
else
  echo "fuzz: skipped (MAGICUBE_CI_FUZZ_SECONDS=0, or no clang with libFuzzer)"
fi
