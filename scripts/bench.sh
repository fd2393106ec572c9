#!/usr/bin/env bash
# make bench: runs the benchmarks and prints each target as a ratio of its
# baseline measured in the same run (never an absolute time target: these
# machines are noisy).
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp)
trap 'rm -f "$out"' EXIT
go test -run '^$' -bench 'BenchmarkFindByID' -benchtime "${BENCHTIME:-3s}" -count "${BENCHCOUNT:-3}" ./mongosim/ | tee "$out"
awk '
  /BenchmarkFindByID\/fixed-reply/ { for (i=1;i<=NF;i++) if ($i=="ops/s") { f+=$(i-1); nf++ } }
  /BenchmarkFindByID\/mongosim/    { for (i=1;i<=NF;i++) if ($i=="ops/s") { m+=$(i-1); nm++ } }
  END {
    if (!nf || !nm) { print "bench: missing results"; exit 1 }
    f/=nf; m/=nm; r=100*m/f
    printf "\nfind-by-_id through the Go driver: mongosim %.0f ops/s vs fixed-reply server %.0f ops/s = %.1f%% of the protocol limit (target >= 50%%): %s\n", m, f, r, (r>=50 ? "PASS" : "FAIL")
    exit (r>=50 ? 0 : 1)
  }' "$out"
