package report

import (
	"math"
	"sort"

	"github.com/qmlsab/qmlsab/metric"
)

// Stratum is one block of a stratified comparison: the baseline's and the
// arm's values measured under one condition (on one host).
type Stratum struct {
	Base, Arm []float64
}

// VanElteren is van Elteren's stratified Wilcoxon rank-sum test of a shift
// between the arm and the baseline that may differ by stratum only in
// level: P. H. van Elteren, "On the combination of independent two-sample
// tests of Wilcoxon", Bulletin of the International Statistical Institute
// 37 (1960), 351–361.
//
// In each stratum h with m_h baseline and n_h arm values (N_h = m_h + n_h)
// the arm's values are ranked among the stratum's N_h values only (ties
// get mid-ranks), so a host's offset, which moves both arms, changes no
// rank. The stratum's rank sum W_h of the arm has, with no shift, mean
// n_h(N_h+1)/2 and variance m_h·n_h(N_h+1)/12, less the tie correction
// m_h·n_h·Σ(t³−t) / (12·N_h(N_h−1)) over groups of t tied values. Van
// Elteren's statistic is the weighted sum T = Σ W_h/(N_h+1), the weights
// that make the test locally most powerful when strata differ in size; T
// is approximately normal with mean Σ E[W_h]/(N_h+1) and variance
// Σ Var[W_h]/(N_h+1)², and Z = (T − E[T]) / √Var[T]. Z > 0 means the arm
// tends higher. The p-value is two-sided, from the normal approximation
// (with few values per stratum it is approximate; the exact U test of
// pooled values is reported beside it).
//
// Strata without values of both sides carry no comparison and are left
// out; used counts those that took part. With none, Z and p are NaN; when
// every stratum's values are all tied (no variance), Z is 0 and p 1.
func VanElteren(strata []Stratum) (z, p float64, used int) {
	var t, mean, variance float64
	for _, s := range strata {
		m, n := float64(len(s.Base)), float64(len(s.Arm))
		if m == 0 || n == 0 {
			continue
		}
		used++
		all := append(append([]float64{}, s.Base...), s.Arm...)
		ranks, ties := midRanks(all)
		w := 0.0
		for _, r := range ranks[len(s.Base):] {
			w += r
		}
		total := m + n
		weight := 1 / (total + 1)
		v := m * n * (total + 1) / 12
		if total > 1 {
			v -= m * n * ties / (12 * total * (total - 1))
		}
		t += weight * w
		mean += weight * n * (total + 1) / 2
		variance += weight * weight * v
	}
	switch {
	case used == 0:
		return math.NaN(), math.NaN(), 0
	case variance <= 0:
		return 0, 1, used
	}
	z = (t - mean) / math.Sqrt(variance)
	return z, math.Erfc(math.Abs(z) / math.Sqrt2), used
}

// midRanks ranks values 1..n, tied values sharing their mean rank, and
// returns Σ(t³−t) over the groups of t tied values.
func midRanks(values []float64) (ranks []float64, ties float64) {
	idx := make([]int, len(values))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return values[idx[a]] < values[idx[b]] })
	ranks = make([]float64, len(values))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && values[idx[j+1]] == values[idx[i]] {
			j++
		}
		r := float64(i+j)/2 + 1 // ranks i+1 … j+1, averaged
		for k := i; k <= j; k++ {
			ranks[idx[k]] = r
		}
		if t := float64(j - i + 1); t > 1 {
			ties += t*t*t - t
		}
		i = j + 1
	}
	return ranks, ties
}

// StratifiedHodgesLehmann is the shift from the baseline to the arm
// within strata: the median of arm − base over every pair of values from
// the same stratum (pairs across strata, which carry the strata's offsets,
// are not formed). NaN when no stratum has both sides.
func StratifiedHodgesLehmann(strata []Stratum) float64 {
	var d []float64
	for _, s := range strata {
		for _, b := range s.Base {
			for _, a := range s.Arm {
				d = append(d, a-b)
			}
		}
	}
	if len(d) == 0 {
		return math.NaN()
	}
	return metric.Median(d)
}
