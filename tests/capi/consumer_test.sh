#!/usr/bin/env bash
# Installs the build's MagicubeJIT package into a prefix inside the build directory, then
# configures, builds and runs examples/consumer (outside the source tree's CMake project)
# against it: a C99 and a C++17 program calling magicube_plan_describe. Fails if LLVM, CUDA,
# spdlog or fmt appears on the consumer's include path or link line.
# Usage: consumer_test.sh CMAKE BUILD_DIR CONSUMER_SOURCE_DIR   ($MAGICUBE_CONSUMER_PRELOAD: a
# library to preload into the consumers, ASan's runtime under a sanitized build)
set -euo pipefail
cmake=$1 build=$(cd "$2" && pwd) src=$(cd "$3" && pwd)
prefix=$build/install-test
out=$build/consumer-build
rm -rf "$prefix" "$out"
"$cmake" --install "$build" --prefix "$prefix" >/dev/null
"$cmake" -S "$src" -B "$out" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
  -DCMAKE_BUILD_TYPE=Release >"$out.log" 2>&1 || { cat "$out.log"; exit 1; }
"$cmake" --build "$out" >>"$out.log" 2>&1 || { cat "$out.log"; exit 1; }
echo "installed: $(cd "$prefix" && find . -type f -o -type l | sort | tr '\n' ' ')"
if grep -E -i -- '-I[^ ]*(llvm|cuda|spdlog|fmt)|-isystem [^ ]*(llvm|cuda|spdlog|fmt)' "$out/compile_commands.json"; then
  echo "FAIL the consumer's compile lines name LLVM, CUDA, spdlog or fmt"
  exit 1
fi
link_lines=$(cat "$out"/CMakeFiles/consumer_c.dir/link.txt "$out"/build.ninja 2>/dev/null | grep -o -E 'lib(LLVM|nvrtc|cuda|spdlog|fmt)[^ ]*' || true)
if [ -n "$link_lines" ]; then echo "FAIL the consumer links $link_lines"; exit 1; fi
# Under a sanitized build the library needs its sanitizer's runtime preloaded (tests/CMakeLists.txt).
LD_PRELOAD=${MAGICUBE_CONSUMER_PRELOAD:-} "$out/consumer_c"
LD_PRELOAD=${MAGICUBE_CONSUMER_PRELOAD:-} "$out/consumer_cpp"
echo "ok   consumer (C99 and C++17) built and ran against $prefix"
