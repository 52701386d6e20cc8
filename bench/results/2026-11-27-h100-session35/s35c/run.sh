#!/bin/bash
# Session 35 s35c: is initcheck's "uninitialized read" in the chunked dense route's epilogue a
# read of memory cuBLASLt wrote without initcheck seeing it? probes/initcheck_cublaslt.cu (three
# variants) under initcheck, and the s8 x s8 dense route with a float epilogue.
R=$OUT/s35c; mkdir -p $R
tar xJf .carry/pkg.tar.xz -C .carry
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
for v in fresh memset stores; do
  echo "== $v (no sanitizer)" >> $R/probe.txt; .carry/initcheck_cublaslt $v >> $R/probe.txt 2>&1
  echo "== $v (initcheck)" >> $R/probe.txt
  compute-sanitizer --tool initcheck --print-limit 2 .carry/initcheck_cublaslt $v >> $R/probe.txt 2>&1
done
export MAGICUBE_CACHE_DIR=/tmp/mc-san
for f in "--lhs=s8 --rhs=s8 --out=f32 --scale=rowcol --bias=col" "--lhs=s8 --rhs=s8"; do
  echo "== magicube run --route=dense $f (initcheck)" >> $R/dense.txt
  compute-sanitizer --tool initcheck --print-limit 2 .carry/bin/magicube run --v=8 --route=dense $f --m=256 --k=512 --sparsity=0.5 --n=128 --repeat=1 --warmup=0 >> $R/dense.txt 2>&1
done
echo "done $(date -u +%T)" >> $R/gpu.txt
cat $R/probe.txt | grep -v 'Host Frame'; grep -E '^==|kernel |exact|SUMMARY|Uninit|  at ' $R/dense.txt
cd $OUT && tar czf s35c.tgz s35c && rm -rf s35c
