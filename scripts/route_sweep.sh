#!/usr/bin/env bash
# Times both routes of the dispatch (runtime/dense_route.h) with `magicube run` on LLM weight
# shapes, L2 flushed before each launch, for calibrating and checking the policy's time model
# (runtime/policy.cpp). Prints one CSV row per run: precision,v,m,k,n,sparsity,route,ms,exact,chosen.
# Usage: bash scripts/route_sweep.sh BIN_DIR [quick]
set -u
bin=${1:?usage: route_sweep.sh BIN_DIR [quick]}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$bin/../lib:${LD_LIBRARY_PATH:-}
export MAGICUBE_CACHE_DIR=${MAGICUBE_CACHE_DIR:-/tmp/magicube-route-sweep}
shapes="4096x4096 14336x4096 4096x14336"
ns="1 16 64 128 512 2048 8192"
[ "${2:-}" = quick ] && shapes="4096x4096" && ns="16 512"
one() {  # lhs rhs v m k n s route
  local o
  o=$("$bin/magicube" run --lhs=$1 --rhs=$2 --v=$3 --m=$4 --k=$5 --n=$6 --sparsity=$7 --route=$8 --flush-l2 \
       --repeat=20 --warmup=3 2>&1)
  local ms ex ch
  ms=$(echo "$o" | sed -n 's/^time *median \([0-9.]*\) ms.*/\1/p')
  ex=$(echo "$o" | grep -q '^exact: yes' && echo yes || echo no)
  ch=$(echo "$o" | sed -n 's/^route *\([a-z]*\) .*/\1/p')
  echo "$1x$2,$3,$4,$5,$6,$7,$8,${ms:-nan},$ex,${ch:-}"
  [ -n "$ms" ] || echo "$o" | tail -3 | sed 's/^/#   /'
}
echo "precision,v,m,k,n,sparsity,route,ms,exact,chosen"
for shape in $shapes; do
  m=${shape%x*}; k=${shape#*x}
  for n in $ns; do
    one s8 s8 8 $m $k $n 0.5 dense
    for s in 0.5 0.7 0.9; do one s8 s8 8 $m $k $n $s sparse; done
    if [ $shape = 4096x4096 ]; then
      for v in 4 2; do one s8 s8 $v $m $k $n 0.7 sparse; done
      one s4 s8 8 $m $k $n 0.7 sparse
      one s4 s4 8 $m $k $n 0.7 sparse
    fi
  done
done
