package model

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestShedVerdictIsTheDrawAgainstTheProbability: the shedder settles most
// draws by bounds on 1 − e^(−x) instead of the exponential; its verdict
// must be the comparison with the computed probability for every draw,
// including draws a few ulps either side of the probability and of the
// bounds, over hazards from negligible to certain.
func TestShedVerdictIsTheDrawAgainstTheProbability(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	settled, checked := 0, 0
	for e := -14.0; e <= 2; e += 0.01 {
		x := math.Pow(10, e)
		p := 1 - math.Exp(-x)
		draws := []float64{0, x, x - x*x/2, x + expMargin, x - x*x/2 - expMargin, rng.Float64(), rng.Float64() * min(1, 2*x)}
		for _, c := range []float64{p, x, x - x*x/2} {
			u := c
			for range 8 {
				u = math.Nextafter(u, 0)
				draws = append(draws, u)
			}
			u = c
			for range 8 {
				u = math.Nextafter(u, 1)
				draws = append(draws, u)
			}
		}
		for _, u := range draws {
			if u < 0 || u >= 1 {
				continue
			}
			checked++
			if u >= x+expMargin || u < x-x*x/2-expMargin {
				settled++
			}
			if got, want := shedVerdict(u, x), u < p; got != want {
				t.Fatalf("x=%g u=%.17g: verdict %v, draw < 1-exp(-x)=%.17g is %v", x, u, got, p, want)
			}
		}
	}
	if settled == 0 || settled == checked {
		t.Fatalf("%d of %d draws settled by the bounds: the test must exercise both the bounds and the exponential", settled, checked)
	}
	if !math.IsNaN(1-math.Exp(-math.NaN())) || shedVerdict(0.5, math.NaN()) {
		t.Fatal("a NaN hazard must shed nothing, as the comparison with a NaN probability does")
	}
}
