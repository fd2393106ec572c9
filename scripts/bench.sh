#!/usr/bin/env bash
# make bench: runs the benchmarks and prints each target's verdict from
# repeated measurements (never one run against an absolute time: these
# machines are noisy). scripts/benchverdict reads the results.
#
# Repetitions: every benchmark with a target runs BENCHCOUNT times (default
# 6) with go test -count, which runs a benchmark's sub-benchmarks back to
# back each time: A, B, A, B … So a ratio (mongosim against the
# fixed-reply server, the generator against the bare driver loop) is taken
# per pair, and drift hits both sides of a pair alike. A verdict is the
# median of the repetitions with its 95 % distribution-free confidence
# interval (order statistics, as benchstat): PASS when the whole interval
# clears the target, FAIL when it lies wholly on the wrong side,
# "inconclusive (noisy)" otherwise. 6 is the fewest repetitions for which a
# 95 % interval for a median exists (the min–max of 6 runs covers it with
# 96.9 %); with fewer every verdict is inconclusive. More repetitions
# narrow the interval and turn noisy verdicts into PASS or FAIL.
#
# Exit 1 only when a verdict is FAIL; inconclusive never fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
count="${BENCHCOUNT:-6}"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
go test -run '^$' -bench 'BenchmarkFindByID' -benchtime "${BENCHTIME:-1s}" -count "$count" ./mongosim/ | tee "$out"
go test -run '^$' -bench 'BenchmarkGenerator' -benchtime "${BENCHITER:-6}x" -count "$count" ./workload/ | tee -a "$out"
# The sampler against an out-of-process cmd/mongosim set: this process's
# CPU is the sampler's alone.
go test -run '^$' -bench 'BenchmarkCollectorCPU' -benchtime 1x -count "$count" ./collect/ | tee -a "$out"
go test -run '^$' -bench 'BenchmarkRender' -benchtime 1x -count "$count" ./report/ | tee -a "$out"
go test -run '^$' -bench 'BenchmarkSweep' -benchtime 1x -count "$count" ./sweep/ | tee -a "$out"
go test -run '^$' -bench 'BenchmarkDetect$' -benchtime 1x -count "$count" ./changepoint/ | tee -a "$out"
go test -run '^$' -bench 'BenchmarkTonightCheck' -benchtime 1x ./nightly/ | tee -a "$out"  # docs/nightly.md's detection table
# An hour of 1 Hz diagnostic samples by default; QMLSAB_FTDC_BENCH_SAMPLES=86400 for a day.
go test -run '^$' -bench 'BenchmarkDecode$' -benchtime "${FTDC_BENCHTIME:-3x}" ./ftdc/ | tee -a "$out"
go run ./scripts/benchverdict "$out"
