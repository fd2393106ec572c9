package changepoint

import (
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
)

// TestPermutationsAreBounded checks that more shuffles than
// MaxPermutations are refused, and that the most allowed cost memory only
// for the shuffles drawn: a test that rejects its candidate early keeps
// no buffer of MaxPermutations results per segment.
func TestPermutationsAreBounded(t *testing.T) {
	_, err := Detect([]float64{1, 2, 3, 4, 5}, Options{Permutations: MaxPermutations + 1})
	if err == nil || !strings.Contains(err.Error(), "Permutations 100001 is more than 100000") {
		t.Errorf("MaxPermutations+1: error %v", err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	noise := make([]float64, 60)
	for i := range noise {
		noise[i] = rng.NormFloat64()
	}
	allocated := func(perms int) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		cps, err := Detect(noise, Options{Permutations: perms, Workers: 1})
		runtime.ReadMemStats(&after)
		if err != nil || len(cps) != 0 {
			t.Fatalf("%d permutations over noise: %+v, %v", perms, cps, err)
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	// Noise's candidates fail once 5 % of the shuffles reach them, about
	// 5000 drawn of 100,000; preallocating took 8 bytes × MaxPermutations
	// (800 KB) for each candidate.
	if most, dflt := allocated(MaxPermutations), allocated(DefaultPermutations); most > dflt+8*MaxPermutations/2 {
		t.Errorf("a test rejected early allocated %d bytes with %d permutations, %d with %d", most, MaxPermutations, dflt, DefaultPermutations)
	}
}
