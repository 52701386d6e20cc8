#!/usr/bin/env bash
# Builds, then runs every test: ctest (C++, the C ABI, the installed-package consumer), then the
# Python package's tests (pytest, in a venv in build/ with the package installed over the
# libmagicube.so just built). GPU tests skip with a one-line reason where no GPU is present;
# torch tests skip where torch is not installed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
(cd build && ctest --output-on-failure -j"$(nproc)" --timeout 900)
bash scripts/python_test.sh
