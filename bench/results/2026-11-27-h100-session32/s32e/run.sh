#!/bin/bash
# Session 32 run-e (6411282): the L8-R8 V=8 grid again (run-c's one row below 0.97x was a slow
# spell), then the whole L4-R8 V=8 grid; each grid packed as soon as it ends.
tar xJf .carry/pkg.tar.xz -C .carry
R=$OUT/s32e; mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $OUT/gpu-e.txt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/.carry/lib MAGICUBE_CACHE_DIR=/tmp/c32e
B=.carry/bin/magicube-bench
timeout 290 $B --sections=llm --llm-grid=default --filter=L8-R8 --v=8 --no-plots --out-dir=$R/llm-l8r8 > $R/llm-l8r8.log 2>&1; echo "l8r8 rc=$? $(date -u +%T)" >> $OUT/gpu-e.txt
(cd $OUT && tar czf s32e-l8r8.tgz s32e/llm-l8r8 s32e/llm-l8r8.log)
timeout 270 $B --sections=llm --llm-grid=default --filter=L4-R8 --v=8 --no-plots --out-dir=$R/llm-l4r8 > $R/llm-l4r8.log 2>&1; echo "l4r8 rc=$? $(date -u +%T)" >> $OUT/gpu-e.txt
(cd $OUT && tar czf s32e-l4r8.tgz s32e/llm-l4r8 s32e/llm-l4r8.log && rm -rf s32e)
cat $OUT/gpu-e.txt; for g in l8r8 l4r8; do grep -E "never slower" $R/llm-$g/summary.md 2>/dev/null | head -1 | cut -c1-400; done
tar xzf $OUT/s32e-l8r8.tgz -C /tmp; tar xzf $OUT/s32e-l4r8.tgz -C /tmp 2>/dev/null
for g in l8r8 l4r8; do grep -E "never slower" /tmp/s32e/llm-$g/summary.md 2>/dev/null | head -1 | cut -c1-400; grep -E "^\| [0-9]+x[0-9]+ \| (2048|8192) \|" /tmp/s32e/llm-$g/summary.md | cut -c1-120; done
