package query

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// naiveOver is the reference for a window output: the accumulator
// recomputed from scratch over the window's documents, as mongosim
// computed every window before it slid them.
func naiveOver(t *testing.T, a accumulator, docs []bson.Raw) bson.RawValue {
	t.Helper()
	var s sumAcc
	var best bson.RawValue
	var list []bson.RawValue
	switch a.op {
	case "$count":
		return Int32(int32(len(docs)))
	case "$first", "$last":
		if len(docs) == 0 {
			return Null
		}
		d := docs[0]
		if a.op == "$last" {
			d = docs[len(docs)-1]
		}
		v, _ := a.arg.Eval(d)
		return orNull(v)
	}
	for _, d := range docs {
		v, err := a.arg.Eval(d)
		if err != nil {
			t.Fatal(err)
		}
		switch a.op {
		case "$sum", "$avg":
			s.add(v)
		case "$push":
			if v.Type != 0 {
				list = append(list, v)
			}
		case "$addToSet":
			if v.Type != 0 && !slices.ContainsFunc(list, func(x bson.RawValue) bool { return equal(x, v) }) {
				list = append(list, v)
			}
		case "$max", "$min":
			if nullish(v) {
				continue
			}
			c := Compare(v, best)
			if best.Type == 0 || (a.op == "$max" && c > 0) || (a.op == "$min" && c < 0) {
				best = v
			}
		}
	}
	switch a.op {
	case "$sum":
		return s.value()
	case "$avg":
		return s.avg()
	case "$push", "$addToSet":
		return Array(list)
	}
	return orNull(best)
}

// naiveWindows is the reference $setWindowFields: partitions in key
// order, each sorted by sortBy, each output recomputed over each window.
func naiveWindows(t *testing.T, w windowStage, in []bson.Raw) []bson.Raw {
	t.Helper()
	type part struct {
		key  bson.RawValue
		docs []bson.Raw
	}
	var parts []*part
	for _, d := range in {
		k := Null
		if w.partition != nil {
			k, _ = w.partition.Eval(d)
			k = orNull(k)
		}
		i := slices.IndexFunc(parts, func(p *part) bool { return Compare(p.key, k) == 0 })
		if i < 0 {
			parts = append(parts, &part{key: k})
			i = len(parts) - 1
		}
		parts[i].docs = append(parts[i].docs, d)
	}
	slices.SortStableFunc(parts, func(a, b *part) int { return Compare(a.key, b.key) })
	var out []bson.Raw
	for _, p := range parts {
		docs := slices.Clone(p.docs)
		if w.sortBy != nil {
			Sort(docs, w.sortBy)
		}
		for i, d := range docs {
			keys, vals := docFields(d)
			for _, o := range w.outputs {
				lo, hi := 0, len(docs)-1
				if !o.loInf {
					lo = max(i+o.lo, 0)
				}
				if !o.hiInf {
					hi = min(i+o.hi, len(docs)-1)
				}
				var window []bson.Raw
				if lo <= hi {
					window = docs[lo : hi+1]
				}
				v := naiveOver(t, o.acc, window)
				if j := slices.Index(keys, o.field); j >= 0 {
					vals[j] = v
				} else {
					keys, vals = append(keys, o.field), append(vals, v)
				}
			}
			out = append(out, Build(keys, vals))
		}
	}
	return out
}

// randomValue is a value of a kind the accumulators treat differently:
// int32, int64 (some beyond int32), doubles that add up exactly (so the
// sliding sums must equal the recomputed ones bit for bit), infinities and
// NaN, null, strings, small documents, or nothing (a missing field).
func randomValue(r *rand.Rand) any {
	switch r.IntN(12) {
	case 0, 1, 2:
		return int32(r.IntN(21) - 10)
	case 3:
		return int64(r.IntN(5)) << 31
	case 4, 5:
		return float64(r.IntN(41)-20) / 4
	case 6:
		return []float64{math.Inf(1), math.Inf(-1), math.NaN()}[r.IntN(3)]
	case 7:
		return nil
	case 8:
		return fmt.Sprint("s", r.IntN(4))
	case 9:
		return bson.D{{Key: "k", Value: int32(r.IntN(3))}}
	case 10:
		return 1.0 // equal to int32 1: $addToSet and $min/$max keep the first
	}
	return missingValue{}
}

type missingValue struct{}

func randomDocs(t *testing.T, r *rand.Rand, n int) []bson.Raw {
	docs := make([]bson.Raw, n)
	for i := range docs {
		d := bson.D{{Key: "_id", Value: i}, {Key: "p", Value: r.IntN(3)}, {Key: "s", Value: r.IntN(n/2 + 1)}}
		if v := randomValue(r); v != (missingValue{}) {
			d = append(d, bson.E{Key: "v", Value: v})
		}
		docs[i] = raw(t, d)
	}
	return docs
}

func randomBound(r *rand.Rand) any {
	switch r.IntN(5) {
	case 0:
		return "unbounded"
	case 1:
		return "current"
	}
	return r.IntN(9) - 4
}

// Every accumulator over every kind of document window, sliding, gives
// what recomputing it over each window gives, on random inputs.
func TestWindowsMatchRecomputingEachWindow(t *testing.T) {
	r := rand.New(rand.NewPCG(35, 8))
	ops := []string{"$sum", "$avg", "$count", "$min", "$max", "$first", "$last", "$push", "$addToSet"}
	for trial := range 300 {
		docs := randomDocs(t, r, 1+r.IntN(40))
		var outputs bson.D
		for i, op := range ops {
			var arg any = "$v"
			if op == "$count" {
				arg = bson.D{}
			}
			spec := bson.D{{Key: op, Value: arg}}
			if r.IntN(4) > 0 {
				spec = append(spec, bson.E{Key: "window", Value: bson.D{{Key: "documents", Value: bson.A{randomBound(r), randomBound(r)}}}})
			}
			outputs = append(outputs, bson.E{Key: fmt.Sprint("o", i), Value: spec})
		}
		stage := bson.D{{Key: "sortBy", Value: bson.D{{Key: "s", Value: 1 - 2*r.IntN(2)}}}, {Key: "output", Value: outputs}}
		if r.IntN(2) == 0 {
			stage = append(bson.D{{Key: "partitionBy", Value: "$p"}}, stage...)
		}
		spec := raw(t, bson.D{{Key: "$setWindowFields", Value: stage}})
		p, err := Compile("db", []bson.Raw{spec})
		if err != nil {
			t.Fatalf("trial %d: %v: %v", trial, spec, err)
		}
		got, err := p.Run(&memEnv{}, docs)
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		want := naiveWindows(t, p.Stages[0].(windowStage), docs)
		if len(got) != len(want) {
			t.Fatalf("trial %d: %d documents, want %d", trial, len(got), len(want))
		}
		for i := range want {
			if !sameValue(Doc(got[i]), Doc(want[i])) {
				t.Fatalf("trial %d, stage %v, document %d:\n got  %v\n want %v", trial, spec, i, got[i], want[i])
			}
		}
	}
}

// sameValue is byte equality, except that any NaN equals any NaN (the
// bits of a NaN depend on how it was made).
func sameValue(a, b bson.RawValue) bool {
	if a.Type != b.Type {
		return false
	}
	switch a.Type {
	case bson.TypeDouble:
		return math.IsNaN(a.Double()) && math.IsNaN(b.Double()) || bytes.Equal(a.Value, b.Value)
	case bson.TypeEmbeddedDocument, bson.TypeArray:
		ea, _ := bson.Raw(a.Value).Elements()
		eb, _ := bson.Raw(b.Value).Elements()
		if len(ea) != len(eb) {
			return false
		}
		for i := range ea {
			if ea[i].Key() != eb[i].Key() || !sameValue(ea[i].Value(), eb[i].Value()) {
				return false
			}
		}
		return true
	}
	return bytes.Equal(a.Value, b.Value)
}

// countingExpr counts its evaluations.
type countingExpr struct {
	Expr
	n *int
}

func (c countingExpr) Eval(d bson.Raw) (bson.RawValue, error) { *c.n++; return c.Expr.Eval(d) }

func windowPipeline(t *testing.T, outputs bson.D) *Pipeline {
	t.Helper()
	p, err := Compile("db", []bson.Raw{raw(t, bson.D{{Key: "$setWindowFields", Value: bson.D{
		{Key: "sortBy", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "output", Value: outputs}}}})})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func windowed(op string, lo, hi any) bson.D {
	spec := bson.D{{Key: op, Value: "$v"}}
	if lo != nil {
		spec = append(spec, bson.E{Key: "window", Value: bson.D{{Key: "documents", Value: bson.A{lo, hi}}}})
	}
	return spec
}

func numberDocs(t *testing.T, n int) []bson.Raw {
	docs := make([]bson.Raw, n)
	for i := range docs {
		docs[i] = raw(t, bson.D{{Key: "_id", Value: i}, {Key: "v", Value: int32(i % 1000)}})
	}
	return docs
}

// A window's accumulator sees each document of the partition once: its
// argument is evaluated once a document, whatever the window (mongosim
// used to evaluate every window's documents again for every row: n² for
// an unbounded window, the merge workload's).
func TestWindowEvaluatesEachDocumentOnce(t *testing.T) {
	const n = 3000
	docs := numberDocs(t, n)
	for _, op := range []string{"$sum", "$avg", "$min", "$max", "$push", "$addToSet"} {
		for _, b := range [][2]any{{nil, nil}, {"unbounded", "current"}, {"current", "unbounded"}, {-50, 50}, {-3, 0}} {
			outputs := bson.D{{Key: "out", Value: windowed(op, b[0], b[1])}}
			if op == "$push" || op == "$addToSet" {
				if b[0] == nil || b[0] == "unbounded" || b[1] == "unbounded" {
					continue // their output is O(n) a document: the array is the cost
				}
			}
			p := windowPipeline(t, outputs)
			w := p.Stages[0].(windowStage)
			evals := 0
			w.outputs[0].acc.arg = countingExpr{w.outputs[0].acc.arg, &evals}
			p.Stages[0] = w
			if _, err := p.Run(&memEnv{}, docs); err != nil {
				t.Fatal(err)
			}
			if evals > n {
				t.Errorf("%s over %v: %d evaluations for %d documents, want at most one each", op, b, evals, n)
			}
		}
	}
}

// The accumulators' work is linear in the partition: each document
// enters and leaves each window once, whatever its bounds.
func TestWindowWorkIsLinear(t *testing.T) {
	const n = 20000
	docs := numberDocs(t, n)
	var outputs bson.D
	bounds := [][2]any{{nil, nil}, {"unbounded", "current"}, {"current", "unbounded"}, {-500, 500}, {-1, 1}}
	for i, op := range []string{"$sum", "$avg", "$min", "$max", "$count", "$first", "$last"} {
		for j, b := range bounds {
			outputs = append(outputs, bson.E{Key: fmt.Sprint("o", i, "_", j), Value: windowed(op, b[0], b[1])})
		}
	}
	x := windowPipeline(t, outputs).Open(&memEnv{}, docs, DefaultLimits())
	if _, err := x.Collect(); err != nil {
		t.Fatal(err)
	}
	// Per output and document: one add, one remove, one read.
	if limit := int64(3 * n * len(outputs)); x.steps > limit {
		t.Errorf("%d accumulator steps for %d outputs over %d documents, want at most %d", x.steps, len(outputs), n, limit)
	}
}
