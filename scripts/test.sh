#!/usr/bin/env bash
# Builds, then runs every test. GPU tests skip with a one-line reason where no GPU is present.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
cd build
ctest --output-on-failure -j"$(nproc)" --timeout 900
