package query

import (
	"bytes"
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/mongosim/mongoerr"
)

// Pipelines and filters come from any client: no bytes may crash the
// compiler, and a compiled pipeline runs on a few documents without
// panicking (errors are fine). It also runs under low memory limits
// (checkMemoryBounds): no stage holds more than its limit, a stage that
// needs more fails as mongod fails, spilling changes no result, and what
// an execution holds is released when it ends.
func FuzzCompile(f *testing.F) {
	for _, p := range []bson.D{
		{{Key: "$match", Value: bson.D{{Key: "v", Value: bson.D{{Key: "$gt", Value: 3}}}}}},
		{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$p"}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}}}},
		{{Key: "$setWindowFields", Value: bson.D{{Key: "partitionBy", Value: "$p"}, {Key: "sortBy", Value: bson.D{{Key: "v", Value: 1}}},
			{Key: "output", Value: bson.D{{Key: "r", Value: bson.D{{Key: "$sum", Value: "$v"}}}}}}}},
		{{Key: "$sort", Value: bson.D{{Key: "v", Value: -1}}}},
		{{Key: "$project", Value: bson.D{{Key: "v", Value: 1}, {Key: "w", Value: "$v"}}}},
		{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "all", Value: bson.D{{Key: "$push", Value: "$s"}}}}}},
		{{Key: "$setWindowFields", Value: bson.D{{Key: "sortBy", Value: bson.D{{Key: "v", Value: -1}}},
			{Key: "output", Value: bson.D{{Key: "r", Value: bson.D{{Key: "$addToSet", Value: "$p"}, {Key: "window", Value: bson.D{{Key: "documents", Value: bson.A{-1, 1}}}}}}}}}}},
		{{Key: "$unwind", Value: "$a"}},
	} {
		b, _ := bson.Marshal(p)
		f.Add(b)
	}
	docs := []bson.Raw{}
	for i := range 5 {
		b, _ := bson.Marshal(bson.D{{Key: "_id", Value: i}, {Key: "p", Value: i % 2}, {Key: "v", Value: i * 3}, {Key: "s", Value: "x"}, {Key: "a", Value: bson.A{i, "y"}}})
		docs = append(docs, b)
	}
	// Any bytes at all: the compiler checks its input itself.
	f.Fuzz(func(t *testing.T, stage []byte) {
		if fl, err := CompileFilter(stage); err == nil && fl != nil {
			for _, d := range docs {
				fl.Match(d)
			}
		}
		p, err := Compile("db", []bson.Raw{stage})
		if err != nil {
			return
		}
		_, _ = p.Run(&memEnv{}, docs)
		checkMemoryBounds(t, p, docs)
	})
}

// memoryErrors are the codes of a stage over a memory limit.
var memoryErrors = map[int32]bool{
	mongoerr.QueryExceededMemoryLimitNoDiskUseAllowed: true, 5414201: true,
	mongoerr.ExceededMemoryLimit: true, mongoerr.BSONObjectTooLarge: true,
}

// checkMemoryBounds runs p with no practical limits, then with limits a
// few documents exceed, without and with disk use.
func checkMemoryBounds(t *testing.T, p *Pipeline, docs []bson.Raw) {
	t.Helper()
	const low = 128
	free := Limits{SortBytes: 1 << 40, GroupBytes: 1 << 40, WindowBytes: 1 << 40, PushBytes: 1 << 40, AddToSetBytes: 1 << 40, OperationBytes: 1 << 40}
	a := p.Open(&memEnv{}, docs, free)
	want, err := a.Collect()
	if err != nil {
		return // the pipeline fails whatever the limits
	}
	released(t, "unlimited", a, want)
	needsMore := false
	for _, tr := range a.trackers {
		needsMore = needsMore || tr.peak > low
	}
	for _, disk := range []bool{false, true} {
		lim := free
		lim.SortBytes, lim.GroupBytes, lim.WindowBytes, lim.PushBytes, lim.AddToSetBytes, lim.AllowDiskUse = low, low, low, low, low, disk
		x := p.Open(&memEnv{}, docs, lim)
		got, err := x.Collect()
		for _, tr := range x.trackers {
			if tr.peak > max(tr.limit, tr.largest) {
				t.Fatalf("disk use %v: %s held %d bytes, over its limit %d", disk, tr.stage, tr.peak, tr.limit)
			}
		}
		var me *mongoerr.Error
		switch {
		case err != nil && (!errors.As(err, &me) || !memoryErrors[me.Code]):
			t.Fatalf("disk use %v: %v, not a memory limit's error", disk, err)
		case err != nil && !needsMore && me.Code != mongoerr.ExceededMemoryLimit:
			t.Fatalf("disk use %v: %v, though no stage needed more than %d bytes", disk, err, low)
		case err == nil && needsMore && !disk:
			t.Fatalf("a stage held more than %d bytes unlimited, and the limited run did not fail", low)
		case err == nil:
			if len(got) != len(want) {
				t.Fatalf("disk use %v: %d documents, %d without limits", disk, len(got), len(want))
			}
			for i := range want {
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("disk use %v: document %d is %v, %v without limits", disk, i, got[i], want[i])
				}
			}
			released(t, "limited", x, got)
		}
	}
	// The operation's limit holds whatever the stages may spill.
	lim := free
	lim.SortBytes, lim.GroupBytes, lim.WindowBytes, lim.AllowDiskUse, lim.OperationBytes = low, low, low, true, 4*low
	x := p.Open(&memEnv{}, docs, lim)
	if _, err := x.Collect(); err == nil && x.peakHeld > lim.OperationBytes {
		t.Fatalf("the execution held %d bytes, over the operation's limit %d", x.peakHeld, lim.OperationBytes)
	}
}

// released checks that an execution that ended holds only its output.
func released(t *testing.T, what string, x *Execution, out []bson.Raw) {
	t.Helper()
	var n int64
	for _, d := range out {
		n += int64(len(d))
	}
	if x.held != n {
		t.Fatalf("%s: the execution still holds %d bytes beyond its %d bytes of output", what, x.held-n, n)
	}
}
