package query

import (
	"errors"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/mongosim/mongoerr"
)

func raw(t testing.TB, d bson.D) bson.Raw {
	t.Helper()
	b, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func val(t testing.TB, v any) bson.RawValue {
	if v == nil {
		return Null
	}
	typ, data, err := bson.MarshalValue(v)
	if err != nil {
		t.Fatal(err)
	}
	return bson.RawValue{Type: typ, Value: data}
}

func TestCompareFollowsBSONOrder(t *testing.T) {
	ordered := []any{nil, int32(-5), 2.5, int64(3), "a", "b", bson.D{{Key: "x", Value: 1}}, bson.A{1}, bson.NewObjectID(), false, true, bson.DateTime(5), bson.Timestamp{T: 1}}
	for i := 0; i+1 < len(ordered); i++ {
		a, b := val(t, ordered[i]), val(t, ordered[i+1])
		if Compare(a, b) >= 0 || Compare(b, a) <= 0 {
			t.Errorf("want %v < %v", ordered[i], ordered[i+1])
		}
	}
	if Compare(val(t, int32(1)), val(t, 1.0)) != 0 || Compare(val(t, int64(7)), val(t, int32(7))) != 0 {
		t.Error("numbers of different types must compare by value")
	}
	// A deprecated symbol sorts with the strings, by its text (it used to
	// panic: the fuzzer's input in testdata/fuzz/FuzzCompile sorted two).
	if Compare(val(t, bson.Symbol("a")), val(t, "b")) >= 0 || Compare(val(t, bson.Symbol("b")), val(t, bson.Symbol("b"))) != 0 ||
		Compare(val(t, "c"), val(t, bson.Symbol("b"))) <= 0 {
		t.Error("a symbol must compare with strings by its text")
	}
}

func TestFilterOperators(t *testing.T) {
	doc := raw(t, bson.D{{Key: "a", Value: 5}, {Key: "s", Value: "x"}, {Key: "arr", Value: bson.A{1, 9}}, {Key: "sub", Value: bson.D{{Key: "k", Value: 2}}}})
	for _, tc := range []struct {
		filter bson.D
		want   bool
	}{
		{bson.D{{Key: "a", Value: 5}}, true},
		{bson.D{{Key: "a", Value: 5.0}}, true},
		{bson.D{{Key: "a", Value: bson.D{{Key: "$gt", Value: 4}, {Key: "$lte", Value: 5}}}}, true},
		{bson.D{{Key: "a", Value: bson.D{{Key: "$gt", Value: "4"}}}}, false}, // no cross-type range match
		{bson.D{{Key: "a", Value: bson.D{{Key: "$in", Value: bson.A{1, 5}}}}}, true},
		{bson.D{{Key: "a", Value: bson.D{{Key: "$nin", Value: bson.A{1, 5}}}}}, false},
		{bson.D{{Key: "a", Value: bson.D{{Key: "$ne", Value: 5}}}}, false},
		{bson.D{{Key: "missing", Value: nil}}, true},
		{bson.D{{Key: "missing", Value: bson.D{{Key: "$exists", Value: false}}}}, true},
		{bson.D{{Key: "arr", Value: 9}}, true},
		{bson.D{{Key: "arr", Value: bson.D{{Key: "$gt", Value: 8}}}}, true},
		{bson.D{{Key: "sub.k", Value: 2}}, true},
		{bson.D{{Key: "$or", Value: bson.A{bson.D{{Key: "a", Value: 1}}, bson.D{{Key: "s", Value: "x"}}}}}, true},
		{bson.D{{Key: "$and", Value: bson.A{bson.D{{Key: "a", Value: 5}}, bson.D{{Key: "s", Value: "y"}}}}}, false},
	} {
		f, err := CompileFilter(raw(t, tc.filter))
		if err != nil {
			t.Fatalf("%v: %v", tc.filter, err)
		}
		if got := f.Match(doc); got != tc.want {
			t.Errorf("%v: match = %v, want %v", tc.filter, got, tc.want)
		}
	}
	_, err := CompileFilter(raw(t, bson.D{{Key: "a", Value: bson.D{{Key: "$regexx", Value: 1}}}}))
	var me *mongoerr.Error
	if !errors.As(err, &me) || me.Code != mongoerr.BadValue {
		t.Errorf("unknown operator: %v, want BadValue", err)
	}
}

type memEnv struct{ merged, out []bson.Raw }

func (e *memEnv) Scan(string, string) []bson.Raw            { return nil }
func (e *memEnv) CurrentOp(bson.Raw) ([]bson.Raw, error)    { return nil, nil }
func (e *memEnv) Merge(_ *MergeSpec, docs []bson.Raw) error { e.merged = docs; return nil }
func (e *memEnv) Out(_, _ string, docs []bson.Raw) error    { e.out = docs; return nil }
func (e *memEnv) CheckForInterrupt() error                  { return nil }

func run(t *testing.T, docs []bson.Raw, stages ...bson.D) []bson.M {
	t.Helper()
	var specs []bson.Raw
	for _, s := range stages {
		specs = append(specs, raw(t, s))
	}
	p, err := Compile("db", specs)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Run(&memEnv{}, docs)
	if err != nil {
		t.Fatal(err)
	}
	var res []bson.M
	for _, d := range out {
		var m bson.M
		if err := bson.Unmarshal(d, &m); err != nil {
			t.Fatal(err)
		}
		res = append(res, m)
	}
	return res
}

func events(t *testing.T) []bson.Raw {
	var docs []bson.Raw
	for i := 1; i <= 6; i++ {
		docs = append(docs, raw(t, bson.D{{Key: "_id", Value: i}, {Key: "u", Value: fmt.Sprint("u", i%2)}, {Key: "v", Value: int32(i)}}))
	}
	return docs
}

func TestSetWindowFieldsDocumentWindows(t *testing.T) {
	got := run(t, events(t), bson.D{{Key: "$setWindowFields", Value: bson.D{
		{Key: "partitionBy", Value: "$u"}, {Key: "sortBy", Value: bson.D{{Key: "_id", Value: 1}}},
		{Key: "output", Value: bson.D{
			{Key: "running", Value: bson.D{{Key: "$sum", Value: "$v"}, {Key: "window", Value: bson.D{{Key: "documents", Value: bson.A{"unbounded", "current"}}}}}},
			{Key: "moving", Value: bson.D{{Key: "$avg", Value: "$v"}, {Key: "window", Value: bson.D{{Key: "documents", Value: bson.A{-1, 1}}}}}},
			{Key: "total", Value: bson.D{{Key: "$sum", Value: "$v"}}},
		}}}}})
	// partition u0: v 2,4,6; partition u1: v 1,3,5 (u0 sorts first)
	want := []struct {
		id      int32
		running int32
		moving  float64
		total   int32
	}{{2, 2, 3, 12}, {4, 6, 4, 12}, {6, 12, 5, 12}, {1, 1, 2, 9}, {3, 4, 3, 9}, {5, 9, 4, 9}}
	if len(got) != len(want) {
		t.Fatalf("got %d docs", len(got))
	}
	for i, w := range want {
		g := got[i]
		if g["_id"] != w.id || g["running"] != w.running || g["moving"] != w.moving || g["total"] != w.total {
			t.Errorf("doc %d = %v, want %+v", i, g, w)
		}
	}
}

func TestGroupSortLimitProject(t *testing.T) {
	got := run(t, events(t),
		bson.D{{Key: "$match", Value: bson.D{{Key: "v", Value: bson.D{{Key: "$gte", Value: 2}}}}}},
		bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$u"}, {Key: "n", Value: bson.D{{Key: "$count", Value: bson.D{}}}},
			{Key: "max", Value: bson.D{{Key: "$max", Value: "$v"}}}, {Key: "avg", Value: bson.D{{Key: "$avg", Value: "$v"}}}}}},
		bson.D{{Key: "$sort", Value: bson.D{{Key: "max", Value: -1}}}},
		bson.D{{Key: "$limit", Value: 1}},
		bson.D{{Key: "$project", Value: bson.D{{Key: "_id", Value: 0}, {Key: "top", Value: "$max"}, {Key: "n", Value: 1}}}},
	)
	if len(got) != 1 || got[0]["top"] != int32(6) || got[0]["n"] != int32(3) || got[0]["_id"] != nil {
		t.Fatalf("got %v", got)
	}
	sum := run(t, events(t), bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "s", Value: bson.D{{Key: "$sum", Value: 1}}}}}})
	if sum[0]["s"] != int32(6) {
		t.Fatalf("$sum: 1 = %v", sum)
	}
}

func TestCompileRefusesWhatMongodRefuses(t *testing.T) {
	for _, tc := range []struct {
		stages []bson.D
		code   int32
	}{
		{[]bson.D{{{Key: "$foo", Value: bson.D{}}}}, mongoerr.UnrecognizedPipelineStage},
		// A stage mongod has and mongosim does not run is refused as not
		// implemented, not as unknown.
		{[]bson.D{{{Key: "$bucketAuto", Value: bson.D{}}}}, mongoerr.NotImplemented},
		// Off a router (which answers it itself) mongod refuses it, after
		// checking its argument.
		{[]bson.D{{{Key: "$shardedDataDistribution", Value: bson.D{}}}}, 6789101},
		{[]bson.D{{{Key: "$shardedDataDistribution", Value: 3}}}, 6789100},
		{[]bson.D{{{Key: "$out", Value: "x"}}, {{Key: "$match", Value: bson.D{}}}}, 40601},
		{[]bson.D{{{Key: "$match", Value: bson.D{}}}, {{Key: "$currentOp", Value: bson.D{}}}}, 40602},
		{[]bson.D{{{Key: "$project", Value: bson.D{{Key: "a", Value: 1}, {Key: "b", Value: 0}}}}}, 31254},
		{[]bson.D{{{Key: "$group", Value: bson.D{{Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}}}}}, 15955},
	} {
		var specs []bson.Raw
		for _, s := range tc.stages {
			specs = append(specs, raw(t, s))
		}
		_, err := Compile("db", specs)
		var me *mongoerr.Error
		if !errors.As(err, &me) || me.Code != tc.code {
			t.Errorf("%v: got %v, want code %d", tc.stages, err, tc.code)
		}
	}
}

// Documents that pass the driver's Validate but hold a value whose own bytes
// are malformed (here a string declaring length 0, one level down) are
// refused as mongod refuses them, never read: a fuzzer found this one
// panicking the $project compiler.
func TestMalformedValuesBelowTheTopAreRefusedNotRead(t *testing.T) {
	project := bson.Raw("%\x00\x00\x00\x03$project\x00\x16\x00\x00\x00\x10v\x00\x00\x00\x00\x00\x02v$\x03w\x00\x00\x00\x00\x00\x00\x00")
	inner := project.Lookup("$project").Document()
	if project.Validate() != nil || inner.Validate() != nil {
		t.Fatal("the driver's Validate refuses the case: it tests nothing")
	}
	wantInvalid := func(what string, err error) {
		t.Helper()
		var me *mongoerr.Error
		if !errors.As(err, &me) || me.Code != mongoerr.InvalidBSON {
			t.Errorf("%s: got %v, want InvalidBSON", what, err)
		}
	}
	_, err := Compile("db", []bson.Raw{project})
	wantInvalid("pipeline", err)
	_, err = CompileProjection(inner)
	wantInvalid("projection", err)
	_, err = CompileFilter(inner)
	wantInvalid("filter", err)
	_, err = CompileSort(inner)
	wantInvalid("sort", err)
	if _, ok := IDEquality(inner); ok {
		t.Error("IDEquality read a malformed filter")
	}
}

func TestMergeOnRefusesNonStringFields(t *testing.T) {
	_, err := Compile("db", []bson.Raw{raw(t, bson.D{{Key: "$merge", Value: bson.D{{Key: "into", Value: "c"}, {Key: "on", Value: bson.A{"_id", 7}}}}})})
	var me *mongoerr.Error
	if !errors.As(err, &me) || me.Code != mongoerr.FailedToParse {
		t.Errorf("$merge on: [\"_id\", 7]: got %v, want FailedToParse", err)
	}
}

// What mongosim does not implement is refused as not implemented, never
// answered approximately: a positional projection used to be dropped.
func TestUnimplementedIsRefusedNotApproximated(t *testing.T) {
	refused := func(what string, err error) {
		t.Helper()
		var me *mongoerr.Error
		if !errors.As(err, &me) || me.Code != mongoerr.NotImplemented {
			t.Errorf("%s: got %v, want NotImplemented", what, err)
		}
	}
	_, err := CompileProjection(raw(t, bson.D{{Key: "tags.$", Value: 1}}))
	refused("positional projection", err)
	_, err = CompileProjection(raw(t, bson.D{{Key: "tags", Value: bson.D{{Key: "$slice", Value: 1}}}}))
	refused("$slice projection", err)
	_, err = CompileFilter(raw(t, bson.D{{Key: "name", Value: bson.D{{Key: "$regex", Value: "^a"}}}}))
	refused("$regex", err)
	_, err = CompileFilter(raw(t, bson.D{{Key: "name", Value: bson.Regex{Pattern: "^a"}}}))
	refused("regex equality", err)
	_, err = CompileExpr(val(t, bson.D{{Key: "$concat", Value: bson.A{"a", "b"}}}))
	refused("$concat", err)
}
