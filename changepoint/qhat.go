package changepoint

import "math"

// maxMatrixUnits bounds the number of units (nights) for which the unit-level
// distance matrix is kept: 2048 units cost 32 MiB. Longer grouped series fall
// back to the sample-level computation, which needs no matrix. A variable so
// tests can force either path.
var maxMatrixUnits = 2048

// layout holds a series as units (single values or nights) in time order.
type layout struct {
	vals []float64 // every sample, unit after unit
	off  []int     // unit u holds vals[off[u]:off[u+1]]

	// Unit-level sums, present only when the matrix path is used: ud[g*G+h]
	// is the sum of |s−t| over samples s of unit g and t of unit h, and
	// within[g] the sum over unordered sample pairs inside unit g.
	ud     []float64
	within []float64
}

func (l *layout) units() int { return len(l.off) - 1 }

// newLayout builds the layout for groups (one slice per unit). Each group
// must be non-empty for the sample counts to be meaningful; callers check.
func newLayout(groups [][]float64) *layout {
	l := &layout{off: make([]int, len(groups)+1)}
	total := 0
	for i, g := range groups {
		total += len(g)
		l.off[i+1] = total
	}
	l.vals = make([]float64, 0, total)
	for _, g := range groups {
		l.vals = append(l.vals, g...)
	}
	G := len(groups)
	if G >= 2 && G <= maxMatrixUnits && total >= 2*G {
		l.buildMatrix()
	}
	return l
}

// seriesLayout builds the layout of a plain series: one value per unit. The
// sample path is always the cheaper one here, so no matrix is built.
func seriesLayout(series []float64) *layout {
	l := &layout{vals: series, off: make([]int, len(series)+1)}
	for i := range l.off {
		l.off[i] = i
	}
	return l
}

// buildMatrix fills ud and within: O(N²) for N samples, once per series.
func (l *layout) buildMatrix() {
	G := l.units()
	l.ud = make([]float64, G*G)
	l.within = make([]float64, G)
	for g := 0; g < G; g++ {
		xg := l.vals[l.off[g]:l.off[g+1]]
		var w float64
		for i, v := range xg {
			w += absDistSum(xg[:i], v)
		}
		l.within[g] = w
		for h := 0; h < g; h++ {
			xh := l.vals[l.off[h]:l.off[h+1]]
			var d float64
			for _, v := range xg {
				d += absDistSum(xh, v)
			}
			l.ud[g*G+h] = d
			l.ud[h*G+g] = d
		}
	}
}

// segData is what a segment [lo, hi) of units needs for any ordering of its
// units: quantities that do not change when the units are shuffled.
type segData struct {
	lo, hi   int
	n        int       // samples in the segment
	tot      []float64 // sample path: each sample's summed distance to the rest of the segment, in time order
	utot     []float64 // matrix path: each unit's summed distance to the other units' samples
	wAll     float64   // sum over all unordered sample pairs of the segment
	constant bool      // every sample equal: all q̂ are zero, shuffled or not
}

func (l *layout) segment(lo, hi int) *segData {
	s := &segData{lo: lo, hi: hi, n: l.off[hi] - l.off[lo]}
	x := l.vals[l.off[lo]:l.off[hi]]
	s.constant = true
	for _, v := range x {
		if v != x[0] {
			s.constant = false
			break
		}
	}
	if s.constant {
		return s
	}
	if l.ud != nil {
		G := l.units()
		s.utot = make([]float64, hi-lo)
		var sum float64
		for g := lo; g < hi; g++ {
			row := l.ud[g*G : (g+1)*G]
			var t float64
			for h := lo; h < hi; h++ {
				t += row[h]
			}
			s.utot[g-lo] = t
			sum += 0.5*t + l.within[g]
		}
		s.wAll = sum
		return s
	}
	s.tot = make([]float64, len(x))
	pairTotals(x, s.tot)
	var sum float64
	for _, t := range s.tot {
		sum += t
	}
	s.wAll = sum / 2
	return s
}

// scratch is per-goroutine working memory for scans of one segment.
type scratch struct {
	x, t  []float64
	order []int
}

// fitSamples sizes the sample buffers.
func (sc *scratch) fitSamples(samples int) {
	if cap(sc.x) < samples {
		sc.x = make([]float64, samples)
		sc.t = make([]float64, samples)
	}
	sc.x, sc.t = sc.x[:samples], sc.t[:samples]
}

// identityOrder sets sc.order to the units lo, lo+1, …, hi−1.
func (sc *scratch) identityOrder(lo, hi int) []int {
	if cap(sc.order) < hi-lo {
		sc.order = make([]int, hi-lo)
	}
	sc.order = sc.order[:hi-lo]
	for i := range sc.order {
		sc.order[i] = lo + i
	}
	return sc.order
}

// scan computes q̂ at every admissible boundary of segment s with its units
// taken in the given order (global unit indices). A boundary b (0 < b <
// len(order)) puts order[:b] in X; it is admissible when both sides hold at
// least minUnits units. scan returns the best boundary (relative to the
// segment start, -1 if none) and its q̂, and stores every admissible q̂ in
// out[b] when out is not nil.
//
// The sums are carried from one boundary to the next: when unit g moves from
// Y to X, with L its samples' distances to everything before them in the
// order (earlier units and earlier samples of g) and R = total − L the
// distances to everything after them,
//
//	X-sum += ΣL,  Y-sum −= ΣR,  cross += ΣR − ΣL,
//
// the within-unit pairs cancelling in the cross term. The totals do not
// depend on the order, so only L needs computing: half the pairs.
func (l *layout) scan(s *segData, order []int, minUnits int, sc *scratch, out []float64) (int, float64) {
	units := len(order)
	last := units - minUnits
	best, bestQ := -1, math.Inf(-1)
	if s.constant || minUnits < 1 || last < minUnits {
		return best, bestQ
	}
	var x, t []float64
	if l.ud == nil {
		// Lay the samples out in the given order; only the units that can
		// end up in X are needed.
		sc.fitSamples(s.n)
		base := l.off[s.lo]
		k := 0
		for _, g := range order[:last] {
			a, b := l.off[g], l.off[g+1]
			copy(sc.x[k:], l.vals[a:b])
			copy(sc.t[k:], s.tot[a-base:b-base])
			k += b - a
		}
		x, t = sc.x, sc.t
	}
	G := l.units()
	var cross, wx float64
	wy := s.wAll
	m := 0 // samples in X
	for u := 0; u < last; u++ {
		g := order[u]
		size := l.off[g+1] - l.off[g]
		var sl, sr float64
		if l.ud == nil {
			for i := m; i < m+size; i++ {
				left := absDistSum(x[:i], x[i])
				sl += left
				sr += t[i] - left
			}
		} else {
			d := gatherSum(l.ud[g*G:(g+1)*G], order[:u])
			w := l.within[g]
			sl = d + w
			sr = s.utot[g-s.lo] - d + w
		}
		cross += sr - sl
		wx += sl
		wy -= sr
		m += size
		b := u + 1
		if b < minUnits {
			continue
		}
		q := qhatOf(cross, wx, wy, m, s.n-m)
		if out != nil {
			out[b] = q
		}
		if q > bestQ {
			best, bestQ = b, q
		}
	}
	return best, bestQ
}

// qhatOf is q̂ from the cross sum, the two within sums and the part sizes.
func qhatOf(cross, wx, wy float64, m, n int) float64 {
	if m == 0 || n == 0 {
		return 0
	}
	fm, fn := float64(m), float64(n)
	e := 2 * cross / (fm * fn)
	if m > 1 {
		e -= 2 * wx / (fm * (fm - 1))
	}
	if n > 1 {
		e -= 2 * wy / (fn * (fn - 1))
	}
	return fm * fn / (fm + fn) * e
}

// absDistSum returns Σ|v − x[i]|. This loop carries almost all of the
// detector's time; four accumulators keep the additions independent.
func absDistSum(x []float64, v float64) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		q := x[i : i+4 : i+4]
		s0 += math.Abs(v - q[0])
		s1 += math.Abs(v - q[1])
		s2 += math.Abs(v - q[2])
		s3 += math.Abs(v - q[3])
	}
	for ; i < len(x); i++ {
		s0 += math.Abs(v - x[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// gatherSum returns Σ row[idx[i]].
func gatherSum(row []float64, idx []int) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(idx); i += 4 {
		q := idx[i : i+4 : i+4]
		s0 += row[q[0]]
		s1 += row[q[1]]
		s2 += row[q[2]]
		s3 += row[q[3]]
	}
	for ; i < len(idx); i++ {
		s0 += row[idx[i]]
	}
	return (s0 + s1) + (s2 + s3)
}

// pairTotals sets tot[i] to Σ_j |x[i] − x[j]| over the whole slice.
func pairTotals(x, tot []float64) {
	clear(tot)
	for i := 1; i < len(x); i++ {
		v := x[i]
		var acc float64
		for j, w := range x[:i] {
			d := math.Abs(v - w)
			acc += d
			tot[j] += d
		}
		tot[i] += acc
	}
}

// QHat returns q̂ for every split of series: element τ is the statistic for
// X = series[:τ] and Y = series[τ:]. Splits that leave either side with fewer
// than minSize values (minSize below 1 counts as 1) are 0, as is element 0.
// The computation is O(n²) time and O(n) memory. Values are not checked; a
// NaN or infinity makes the affected values NaN.
func QHat(series []float64, minSize int) []float64 {
	return everySplit(seriesLayout(series), minSize)
}

// GroupQHat returns q̂ for every split of a series of nights: element b is
// the statistic for X = every sample of groups[:b] and Y = every sample of
// groups[b:]. Splits that leave either side with fewer than minGroups nights
// (below 1 counts as 1) are 0, as is element 0; so is a split with no sample
// on one side. Time is O(N²) for N samples in all.
func GroupQHat(groups [][]float64, minGroups int) []float64 {
	return everySplit(newLayout(groups), minGroups)
}

// everySplit is q̂ at every split of l's units in their order (QHat,
// GroupQHat): 0 where a side has fewer than minUnits units (below 1
// counts as 1), and everywhere when there are fewer than two units.
func everySplit(l *layout, minUnits int) []float64 {
	n := l.units()
	out := make([]float64, n)
	if n < 2 {
		return out
	}
	var sc scratch
	l.scan(l.segment(0, n), sc.identityOrder(0, n), max(minUnits, 1), &sc, out)
	return out
}
