#!/usr/bin/env bash
# Installs what the build needs, with apt, where it is missing. The CUDA 13 toolkit
# (nvcc, NVRTC, cuda.h) is expected in /usr/local/cuda: it is not an apt package here.
set -euo pipefail
pkgs=(cmake ninja-build g++ llvm-14-dev libspdlog-dev libfmt-dev libgtest-dev zlib1g-dev libncurses-dev libxml2-dev libz3-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if [ ! -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc >/dev/null; then
  echo "setup: the CUDA 13 toolkit is missing (expected /usr/local/cuda); install it from NVIDIA first" >&2
  exit 1
fi
