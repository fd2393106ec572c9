package query

import (
	"math"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/mongosim/mongoerr"
)

// accumulator computes one output field over a set of documents: a
// $group field, or a $setWindowFields output over its window.
type accumulator struct {
	op  string
	arg Expr
}

func compileAccumulator(field string, spec bson.RawValue) (accumulator, error) {
	d, ok := spec.DocumentOK()
	if !ok {
		return accumulator{}, mongoerr.New(40234, "The field '%s' must be an accumulator object", field)
	}
	elems, _ := bson.Raw(d).Elements()
	var acc accumulator
	found := false
	for _, e := range elems {
		switch e.Key() {
		case "$sum", "$avg", "$max", "$min", "$first", "$last", "$push", "$addToSet":
			arg, err := CompileExpr(e.Value())
			if err != nil {
				return accumulator{}, err
			}
			acc, found = accumulator{op: e.Key(), arg: arg}, true
		case "$count":
			acc, found = accumulator{op: "$count"}, true
		case "window":
		case "$stdDevPop", "$stdDevSamp", "$mergeObjects", "$top", "$bottom", "$topN", "$bottomN", "$firstN", "$lastN", "$maxN", "$minN", "$median", "$percentile":
			return accumulator{}, notImplemented("the accumulator " + e.Key())
		default:
			return accumulator{}, mongoerr.New(15952, "unknown group operator '%s'", e.Key())
		}
	}
	if !found {
		return accumulator{}, mongoerr.New(40234, "The field '%s' must be an accumulator object", field)
	}
	return acc, nil
}

// eval is the accumulator's argument on d ($count counts 1 a document).
func (a accumulator) eval(d bson.Raw) (bson.RawValue, error) {
	if a.arg == nil {
		return Int32(1), nil
	}
	return a.arg.Eval(d)
}

// accState is an accumulator's state in one $group group: add takes the
// argument's value on the next document and returns how many more bytes
// the state holds (negative: fewer).
type accState interface {
	add(v bson.RawValue) (int64, error)
	value() bson.RawValue
}

func (a accumulator) newState(lim Limits) accState {
	switch a.op {
	case "$sum", "$count":
		return &sumState{}
	case "$avg":
		return &sumState{avg: true}
	case "$max", "$min":
		return &extremeState{max: a.op == "$max"}
	case "$first":
		return &firstState{}
	case "$last":
		return &lastState{}
	case "$push":
		return &pushState{limit: lim.PushBytes}
	}
	return &addToSetState{limit: lim.AddToSetBytes, seen: map[string]bool{}}
}

type sumState struct {
	s   sumAcc
	avg bool
}

func (s *sumState) add(v bson.RawValue) (int64, error) { s.s.add(v); return 0, nil }
func (s *sumState) value() bson.RawValue {
	if s.avg {
		return s.s.avg()
	}
	return s.s.value()
}

// extremeState is $max or $min: null, undefined and missing values are
// left out; the first of equal values is kept.
type extremeState struct {
	best bson.RawValue
	max  bool
}

func (s *extremeState) add(v bson.RawValue) (int64, error) {
	if nullish(v) {
		return 0, nil
	}
	c := Compare(v, s.best)
	if s.best.Type == 0 || (s.max && c > 0) || (!s.max && c < 0) {
		grew := int64(len(v.Value) - len(s.best.Value))
		s.best = v
		return grew, nil
	}
	return 0, nil
}

func (s *extremeState) value() bson.RawValue {
	if s.best.Type == 0 {
		return Null
	}
	return s.best
}

// firstState and lastState are the value on the first or last document
// (null where it is missing).
type firstState struct {
	v    bson.RawValue
	seen bool
}

func (s *firstState) add(v bson.RawValue) (int64, error) {
	if s.seen {
		return 0, nil
	}
	s.v, s.seen = v, true
	return int64(len(v.Value)), nil
}

func (s *firstState) value() bson.RawValue { return orNull(s.v) }

type lastState struct{ v bson.RawValue }

func (s *lastState) add(v bson.RawValue) (int64, error) {
	grew := int64(len(v.Value) - len(s.v.Value))
	s.v = v
	return grew, nil
}

func (s *lastState) value() bson.RawValue { return orNull(s.v) }

func orNull(v bson.RawValue) bson.RawValue {
	if v.Type == 0 {
		return Null
	}
	return v
}

// pushState is $push: every value but missing ones, in order, within
// internalQueryMaxPushBytes (it cannot spill).
type pushState struct {
	vals         []bson.RawValue
	bytes, limit int64
}

func (s *pushState) add(v bson.RawValue) (int64, error) {
	if v.Type == 0 {
		return 0, nil
	}
	s.bytes += valueBytes(v)
	if s.bytes > s.limit {
		return 0, pushTooLarge("$push", s.limit)
	}
	s.vals = append(s.vals, v)
	return valueBytes(v), nil
}

func (s *pushState) value() bson.RawValue { return Array(s.vals) }

// addToSetState is $addToSet: the distinct values (equal as $eq sees
// them) in the order first seen, within internalQueryMaxAddToSetBytes.
type addToSetState struct {
	vals         []bson.RawValue
	seen         map[string]bool
	bytes, limit int64
}

func (s *addToSetState) add(v bson.RawValue) (int64, error) {
	if v.Type == 0 {
		return 0, nil
	}
	k := valueKey(v)
	if s.seen[k] {
		return 0, nil
	}
	grew := valueBytes(v) + int64(len(k))
	s.bytes += grew
	if s.bytes > s.limit {
		return 0, pushTooLarge("$addToSet", s.limit)
	}
	s.seen[k] = true
	s.vals = append(s.vals, v)
	return grew, nil
}

func (s *addToSetState) value() bson.RawValue { return Array(s.vals) }

// pushTooLarge is the error of a $push or $addToSet over its limit.
func pushTooLarge(op string, limit int64) error {
	return mongoerr.New(mongoerr.ExceededMemoryLimit, "%s used too much memory and cannot spill to disk. Memory limit: %d bytes", op, limit)
}

type groupStage struct {
	id     Expr
	fields []string
	accs   []accumulator
}

func compileGroup(spec bson.RawValue) (Stage, error) {
	d, ok := spec.DocumentOK()
	if !ok {
		return nil, mongoerr.New(15947, "a group's fields must be specified in an object")
	}
	elems, _ := bson.Raw(d).Elements()
	g := groupStage{}
	hasID := false
	for _, e := range elems {
		if e.Key() == "_id" {
			id, err := CompileExpr(e.Value())
			if err != nil {
				return nil, err
			}
			g.id, hasID = id, true
			continue
		}
		acc, err := compileAccumulator(e.Key(), e.Value())
		if err != nil {
			return nil, err
		}
		g.fields, g.accs = append(g.fields, e.Key()), append(g.accs, acc)
	}
	if !hasID {
		return nil, mongoerr.New(15955, "a group specification must include an _id")
	}
	return g, nil
}

// group is one $group group: its _id and its accumulators' states.
type group struct {
	id     bson.RawValue
	states []accState
}

func (groupStage) Name() string { return "$group" }

// open: $group reads its whole input, folding each document into its
// group's accumulators (it keeps states, not documents), then yields the
// groups in the order first seen.
func (g groupStage) open(x *Execution, in stream) stream {
	var order []*group
	loaded := false
	var t *memTracker
	return streamFunc(func() (bson.Raw, error) {
		if !loaded {
			loaded = true
			t = x.tracker("$group", x.lim.GroupBytes, true, func(int64) error {
				return mongoerr.New(mongoerr.QueryExceededMemoryLimitNoDiskUseAllowed,
					"Exceeded memory limit for $group, but didn't allow external sort. Pass allowDiskUse:true to opt in.")
			})
			var err error
			if order, err = g.load(x, t, in); err != nil {
				return nil, err
			}
		}
		if len(order) == 0 {
			t.release()
			return nil, nil
		}
		gr := order[0]
		order[0] = nil
		order = order[1:]
		keys := append([]string{"_id"}, g.fields...)
		vals := []bson.RawValue{gr.id}
		for _, s := range gr.states {
			vals = append(vals, s.value())
		}
		d := Build(keys, vals)
		return d, checkDocSize(d)
	})
}

func (g groupStage) load(x *Execution, t *memTracker, in stream) ([]*group, error) {
	groups := map[string]*group{}
	var order []*group
	for {
		d, err := in.next()
		if err != nil {
			return nil, err
		}
		if d == nil {
			return order, nil
		}
		if err := x.tick(); err != nil {
			return nil, err
		}
		id, err := g.id.Eval(d)
		if err != nil {
			return nil, err
		}
		id = orNull(id)
		k := valueKey(id)
		gr := groups[k]
		if gr == nil {
			gr = &group{id: id}
			for _, a := range g.accs {
				gr.states = append(gr.states, a.newState(x.lim))
			}
			groups[k] = gr
			order = append(order, gr)
			if err := t.grow(valueBytes(id)+int64(len(k)), false); err != nil {
				return nil, err
			}
		}
		for i, a := range g.accs {
			v, err := a.eval(d)
			if err != nil {
				return nil, err
			}
			x.steps++
			grew, err := gr.states[i].add(v)
			if err != nil {
				return nil, err
			}
			if grew > 0 {
				err = t.grow(grew, false)
			} else if grew < 0 {
				t.shrink(-grew, false)
			}
			if err != nil {
				return nil, err
			}
		}
	}
}

// valueKey is a string under which values equal as $eq sees them meet
// (1, 1.0 and int64 1 among them, also inside documents and arrays): the
// key of $group's groups, $setWindowFields' partitions and $addToSet's
// set.
func valueKey(v bson.RawValue) string {
	return string(appendValueKey(nil, v))
}

func appendValueKey(b []byte, v bson.RawValue) []byte {
	b = append(b, byte(typeOrder(v.Type)))
	switch {
	case typeOrder(v.Type) == 2, v.Type == bson.TypeMinKey, v.Type == bson.TypeMaxKey:
		return b
	case IsNumber(v):
		return appendNumberKey(b, v)
	case v.Type == bson.TypeEmbeddedDocument || v.Type == bson.TypeArray:
		elems, _ := bson.Raw(v.Value).Elements()
		b = strconv.AppendInt(b, int64(len(elems)), 10)
		for _, e := range elems {
			b = append(b, ':')
			b = strconv.AppendQuote(b, e.Key())
			b = appendValueKey(b, e.Value())
		}
		return append(b, ';')
	}
	b = strconv.AppendInt(b, int64(len(v.Value)), 10)
	b = append(b, ':')
	return append(b, v.Value...)
}

// appendNumberKey writes a number so that numbers of equal value (of
// any type) write the same: as a float when the float is exact, else as
// an integer.
func appendNumberKey(b []byte, v bson.RawValue) []byte {
	f := Float(v)
	if v.Type != bson.TypeDouble {
		i, _ := v.AsInt64OK()
		if f >= math.MaxInt64 || int64(f) != i { // (float64(MaxInt64) is 2^63)
			b = append(b, 'i')
			return strconv.AppendInt(b, i, 10)
		}
	}
	switch {
	case math.IsNaN(f):
		return append(b, "nan"...)
	case f == 0:
		return append(b, 'f', '0')
	}
	b = append(b, 'f')
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}
