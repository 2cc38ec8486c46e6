#!/bin/sh
# Interleaved runs of the benchmarks, for docs/performance.md: each round
# runs every binary once, so drift in machine load hits all of them alike.
# Usage: bench/interleave.sh ROUNDS BUILD_DIR [OTHER_BUILD_DIR]
#   BUILD_DIR: a -DSIMCACHE_BENCH=ON build (build/ by default).
#   BENCH_FILTER: which benchmarks (a --benchmark_filter regex; default
#   the pairs, arm-fail, presets, warm runs and the engine), e.g.
#   BENCH_FILTER=Engine bench/interleave.sh 5 build-before build
# Prints, per round and binary, the median CPU time of 5 repetitions of
# each benchmark and the task-clock of 5 whole `simcache --scenario
# sparse4096 --jobs 1` processes (perf stat; /usr/bin/time without perf).
set -eu
filter=${BENCH_FILTER:-'Pair|ArmFail|Preset|Warm|Engine'}
rounds=$1
shift
for r in $(seq 1 "$rounds"); do
  for dir in "$@"; do
    echo "== round $r: $dir"
    "$dir/bench/simcache_bench" --benchmark_filter="$filter" \
      --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
      --benchmark_min_time=0.2 2>/dev/null | grep median || true
    if command -v perf >/dev/null; then
      perf stat -r 5 "$dir/simcache" --scenario sparse4096 --jobs 1 2>&1 \
        >/dev/null | grep task-clock
    else
      /usr/bin/time -f '%U+%S s' "$dir/simcache" --scenario sparse4096 --jobs 1 >/dev/null
    fi
  done
done
