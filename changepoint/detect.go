package changepoint

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"
	"sync"
)

// Defaults applied to zero-valued Options fields.
const (
	DefaultPValue       = 0.05
	DefaultPermutations = 100
	DefaultSeed         = 1234
	DefaultMinSegment   = 2
	// MaxPermutations bounds Permutations: ten thousand times the
	// default, p-values down to 1e-5, in bounded time (each shuffle of a
	// candidate that passes is drawn) and memory.
	MaxPermutations = 100_000
)

// Options tunes detection. The zero value means the defaults.
type Options struct {
	// PValue is the significance level: a candidate is a change point when
	// its permutation p-value is at most PValue. 0 means DefaultPValue; it
	// must lie in (0, 1).
	PValue float64
	// Permutations is the number of shuffles per test, at most
	// MaxPermutations. 0 means DefaultPermutations. The smallest possible p-value is
	// 1/(Permutations+1), so it must be large enough for that to reach PValue.
	Permutations int
	// Seed selects the pseudo-random shuffles. 0 means DefaultSeed.
	Seed uint64
	// MinSegment is the fewest values (Detect) or nights (DetectGroups) any
	// segment may hold, the first and last included. 0 means
	// DefaultMinSegment.
	MinSegment int
	// Workers bounds the goroutines that run shuffles. 0 means GOMAXPROCS.
	// The results do not depend on it.
	Workers int
}

// DefaultOptions returns the options the zero value stands for.
func DefaultOptions() Options {
	return Options{
		PValue:       DefaultPValue,
		Permutations: DefaultPermutations,
		Seed:         DefaultSeed,
		MinSegment:   DefaultMinSegment,
		Workers:      runtime.GOMAXPROCS(0),
	}
}

// WithDefaults is o with every zero field set to its default (what
// Detect runs with), before any check of the values.
func (o Options) WithDefaults() Options {
	d := DefaultOptions()
	if o.PValue == 0 {
		o.PValue = d.PValue
	}
	if o.Permutations == 0 {
		o.Permutations = d.Permutations
	}
	if o.Seed == 0 {
		o.Seed = d.Seed
	}
	if o.MinSegment == 0 {
		o.MinSegment = d.MinSegment
	}
	if o.Workers == 0 {
		o.Workers = d.Workers
	}
	return o
}

func (o Options) resolved() (Options, error) {
	o = o.WithDefaults()
	switch {
	case !(o.PValue > 0 && o.PValue < 1):
		return o, fmt.Errorf("changepoint: PValue %v is not in (0, 1)", o.PValue)
	case o.Permutations < 0:
		return o, fmt.Errorf("changepoint: Permutations %d is negative", o.Permutations)
	case o.Permutations > MaxPermutations:
		return o, fmt.Errorf("changepoint: Permutations %d is more than %d", o.Permutations, MaxPermutations)
	case 1/float64(o.Permutations+1) > o.PValue:
		return o, fmt.Errorf("changepoint: %d permutations cannot give a p-value of %v or less", o.Permutations, o.PValue)
	case o.MinSegment < 0:
		return o, fmt.Errorf("changepoint: MinSegment %d is negative", o.MinSegment)
	case o.Workers < 0:
		return o, fmt.Errorf("changepoint: Workers %d is negative", o.Workers)
	}
	return o, nil
}

// ChangePoint is a detected change.
type ChangePoint struct {
	// Index is where the new segment starts: the index of its first value
	// for Detect, of its first night for DetectGroups. Everything before
	// Index belongs to the earlier segment.
	Index int
	// QHat is the divergence statistic of the split within the segment it
	// divided when it was found.
	QHat float64
	// PValue is the permutation p-value of the test that accepted it.
	PValue float64
	// Order is the step at which it was accepted: 1 for the first (the best
	// split of the whole series), 2 for the next, and so on.
	Order int
}

// Detect finds the change points of a series of single values, ordered by
// Index. A series too short to split, or constant, has none. It fails only
// for invalid options and for NaN or infinite values. The series is neither
// modified nor retained.
func Detect(series []float64, opts Options) ([]ChangePoint, error) {
	o, err := opts.resolved()
	if err != nil {
		return nil, err
	}
	for i, v := range series {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("changepoint: value %d is %v", i, v)
		}
	}
	if len(series) < 2 {
		return nil, nil
	}
	return detect(seriesLayout(series), o), nil
}

// DetectGroups finds the change points of a series of nights, each a slice
// of samples, ordered by Index (a night index). Splits fall only between
// nights; q̂ uses every sample; the permutation test shuffles whole nights
// (see the package documentation for why). Nights may hold different numbers
// of samples, but none may be empty: drop such nights first. It fails only
// for invalid options, empty nights and NaN or infinite values.
func DetectGroups(groups [][]float64, opts Options) ([]ChangePoint, error) {
	o, err := opts.resolved()
	if err != nil {
		return nil, err
	}
	for g, vs := range groups {
		if len(vs) == 0 {
			return nil, fmt.Errorf("changepoint: night %d has no samples", g)
		}
		for i, v := range vs {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("changepoint: night %d value %d is %v", g, i, v)
			}
		}
	}
	if len(groups) < 2 {
		return nil, nil
	}
	return detect(newLayout(groups), o), nil
}

// segment is a run of units between change points, with its best split
// and the best split of each of its shuffles drawn so far. Shuffles are drawn
// on demand and kept: later tests reuse them.
type segment struct {
	lo, hi int
	ok     bool    // false when the segment is too short or too uniform to split
	best   int     // boundary, a global unit index
	q      float64 // q̂ there
	sd     *segData
	perm   []float64 // perm[r]: best q̂ of shuffle r
}

type detector struct {
	l    *layout
	o    Options
	pool sync.Pool // *scratch
}

func detect(l *layout, o Options) []ChangePoint {
	d := &detector{l: l, o: o}
	d.pool.New = func() any { return new(scratch) }
	segs := []*segment{d.prepare(0, l.units())}
	var found []ChangePoint
	for {
		ci := -1
		for i, s := range segs {
			if s.ok && (ci < 0 || s.q > segs[ci].q) {
				ci = i
			}
		}
		if ci < 0 || !(segs[ci].q > 0) {
			break
		}
		cand := segs[ci]
		p, ok := d.test(segs, cand.q)
		if !ok {
			break
		}
		found = append(found, ChangePoint{Index: cand.best, QHat: cand.q, PValue: p, Order: len(found) + 1})
		left, right := d.prepare(cand.lo, cand.best), d.prepare(cand.best, cand.hi)
		segs = append(segs[:ci], append([]*segment{left, right}, segs[ci+1:]...)...)
	}
	sort.Slice(found, func(i, j int) bool { return found[i].Index < found[j].Index })
	return found
}

// tieTolerance makes a shuffle whose best q̂ equals the candidate's up to
// rounding count as reaching it.
const tieTolerance = 1e-10

// testChunk is how many shuffles are drawn between checks for an early
// verdict.
const testChunk = 20

// test runs the permutation test of a candidate with statistic q: shuffle r
// takes the best q̂ over all segments, each shuffled on its own, and the
// p-value is (c+1)/(R+1) for the c shuffles that reach q. It stops drawing
// once c is too large for the candidate to pass, since the p-value of a
// rejected candidate is not reported.
func (d *detector) test(segs []*segment, q float64) (float64, bool) {
	R := d.o.Permutations
	c := 0
	p := 1 / float64(R+1)
	for r0 := 0; r0 < R; r0 += testChunk {
		r1 := min(r0+testChunk, R)
		for _, s := range segs {
			if s.ok {
				d.draw(s, r1)
			}
		}
		for r := r0; r < r1; r++ {
			m := math.Inf(-1)
			for _, s := range segs {
				if s.ok && s.perm[r] > m {
					m = s.perm[r]
				}
			}
			if m >= q-tieTolerance*math.Abs(q) {
				c++
			}
		}
		p = float64(c+1) / float64(R+1)
		if p > d.o.PValue {
			return p, false
		}
	}
	return p, true
}

// prepare computes the best split of units [lo, hi).
func (d *detector) prepare(lo, hi int) *segment {
	seg := &segment{lo: lo, hi: hi}
	if hi-lo < 2*d.o.MinSegment {
		return seg
	}
	sd := d.l.segment(lo, hi)
	if sd.constant {
		// Every split of every shuffle is 0: nothing can beat a positive
		// candidate here.
		return seg
	}
	sc := d.pool.Get().(*scratch)
	b, q := d.l.scan(sd, sc.identityOrder(lo, hi), d.o.MinSegment, sc, nil)
	d.pool.Put(sc)
	if b < 0 {
		return seg
	}
	seg.best, seg.q, seg.ok, seg.sd = lo+b, q, true, sd
	return seg // seg.perm grows as shuffles are drawn: a test stopped early draws few
}

// draw extends seg.perm to n shuffles, on up to Workers goroutines.
func (d *detector) draw(seg *segment, n int) {
	from := len(seg.perm)
	if n <= from {
		return
	}
	seg.perm = slices.Grow(seg.perm, n-from)[:n]
	lo, hi := seg.lo, seg.hi
	workers := min(d.o.Workers, n-from)
	// Below about a million terms a goroutine costs more than it saves.
	terms := float64(seg.sd.n) * float64(seg.sd.n) // sample distances per shuffle
	if d.l.ud != nil {
		terms = float64(hi-lo) * float64(hi-lo) // night-matrix entries
	}
	if terms*float64(n-from) < 1<<20 {
		workers = 1
	}
	run := func(w int) {
		sc := d.pool.Get().(*scratch)
		defer d.pool.Put(sc)
		pcg := new(rand.PCG)
		rng := rand.New(pcg)
		for r := from + w; r < n; r += workers {
			pcg.Seed(d.o.Seed, streamOf(lo, hi, r))
			order := sc.identityOrder(lo, hi)
			for i := len(order) - 1; i > 0; i-- {
				j := rng.IntN(i + 1)
				order[i], order[j] = order[j], order[i]
			}
			_, seg.perm[r] = d.l.scan(seg.sd, order, d.o.MinSegment, sc, nil)
		}
	}
	if workers <= 1 {
		run(0)
		return
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Go(func() { run(w) })
	}
	wg.Wait()
}

// streamOf derives the PCG stream of shuffle r of segment [lo, hi), so each
// shuffle is reproducible on its own, whichever goroutine draws it.
func streamOf(lo, hi, r int) uint64 {
	return mix64(mix64(mix64(uint64(lo))^uint64(hi)) ^ uint64(r))
}

// mix64 is the SplitMix64 finaliser: a bijective scramble of 64 bits.
func mix64(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
