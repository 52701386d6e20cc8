#!/usr/bin/env bash
# Fails if any FILE names cuBLAS, cuBLASLt, cuSPARSE or cuSPARSELt among its NEEDED shared
# libraries (readelf -d, else objdump -p). Each file after --needs must name libcublas: it
# shows that the check reads NEEDED entries at all.
# Usage: check_no_vendor_libs.sh FILE... [--needs FILE...]
set -u
vendor='^lib(cublas|cublasLt|cusparse|cusparseLt)[.]'
needed() {
  if command -v readelf >/dev/null; then
    readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'
  else
    objdump -p "$1" | awk '$1 == "NEEDED" { print $2 }'
  fi
}
status=0 mode=none
for f in "$@"; do
  if [ "$f" = --needs ]; then mode=needs; continue; fi
  [ -f "$f" ] || { echo "FAIL $f: no such file"; status=1; continue; }
  libs=$(needed "$f")
  if ! grep -q '^libc[.]so' <<<"$libs"; then
    echo "FAIL $f: no NEEDED entries read (libc.so missing): $(tr '\n' ' ' <<<"$libs")"
    status=1
    continue
  fi
  bad=$(grep -E "$vendor" <<<"$libs" | tr '\n' ' ')
  if [ "$mode" = needs ]; then
    if [ -z "$bad" ]; then echo "FAIL $f: expected libcublas among NEEDED: $(tr '\n' ' ' <<<"$libs")"; status=1
    else echo "ok   $f needs $bad(as it should)"; fi
  elif [ -n "$bad" ]; then
    echo "FAIL $f needs $bad"
    status=1
  else
    echo "ok   $f: $(tr '\n' ' ' <<<"$libs")"
  fi
done
exit $status
