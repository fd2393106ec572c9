package query

import (
	"math"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/mongosim/mongoerr"
)

func (windowStage) Name() string { return "$setWindowFields" }

// open: $setWindowFields sorts its input by partition, then by sortBy, as
// mongod does (a $sort within internalQueryMaxBlockingSortMemoryUsageBytes),
// then yields the partitions' documents one at a time with the outputs
// added. A partition is held while its documents are output (within
// internalDocumentSourceSetWindowFieldsMaxMemoryBytes, which it may spill
// past with disk use allowed), and each output's window slides over it: a
// document's value is evaluated once, when it enters a window, and each
// output keeps the state its accumulator needs to add the documents that
// enter and drop those that leave (a running sum, a monotonic queue for
// $min/$max), so a partition of n documents costs O(n) accumulator steps
// whatever the windows, not O(n) per document.
func (w windowStage) open(x *Execution, in stream) stream {
	return &windowStream{w: w, x: x, in: in}
}

type windowStream struct {
	w  windowStage
	x  *Execution
	in stream

	loaded bool
	// rows is the sorted input not yet output; its first key is the
	// partition's.
	rows         []keyed
	sortT, partT *memTracker
	// part is the partition being output, from row i on.
	part  []keyed
	i     int
	funcs []*windowFunc
}

func (s *windowStream) next() (bson.Raw, error) {
	x := s.x
	if !s.loaded {
		s.loaded = true
		if err := s.load(); err != nil {
			return nil, err
		}
		s.partT = x.tracker("$setWindowFields", x.lim.WindowBytes, true, func(used int64) error {
			return mongoerr.New(5414201, "Exceeded memory limit in DocumentSourceSetWindowFields, used %d bytes but max allowed is %d", used, x.lim.WindowBytes)
		})
	}
	if s.i >= len(s.part) {
		s.partT.release()
		if len(s.rows) == 0 {
			s.sortT.release()
			return nil, nil
		}
		if err := s.nextPartition(); err != nil {
			return nil, err
		}
	}
	if err := x.tick(); err != nil {
		return nil, err
	}
	row := s.part[s.i]
	keys, vals := docFields(row.doc)
	for _, f := range s.funcs {
		v, err := f.at(s.i)
		if err != nil {
			return nil, err
		}
		if j := slices.Index(keys, f.o.field); j >= 0 {
			vals[j] = v
		} else {
			keys, vals = append(keys, f.o.field), append(vals, v)
		}
	}
	s.i++
	d := Build(keys, vals)
	return d, checkDocSize(d)
}

// load reads and sorts the whole input.
func (s *windowStream) load() error {
	x := s.x
	s.sortT = x.tracker("$sort", x.lim.SortBytes, true, sortOverLimit(x.lim.SortBytes))
	for seq := 0; ; seq++ {
		d, err := s.in.next()
		if err != nil {
			return err
		}
		if d == nil {
			break
		}
		if err := x.tick(); err != nil {
			return err
		}
		p := Null
		if s.w.partition != nil {
			if p, err = s.w.partition.Eval(d); err != nil {
				return err
			}
		}
		k := keyed{doc: d, seq: seq, vals: make([]sortValue, 1+len(s.w.sortBy))}
		k.vals[0] = sortValue{v: orNull(p)}
		for i, key := range s.w.sortBy {
			k.vals[1+i] = sortKeyOf(d, key)
		}
		if err := s.sortT.grow(int64(len(d)), false); err != nil {
			return err
		}
		s.rows = append(s.rows, k)
	}
	keys := append([]SortKey{{}}, s.w.sortBy...)
	return sortKeyed(x, s.rows, keys)
}

// nextPartition takes the next partition's rows from the sorted input:
// they move from the sort's memory to the stage's.
func (s *windowStream) nextPartition() error {
	n := 1
	for n < len(s.rows) && compareSortValues(s.rows[n].vals[0], s.rows[0].vals[0]) == 0 {
		n++
	}
	s.part, s.rows, s.i = s.rows[:n], s.rows[n:], 0
	var bytes int64
	for _, r := range s.part {
		bytes += int64(len(r.doc))
	}
	s.sortT.shrink(bytes, false)
	if err := s.partT.grow(bytes, false); err != nil {
		return err
	}
	s.funcs = s.funcs[:0]
	for i := range s.w.outputs {
		s.funcs = append(s.funcs, newWindowFunc(s.x, s.partT, &s.w.outputs[i], s.part))
	}
	return nil
}

// windowFunc is one output over one partition: the documents [a, b) of the
// partition are in its window, added to its state in order and removed
// from it oldest first.
type windowFunc struct {
	x    *Execution
	t    *memTracker
	o    *windowOutput
	rows []keyed
	// vals are the accumulator's argument on each row, evaluated once
	// when first needed (ok).
	vals []bson.RawValue
	ok   []bool
	a, b int

	sum removableSum
	// queue holds, for $min and $max, the rows of the window that may
	// still become its extreme: their values strictly decrease (for $max)
	// from the front, the first of equal values kept.
	queue []int
	// pushBytes is what the $push or $addToSet window holds; counts and
	// keys are $addToSet's multiset.
	pushBytes int64
	counts    map[string]int
	keys      []string
	// cache is the last array output, for the window [cacheA, cacheB).
	cache          bson.RawValue
	cacheA, cacheB int
}

func newWindowFunc(x *Execution, t *memTracker, o *windowOutput, rows []keyed) *windowFunc {
	f := &windowFunc{x: x, t: t, o: o, rows: rows, vals: make([]bson.RawValue, len(rows)), ok: make([]bool, len(rows)), cacheA: -1}
	if o.acc.op == "$addToSet" {
		f.counts, f.keys = map[string]int{}, make([]string, len(rows))
	}
	return f
}

// value is the accumulator's argument on row j.
func (f *windowFunc) value(j int) (bson.RawValue, error) {
	if f.ok[j] {
		return f.vals[j], nil
	}
	v, err := f.o.acc.eval(f.rows[j].doc)
	if err != nil {
		return Missing, err
	}
	if err := f.t.grow(valueBytes(v), false); err != nil {
		return Missing, err
	}
	f.vals[j], f.ok[j] = v, true
	return v, nil
}

// at is the output for row i: the window slides to row i's bounds and
// the state gives its value.
func (f *windowFunc) at(i int) (bson.RawValue, error) {
	n := len(f.rows)
	lo, hi := 0, n-1
	if !f.o.loInf {
		lo = max(i+f.o.lo, 0)
	}
	if !f.o.hiInf {
		hi = min(i+f.o.hi, n-1)
	}
	// Both ends only move forward as i grows.
	a, b := lo, max(hi+1, lo)
	for ; f.a < min(a, f.b); f.a++ {
		if err := f.remove(f.a); err != nil {
			return Missing, err
		}
	}
	f.a = max(f.a, a)
	f.b = max(f.b, f.a)
	for ; f.b < b; f.b++ {
		if err := f.add(f.b); err != nil {
			return Missing, err
		}
	}
	f.x.steps++
	return f.result()
}

func (f *windowFunc) add(j int) error {
	f.x.steps++
	if err := f.x.tick(); err != nil {
		return err
	}
	switch f.o.acc.op {
	case "$count", "$first", "$last":
		return nil // the window's ends are enough
	}
	v, err := f.value(j)
	if err != nil {
		return err
	}
	switch f.o.acc.op {
	case "$sum", "$avg":
		f.sum.add(v)
	case "$max", "$min":
		if nullish(v) {
			return nil
		}
		for len(f.queue) > 0 {
			c := Compare(f.vals[f.queue[len(f.queue)-1]], v)
			if (f.o.acc.op == "$max" && c >= 0) || (f.o.acc.op == "$min" && c <= 0) {
				break
			}
			f.queue = f.queue[:len(f.queue)-1]
		}
		f.queue = append(f.queue, j)
	case "$push":
		if v.Type == 0 {
			return nil
		}
		f.pushBytes += valueBytes(v)
		if f.pushBytes > f.x.lim.PushBytes {
			return pushTooLarge("$push", f.x.lim.PushBytes)
		}
		return f.t.grow(valueBytes(v), true)
	case "$addToSet":
		if v.Type == 0 {
			return nil
		}
		k := valueKey(v)
		f.keys[j] = k
		f.counts[k]++
		if f.counts[k] > 1 {
			return nil
		}
		grew := valueBytes(v) + int64(len(k))
		f.pushBytes += grew
		if f.pushBytes > f.x.lim.AddToSetBytes {
			return pushTooLarge("$addToSet", f.x.lim.AddToSetBytes)
		}
		return f.t.grow(grew, true)
	}
	return nil
}

// remove drops row j, the oldest in the window.
func (f *windowFunc) remove(j int) error {
	f.x.steps++
	if err := f.x.tick(); err != nil {
		return err
	}
	v := f.vals[j]
	switch f.o.acc.op {
	case "$sum", "$avg":
		f.sum.remove(v)
	case "$max", "$min":
		if len(f.queue) > 0 && f.queue[0] == j {
			f.queue = f.queue[1:]
		}
	case "$push":
		if v.Type != 0 {
			f.pushBytes -= valueBytes(v)
			f.t.shrink(valueBytes(v), true)
		}
	case "$addToSet":
		if v.Type == 0 {
			return nil
		}
		k := f.keys[j]
		if f.counts[k]--; f.counts[k] == 0 {
			delete(f.counts, k)
			shrunk := valueBytes(v) + int64(len(k))
			f.pushBytes -= shrunk
			f.t.shrink(shrunk, true)
		}
	}
	return nil
}

// result is the accumulator's value over the window [a, b).
func (f *windowFunc) result() (bson.RawValue, error) {
	switch f.o.acc.op {
	case "$count":
		return Int32(int32(f.b - f.a)), nil
	case "$first", "$last":
		if f.a >= f.b {
			return Null, nil
		}
		j := f.a
		if f.o.acc.op == "$last" {
			j = f.b - 1
		}
		v, err := f.value(j)
		return orNull(v), err
	case "$sum":
		return f.sum.value(), nil
	case "$avg":
		return f.sum.avg(), nil
	case "$max", "$min":
		if len(f.queue) == 0 {
			return Null, nil
		}
		return f.vals[f.queue[0]], nil
	}
	// $push and $addToSet: an array of the window's values, built anew
	// only when the window changed.
	if f.cacheA == f.a && f.cacheB == f.b {
		return f.cache, nil
	}
	var list []bson.RawValue
	var seen map[string]bool
	if f.o.acc.op == "$addToSet" {
		seen = map[string]bool{}
	}
	for j := f.a; j < f.b; j++ {
		if err := f.x.tick(); err != nil {
			return Missing, err
		}
		v := f.vals[j]
		if v.Type == 0 {
			continue
		}
		if seen != nil {
			if seen[f.keys[j]] {
				continue
			}
			seen[f.keys[j]] = true
		}
		list = append(list, v)
	}
	f.cache, f.cacheA, f.cacheB = Array(list), f.a, f.b
	return f.cache, nil
}

// removableSum is $sum and $avg over a sliding window: numbers enter and
// leave. It answers as sumAcc does over the window's values (integers stay
// integers until a double is in the window); infinities and NaN are
// counted apart, so one leaving the window leaves no trace in the sum.
type removableSum struct {
	i                   int64
	f                   float64
	n, doubles, wide    int
	nan, posInf, negInf int
}

func (s *removableSum) step(v bson.RawValue, sign int) {
	if !IsNumber(v) {
		return
	}
	s.n += sign
	switch v.Type {
	case bson.TypeDouble:
		s.doubles += sign
		switch d := v.Double(); {
		case math.IsNaN(d):
			s.nan += sign
		case math.IsInf(d, 1):
			s.posInf += sign
		case math.IsInf(d, -1):
			s.negInf += sign
		default:
			s.f += float64(sign) * d
		}
		if s.doubles == 0 {
			s.f = 0 // no rounding left behind
		}
	case bson.TypeInt64:
		s.wide += sign
		s.i += int64(sign) * v.Int64()
	default:
		s.i += int64(sign) * int64(v.Int32())
	}
}

func (s *removableSum) add(v bson.RawValue)    { s.step(v, 1) }
func (s *removableSum) remove(v bson.RawValue) { s.step(v, -1) }

func (s *removableSum) doubleSum() float64 {
	switch {
	case s.nan > 0 || (s.posInf > 0 && s.negInf > 0):
		return math.NaN()
	case s.posInf > 0:
		return math.Inf(1)
	case s.negInf > 0:
		return math.Inf(-1)
	}
	return s.f
}

func (s *removableSum) value() bson.RawValue {
	switch {
	case s.doubles > 0:
		return Double(s.doubleSum() + float64(s.i))
	case s.wide > 0 || s.i > math.MaxInt32 || s.i < math.MinInt32:
		return Int64(s.i)
	}
	return Int32(int32(s.i))
}

func (s *removableSum) avg() bson.RawValue {
	if s.n == 0 {
		return Null
	}
	return Double((s.doubleSum() + float64(s.i)) / float64(s.n))
}
