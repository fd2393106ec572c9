#!/usr/bin/env bash
# make bench: runs the benchmarks and prints each target as a ratio of its
# baseline measured in the same run (never an absolute time target: these
# machines are noisy). Exit 1 when a target is missed.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp)
trap 'rm -f "$out"' EXIT
go test -run '^$' -bench 'BenchmarkFindByID' -benchtime "${BENCHTIME:-3s}" -count "${BENCHCOUNT:-3}" ./mongosim/ | tee "$out"
go test -run '^$' -bench 'BenchmarkGenerator' -benchtime "${BENCHITER:-6}x" ./workload/ | tee -a "$out"
go test -run '^$' -bench 'BenchmarkCollectorCPU' -benchtime 2x ./collect/ | tee -a "$out"
go test -run '^$' -bench 'BenchmarkRender' -benchtime 3x ./report/ | tee -a "$out"
go test -run '^$' -bench 'BenchmarkSweep' -benchtime 1x ./sweep/ | tee -a "$out"
go test -run '^$' -bench 'BenchmarkDetect$' -benchtime 3x ./changepoint/ | tee -a "$out"
go test -run '^$' -bench 'BenchmarkTonightCheck' -benchtime 1x ./nightly/ | tee -a "$out"  # docs/nightly.md's detection table
# An hour of 1 Hz diagnostic samples by default; QMLSAB_FTDC_BENCH_SAMPLES=86400 for a day.
go test -run '^$' -bench 'BenchmarkDecode$' -benchtime "${FTDC_BENCHTIME:-3x}" ./ftdc/ | tee -a "$out"
awk '
  function metric(unit,   i) { for (i=1;i<=NF;i++) if ($i==unit) return $(i-1); return "" }
  /BenchmarkFindByID\/fixed-reply/ { f+=metric("ops/s"); nf++ }
  /BenchmarkFindByID\/mongosim/    { m+=metric("ops/s"); nm++ }
  /BenchmarkGenerator\/throughput/ { bare=metric("bare-ops/s"); gen=metric("generator-ops/s"); share=metric("generator-%-of-bare") }
  /BenchmarkGenerator\/lag-2000/   { p99=metric("p99-lag-ms"); p50=metric("p50-lag-ms"); rate=metric("ops/s"); gcpu=metric("process-cpu-ms/s") }
  /BenchmarkCollectorCPU/          { ccpu=metric("3-members-1Hz-cpu-ms/s"); idle=metric("idle-set-cpu-ms/s") }
  /BenchmarkRender/                { rs=metric("s/report"); rmb=metric("MiB-html") }
  /BenchmarkSweep/                 { tps=metric("trials/s"); s900=metric("s/900-trials-own-cpus"); w900=metric("s/900-trials-wall"); cpt=metric("cpu-s/trial"); sw=metric("workers") }
  /^BenchmarkDecode/               { fmb=metric("MB/s"); fvals=metric("values/s"); fday=metric("s/day") }
  /BenchmarkDetect\/nights=250\//   { d250=metric("ns/op")/1e9 }
  /BenchmarkDetect\/nights=1000\//  { d1000=metric("ns/op")/1e9 }
  END {
    if (!nf || !nm || share=="" || p99=="" || ccpu=="" || rs=="" || d1000=="") { print "bench: missing results"; exit 1 }
    if (fmb=="") { print "bench: missing FTDC decode results"; exit 1 }
    f/=nf; m/=nm; r=100*m/f; fail=0
    printf "\n"
    printf "find-by-_id through the Go driver: mongosim %.0f ops/s vs fixed-reply server %.0f ops/s = %.1f%% (target >= 50%%): %s\n", m, f, r, (r>=50 ? "PASS" : "FAIL"); fail+=(r<50)
    printf "generator throughput: open loop %.0f ops/s vs bare driver loop %.0f ops/s, side by side = %.1f%% (target >= 90%%): %s\n", gen, bare, share, (share>=90 ? "PASS" : "FAIL"); fail+=(share<90)
    printf "start lag at %.0f scheduled ops/s against mongosim: p50 %.2f ms, p99 %.2f ms (target p99 <= 2 ms): %s; process CPU %.0f ms/s, server included\n", rate, p50, p99, (p99<=2 ? "PASS" : "FAIL"), gcpu; fail+=(p99>2)
    printf "collector, 3 members at 1 Hz: %.2f ms CPU per second of run (%.3f%% of a core; the idle in-process set itself uses %.0f ms/s)\n", ccpu, ccpu/10, idle
    printf "report of 3 arms x 5 trials x 1 h of 1 Hz samples: %.2f s (target <= 2 s): %s; %.2f MiB of HTML (target <= 5 MB): %s\n", rs, (rs<=2 ? "PASS" : "FAIL"), rmb, (rmb*1.048576<=5 ? "PASS" : "FAIL"); fail+=(rs>2)+(rmb*1.048576>5)
    printf "history detect, E-Divisive over 20 metric series (100 permutations): 1000 nights %.2f s (target <= 2 s): %s; 250 nights %.3f s, growth x%.1f for 4x the nights (n^2 would be x16)\n", d1000, (d1000<=2 ? "PASS" : "FAIL"), d250, d1000/d250; fail+=(d1000>2)
    printf "sweep (virtual time, host model, default profile): %.2f trials/s on %d workers (%.0f s for 3 arms x 100 cells x 3 seeds at that rate, the machine as shared); %.2f s CPU per trial, so %.0f s on %d CPUs of its own (target <= 300 s): %s\n", tps, sw, w900, cpt, s900, sw, (s900<=300 ? "PASS" : "FAIL"); fail+=(s900>300)
    printf "FTDC decode throughput: %.1f MB/s of diagnostic.data files\n", fmb
    printf "FTDC decode: %.1f million samples x metrics per second (a day of 1 Hz samples with 1,500 metrics in %.1f s)\n", fvals/1e6, fday
    exit (fail ? 1 : 0)
  }' "$out"
