#!/usr/bin/env bash
# make bench: runs the benchmarks and prints each target's verdict from
# repeated measurements (never one run against an absolute time: these
# machines are noisy). scripts/benchverdict reads the results.
#
# Repetitions: every benchmark with a target runs several times with go
# test -count, which runs a benchmark's sub-benchmarks back to back each
# time: A, B, A, B … So a ratio (mongosim against the fixed-reply server,
# the generator against the bare driver loop) is taken per pair, and drift
# hits both sides of a pair alike. A verdict is the median of the
# repetitions with its 95 % distribution-free confidence interval (order
# statistics, as benchstat): PASS when the whole interval clears the
# target, FAIL when it lies wholly on the wrong side, "inconclusive
# (noisy)" otherwise. How many repetitions:
#
#   - 15 for the benchmarks that take a second or two (find-by-_id,
#     report, sweep, detect): the interval runs from the 4th to the 12th
#     of the 15 sorted figures (96.5 %), so the three worst and three best
#     repetitions — a stretch in which another tenant of the host took
#     the CPU — cannot move a verdict.
#   - 9 for the generator (each repetition takes about half a minute:
#     six 2 s windows of each kind): the interval runs from the 2nd to the
#     8th figure (96.1 %). 6 is the fewest for which a 95 % interval
#     exists at all (the min–max of 6 covers the median with 96.9 %), and
#     at 6 a single stalled repetition decides the verdict; 9 is the
#     fewest that drops the worst and the best.
#   - 6 for the collector, which has no target (its figure is printed).
#
# BENCHCOUNT sets every count at once (for a quick look: BENCHCOUNT=6).
# Within a repetition the generator's figure is already the median over
# its windows (workload/bench_test.go says how).
#
# The CPU time the hypervisor gave to other tenants while each benchmark
# ran (steal, from /proc/stat) is written after its results. A target
# timed by the host's clock (a latency, seconds, CPU seconds) cannot FAIL while more
# than 3 % was stolen: its verdict is "inconclusive (host busy)" and the
# line shows the steal (scripts/benchverdict says why); a paired ratio
# is judged whatever the steal.
#
# Exit 1 only when a verdict is FAIL; inconclusive never fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
short="${BENCHCOUNT:-15}"
long="${BENCHCOUNT:-9}"
plain="${BENCHCOUNT:-6}"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
steal() { awk '/^cpu /{print $9 + 0; exit}' /proc/stat 2>/dev/null || echo 0; }
cpuall() { awk '/^cpu /{s=0; for (i=2; i<=9; i++) s+=$i; print s; exit}' /proc/stat 2>/dev/null || echo 0; }
# bench PATTERN GO-TEST-ARGS…: runs the benchmarks PATTERN names and
# writes, after their results, the share of the machine's CPU time the
# host stole meanwhile as "steal NAME PERCENT", NAME being PATTERN without
# its closing $ (scripts/benchverdict withholds a host-timed FAIL above 3 %).
bench() {
	local name=${1%\$} s0 a0 s1 a1
	s0=$(steal) a0=$(cpuall)
	go test -run '^$' -bench "$@" | tee -a "$out"
	s1=$(steal) a1=$(cpuall)
	if [ "$((a1 - a0))" -gt 0 ]; then
		awk -v n="$name" -v s=$((s1 - s0)) -v a=$((a1 - a0)) 'BEGIN{printf "steal %s %.1f\n", n, 100*s/a}' | tee -a "$out"
	fi
}
bench 'BenchmarkFindByID' -benchtime "${BENCHTIME:-1s}" -count "$short" ./mongosim/
BENCHWINDOW="${BENCHWINDOW:-2}" bench 'BenchmarkGenerator' -benchtime "${BENCHITER:-6}x" -count "$long" ./workload/
# The sampler against an out-of-process cmd/mongosim set: this process's
# CPU is the sampler's alone.
bench 'BenchmarkCollectorCPU' -benchtime 1x -count "$plain" ./collect/
bench 'BenchmarkRender' -benchtime 1x -count "$short" ./report/
bench 'BenchmarkSweep' -benchtime 1x -count "$short" ./sweep/
bench 'BenchmarkDetect$' -benchtime 1x -count "$short" ./changepoint/
bench 'BenchmarkTonightCheck' -benchtime 1x ./nightly/ # docs/nightly.md's detection table
# An hour of 1 Hz diagnostic samples by default; QMLSAB_FTDC_BENCH_SAMPLES=86400 for a day.
bench 'BenchmarkDecode$' -benchtime "${FTDC_BENCHTIME:-3x}" ./ftdc/
go run ./scripts/benchverdict "$out"
