package changepoint

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/qmlsab/qmlsab/internal/benchhost"
)

// benchSeries returns count series of n nights, normal noise with two level
// shifts (up 3 SD at 35 %, down 2 SD at 70 %), varied per metric.
func benchSeries(count, n int) [][]float64 {
	out := make([][]float64, count)
	for k := range out {
		rng := rand.New(rand.NewPCG(uint64(k)+1, uint64(n)))
		s := make([]float64, n)
		for i := range s {
			level := 1000.0
			if i >= n*35/100 {
				level += 30
			}
			if i >= n*70/100 {
				level -= 20
			}
			s[i] = level + 10*rng.NormFloat64()
		}
		out[k] = s
	}
	return out
}

// benchGroups is benchSeries with several samples per night.
func benchGroups(count, n, perNight int) [][][]float64 {
	out := make([][][]float64, count)
	for k := range out {
		rng := rand.New(rand.NewPCG(uint64(k)+1, uint64(n)))
		g := make([][]float64, n)
		for i := range g {
			level := 1000.0
			if i >= n*35/100 {
				level += 30
			}
			if i >= n*70/100 {
				level -= 20
			}
			g[i] = make([]float64, perNight)
			for j := range g[i] {
				g[i][j] = level + 10*rng.NormFloat64()
			}
		}
		out[k] = g
	}
	return out
}

// BenchmarkDetect times one detection pass over 20 metric series (one value
// per night, defaults: 100 permutations) at 250, 500 and 1000 nights.
func BenchmarkDetect(b *testing.B) {
	for _, n := range []int{250, 500, 1000} {
		series := benchSeries(20, n)
		b.Run(fmt.Sprintf("nights=%d/series=20", n), func(b *testing.B) {
			found := 0
			steal := benchhost.ReadSteal()
			for b.Loop() {
				found = 0
				for _, s := range series {
					cps, err := Detect(s, Options{})
					if err != nil {
						b.Fatal(err)
					}
					found += len(cps)
				}
			}
			b.ReportMetric(float64(found)/20, "changepoints/series")
			steal.Report(b)
		})
	}
}

// BenchmarkDetectGroups is BenchmarkDetect with five samples per night.
func BenchmarkDetectGroups(b *testing.B) {
	for _, n := range []int{250, 500, 1000} {
		groups := benchGroups(20, n, 5)
		b.Run(fmt.Sprintf("nights=%d/samples=5/series=20", n), func(b *testing.B) {
			found := 0
			for b.Loop() {
				found = 0
				for _, g := range groups {
					cps, err := DetectGroups(g, Options{})
					if err != nil {
						b.Fatal(err)
					}
					found += len(cps)
				}
			}
			b.ReportMetric(float64(found)/20, "changepoints/series")
		})
	}
}

// BenchmarkQHat times the q̂ scan alone (one pass over every split).
func BenchmarkQHat(b *testing.B) {
	for _, n := range []int{250, 1000, 4000} {
		s := benchSeries(1, n)[0]
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			for b.Loop() {
				QHat(s, 2)
			}
		})
	}
}
