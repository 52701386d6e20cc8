#!/usr/bin/env bash
# libmagicube.so exports the C ABI only: every defined dynamic symbol is magicube_* (or the
# version node MAGICUBE_0), no undefined symbol is LLVM's, spdlog's or fmt's (so nothing can
# bind to another LLVM in the process), and every function of include/magicube/magicube.h is
# exported. Prints a summary line with the counts.
# Usage: check_exports.sh LIB HEADER
set -u
lib=$1 header=$2
defined=$(nm -D --defined-only "$lib" | awk '{print $NF}' | sed 's/@.*//' | sort -u)
undefined=$(nm -D --undefined-only "$lib" | awk '{print $NF}' | sed 's/@.*//' | sort -u)
status=0
other=$(grep -v -E '^(magicube_[a-z0-9_]+|MAGICUBE_0)$' <<<"$defined")
if [ -n "$other" ]; then
  echo "FAIL exported symbols other than magicube_*: $(head -20 <<<"$other" | tr '\n' ' ')"
  status=1
fi
# Mangled namespaces: N4llvm, N6spdlog, N3fmt, N8magicube (std::__throw_out_of_range_fmt is not fmt's).
bad_undef=$(grep -E '^_Z.*[^0-9](4llvm|6spdlog|3fmt|8magicube)[0-9A-Z]' <<<"$undefined" || true)
if [ -n "$bad_undef" ]; then
  echo "FAIL undefined symbols of LLVM/spdlog/fmt/internal code: $(head -20 <<<"$bad_undef" | tr '\n' ' ')"
  status=1
fi
if grep -qi llvm <<<"$defined"; then echo "FAIL llvm symbols exported"; status=1; fi
declared=$(grep -oE 'MAGICUBE_API [^(]*\b(magicube_[a-z0-9_]+)\(' "$header" | grep -oE 'magicube_[a-z0-9_]+\($' | tr -d '(' | sort -u)
missing=$(comm -23 <(echo "$declared") <(grep '^magicube_' <<<"$defined"))
if [ -n "$missing" ]; then echo "FAIL declared but not exported: $(tr '\n' ' ' <<<"$missing")"; status=1; fi
n_exp=$(grep -c '^magicube_' <<<"$defined")
n_decl=$(grep -c . <<<"$declared")
n_llvm=$(nm -D --defined-only "$lib" | grep -ci llvm || true)
echo "exports: $n_exp magicube_* functions ($n_decl declared in magicube.h), $n_llvm llvm symbols, $(grep -c . <<<"$undefined") undefined (libc, libstdc++, libm, zlib, tinfo, nvrtc)"
[ $status -eq 0 ] && echo "ok   $lib exports the C ABI only"
exit $status
