#!/bin/bash
# Session 35 s35d: initcheck and cuBLASLt's algorithms: the probe with each of the heuristic's 8
# algorithms on a fresh C; the chunked dense route (u8 x s12, f32) three times under initcheck.
R=$OUT/s35d; mkdir -p $R
tar xJf .carry/pkg.tar.xz -C .carry
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $R/gpu.txt
for i in 0 1 2 3 4 5 6 7; do
  compute-sanitizer --tool initcheck --print-limit 1 .carry/initcheck_cublaslt fresh $i > $R/probe-$i.txt 2>&1
  echo "algo $i: $(grep -h '^variant' $R/probe-$i.txt) | $(grep -h 'ERROR SUMMARY' $R/probe-$i.txt | head -1)" >> $R/probe.txt
done
export MAGICUBE_CACHE_DIR=/tmp/mc-san
for t in 1 2 3; do
  compute-sanitizer --tool initcheck --print-limit 1 .carry/bin/magicube run --v=8 --route=dense --lhs=u8 --rhs=s12 --out=f32 --scale=rowcol --bias=col --m=256 --k=512 --sparsity=0.5 --n=128 --repeat=1 --warmup=0 > $R/chunks-$t.txt 2>&1
  echo "chunks $t: $(grep -h '^kernel' $R/chunks-$t.txt | cut -c1-200) | $(grep -h '^exact' $R/chunks-$t.txt) | $(grep -h 'ERROR SUMMARY' $R/chunks-$t.txt | head -1)" >> $R/probe.txt
done
echo "done $(date -u +%T)" >> $R/gpu.txt
cat $R/probe.txt
cd $OUT && tar czf s35d.tgz s35d && rm -rf s35d
