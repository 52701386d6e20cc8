#!/usr/bin/env bash
# Builds, then runs every test: ctest (C++, the C ABI, the installed-package consumer), then the
# Python package's tests (pytest, in a venv in build/ with the package installed over the
# libmagicube.so just built). GPU tests skip with a one-line reason where no GPU is present;
# torch tests skip where torch is not installed. Then, where clang and libFuzzer are
# installed, a short run of each fuzz target (ASan + UBSan; MAGICUBE_CI_FUZZ_SECONDS per
# target, default 10, 0 to skip; scripts/fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
(cd build && ctest --output-on-failure -j"$(nproc)" --timeout 900)
bash scripts/python_test.sh
secs=${MAGICUBE_CI_FUZZ_SECONDS:-10}
if [ "$secs" != 0 ] && command -v clang++ >/dev/null &&
   compgen -G "/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a" >/dev/null; then
  JOBS=$(nproc) bash scripts/fuzz.sh "$secs"
else
  echo "fuzz: skipped (MAGICUBE_CI_FUZZ_SECONDS=0, or no clang with libFuzzer)"
fi
