#!/usr/bin/env bash
# Configures and builds everything into build/ (the CLI is build/bin/magicube).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
