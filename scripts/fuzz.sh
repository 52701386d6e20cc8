#!/usr/bin/env bash
# Builds the libFuzzer targets in fuzz/ (clang, the whole build instrumented with ASan and
# UBSan) into build-fuzz/, then runs each for SECONDS (default 60) on a working copy of its
# seed corpus (fuzz/corpus/<name>). Prints one line per target: executions, rate, corpus
# size, peak memory, crash or not. A crash, leak, sanitizer report or timeout leaves its input in
# build-fuzz/crashes/<name>/ and makes the script exit 1 (copy it into fuzz/corpus/<name>/
# once fixed: every ordinary build replays that folder under ctest).
#
#   bash scripts/fuzz.sh [SECONDS] [smtx|spec|tune_record|cache_entry|bundle|packed ...]
#   JOBS=2 bash scripts/fuzz.sh 600       # two targets at a time
set -uo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
targets=("$@")
((${#targets[@]})) || targets=(smtx spec tune_record cache_entry bundle packed)
jobs=${JOBS:-1}
command -v clang++ >/dev/null || { echo "fuzz: clang++ not found (apt-get install clang libclang-rt-dev)" >&2; exit 1; }
export PATH=/usr/local/cuda/bin:$PATH
if [ ! -f build-fuzz/build.ninja ]; then
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMAGICUBE_FUZZ=ON \
    -DMAGICUBE_BUILD_TESTS=OFF >/dev/null || exit 1
fi
cmake --build build-fuzz -j"$(nproc)" --target $(printf 'fuzz_%s ' "${targets[@]}") >build-fuzz/build.log 2>&1 ||
  { tail -30 build-fuzz/build.log; exit 1; }

run_one() {
  local name=$1 dir=build-fuzz/corpus/$1 crashes=build-fuzz/crashes/$1 log=build-fuzz/fuzz_$1.log
  mkdir -p "$dir" "$crashes"
  cp -n fuzz/corpus/"$name"/* "$dir"/ 2>/dev/null
  # ASan's leak check and UBSan reports are crashes too; 10 s per input is a hang.
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    build-fuzz/bin/fuzz_"$name" "$dir" -max_total_time="$secs" -timeout=10 -rss_limit_mb=4096 -max_len=131072 \
    -artifact_prefix="$crashes"/ -print_final_stats=1 >"$log" 2>&1
  local rc=$?
  local execs rate peak files found
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$')
  peak=$(grep -o 'stat::peak_rss_mb: *[0-9]*' "$log" | grep -o '[0-9]*$')
  files=$(ls "$dir" | wc -l)
  found=$(ls "$crashes" | wc -l)
  if [ "$rc" -eq 0 ] && [ "$found" -eq 0 ]; then
    printf "fuzz_%-12s %s s: %s executions (%s/s), corpus %s inputs, peak RSS %s MB, no crash\n" \
      "$name" "$secs" "${execs:-?}" "${rate:-?}" "$files" "${peak:-?}"
  else
    printf "fuzz_%-12s FAILED (exit %s): %s input(s) in %s; see %s\n" "$name" "$rc" "$found" "$crashes" "$log"
    return 1
  fi
}

status=0
pids=()
for t in "${targets[@]}"; do
  run_one "$t" &
  pids+=($!)
  if ((${#pids[@]} >= jobs)); then
    wait "${pids[0]}" || status=1
    pids=("${pids[@]:1}")
  fi
done
for p in "${pids[@]}"; do wait "$p" || status=1; done
exit $status
