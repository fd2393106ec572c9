package query

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/mongosim/mongoerr"
)

func compile(t *testing.T, stages ...bson.D) *Pipeline {
	t.Helper()
	var specs []bson.Raw
	for _, s := range stages {
		specs = append(specs, raw(t, s))
	}
	p, err := Compile("db", specs)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func wantCode(t *testing.T, what string, err error, code int32) {
	t.Helper()
	var me *mongoerr.Error
	if !errors.As(err, &me) || me.Code != code {
		t.Errorf("%s: got %v, want code %d", what, err, code)
	}
}

// paddedDocs are n documents of about size bytes each.
func paddedDocs(t *testing.T, n, size int) []bson.Raw {
	pad := strings.Repeat("x", size)
	docs := make([]bson.Raw, n)
	for i := range docs {
		docs[i] = raw(t, bson.D{{Key: "_id", Value: i}, {Key: "g", Value: i % 7}, {Key: "v", Value: int32(i)}, {Key: "pad", Value: pad}})
	}
	return docs
}

func smallLimits(stage int64, disk bool) Limits {
	l := DefaultLimits()
	l.SortBytes, l.GroupBytes, l.WindowBytes, l.AllowDiskUse = stage, stage, stage, disk
	return l
}

// Over its limit a blocking stage fails as mongod fails without
// allowDiskUse, and spills with it; everything the operation holds stays
// under the operation's limit, the spilled part included.
func TestBlockingStagesObeyTheirLimits(t *testing.T) {
	docs := paddedDocs(t, 200, 1000) // ~200 KB
	sortByV := bson.D{{Key: "$sort", Value: bson.D{{Key: "v", Value: -1}}}}
	group := bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$_id"}, {Key: "pad", Value: bson.D{{Key: "$first", Value: "$pad"}}}}}}
	window := bson.D{{Key: "$setWindowFields", Value: bson.D{{Key: "partitionBy", Value: "$g"}, {Key: "output", Value: bson.D{{Key: "n", Value: bson.D{{Key: "$count", Value: bson.D{}}}}}}}}}
	for _, tc := range []struct {
		name  string
		stage bson.D
		lim   Limits
		code  int32
	}{
		{"$sort", sortByV, smallLimits(64<<10, false), mongoerr.QueryExceededMemoryLimitNoDiskUseAllowed},
		{"$group", group, smallLimits(64<<10, false), mongoerr.QueryExceededMemoryLimitNoDiskUseAllowed},
		// The sort $setWindowFields begins with has the sort's limit; its
		// partitions have the stage's.
		{"$setWindowFields's sort", window, Limits{SortBytes: 64 << 10, WindowBytes: 1 << 20, OperationBytes: 1 << 30}, mongoerr.QueryExceededMemoryLimitNoDiskUseAllowed},
		{"$setWindowFields", window, Limits{SortBytes: 1 << 20, WindowBytes: 16 << 10, OperationBytes: 1 << 30}, 5414201},
	} {
		_, err := compile(t, tc.stage).Open(&memEnv{}, docs, tc.lim).Collect()
		wantCode(t, tc.name+" without disk use", err, tc.code)

		spill := tc.lim
		spill.AllowDiskUse = true
		x := compile(t, tc.stage).Open(&memEnv{}, docs, spill)
		got, err := x.Collect()
		if err != nil || len(got) == 0 {
			t.Errorf("%s with disk use: %d documents, %v", tc.name, len(got), err)
		}
		spills := int64(0)
		for _, tr := range x.trackers {
			spills += tr.spills
			if tr.peak > tr.limit {
				t.Errorf("%s: %s held %d bytes in memory, over its limit %d", tc.name, tr.stage, tr.peak, tr.limit)
			}
		}
		if spills == 0 {
			t.Errorf("%s with disk use: no spill", tc.name)
		}

		tight := spill
		tight.OperationBytes = 128 << 10
		_, err = compile(t, tc.stage).Open(&memEnv{}, docs, tight).Collect()
		wantCode(t, tc.name+" over the operation's limit", err, mongoerr.ExceededMemoryLimit)
	}
}

// A $sort followed by a $limit holds only the limit's documents, so it
// fits where the whole input would not, as in mongod.
func TestTopKSortHoldsOnlyTheLimit(t *testing.T) {
	docs := paddedDocs(t, 500, 1000)
	got, err := compile(t, bson.D{{Key: "$sort", Value: bson.D{{Key: "g", Value: 1}}}}, bson.D{{Key: "$limit", Value: 10}}).
		Open(&memEnv{}, docs, smallLimits(16<<10, false)).Collect()
	if err != nil {
		t.Fatal(err)
	}
	want := compile(t, bson.D{{Key: "$sort", Value: bson.D{{Key: "g", Value: 1}}}})
	all, err := want.Run(&memEnv{}, docs)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 10 {
		t.Fatalf("%d documents, want 10", len(got))
	}
	for i := range got {
		if string(got[i]) != string(all[i]) {
			t.Fatalf("document %d: top-k %v, full sort %v", i, got[i], all[i])
		}
	}
}

// $push and $addToSet cannot spill: over their limits they fail with
// ExceededMemoryLimit, disk use or not, in $group and in windows.
func TestPushAndAddToSetAreBounded(t *testing.T) {
	docs := paddedDocs(t, 100, 1000)
	lim := DefaultLimits()
	lim.PushBytes, lim.AddToSetBytes = 32<<10, 32<<10
	for _, op := range []string{"$push", "$addToSet"} {
		group := bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "all", Value: bson.D{{Key: op, Value: "$pad"}}}}}}
		if op == "$addToSet" {
			group = bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "all", Value: bson.D{{Key: op, Value: bson.A{"$_id", "$pad"}}}}}}}
		}
		_, err := compile(t, group).Open(&memEnv{}, docs, lim).Collect()
		wantCode(t, op+" in $group", err, mongoerr.ExceededMemoryLimit)
		window := bson.D{{Key: "$setWindowFields", Value: bson.D{{Key: "sortBy", Value: bson.D{{Key: "_id", Value: 1}}},
			{Key: "output", Value: bson.D{{Key: "all", Value: bson.D{{Key: op, Value: bson.A{"$_id", "$pad"}}}}}}}}}
		_, err = compile(t, window).Open(&memEnv{}, docs, lim).Collect()
		wantCode(t, op+" in $setWindowFields", err, mongoerr.ExceededMemoryLimit)
	}
}

// No stage produces a document over 16 MiB (and its 16 KiB of headroom).
func TestStagesProduceNoDocumentOver16MiB(t *testing.T) {
	docs := paddedDocs(t, 20, 1<<20) // 20 MiB in all
	for name, stage := range map[string]bson.D{
		"$group $push": {{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "all", Value: bson.D{{Key: "$push", Value: "$pad"}}}}}},
		"$setWindowFields $push": {{Key: "$setWindowFields", Value: bson.D{{Key: "output", Value: bson.D{
			{Key: "all", Value: bson.D{{Key: "$push", Value: "$pad"}}}}}}}},
		"$addFields": {{Key: "$addFields", Value: bson.D{{Key: "twice", Value: bson.A{"$pad", "$pad", "$pad", "$pad", "$pad", "$pad", "$pad", "$pad", "$pad", "$pad", "$pad", "$pad", "$pad", "$pad", "$pad", "$pad", "$pad"}}}}},
	} {
		_, err := compile(t, stage).Run(&memEnv{}, docs)
		wantCode(t, name, err, mongoerr.BSONObjectTooLarge)
	}
}

// $unwind yields its documents one at a time: reading the first of a
// 10,000-fold unwind of a large document builds one document, not all
// (the execution holds nothing for it).
func TestUnwindStreams(t *testing.T) {
	arr := make(bson.A, 10000)
	for i := range arr {
		arr[i] = int32(i)
	}
	doc := raw(t, bson.D{{Key: "_id", Value: 1}, {Key: "pad", Value: strings.Repeat("x", 1<<20)}, {Key: "arr", Value: arr}})
	p := compile(t, bson.D{{Key: "$unwind", Value: "$arr"}})
	x := p.Open(&memEnv{}, []bson.Raw{doc}, DefaultLimits())
	d, err := x.Next()
	if err != nil || d == nil {
		t.Fatalf("first document: %v", err)
	}
	if x.ticks > interruptEvery {
		t.Errorf("the first document took %d units of work, want one", x.ticks)
	}
	if got := d.Lookup("arr").Int32(); got != 0 {
		t.Errorf("first unwound value %d, want 0", got)
	}
}

// interruptingEnv fails interrupt checks once killed is set.
type interruptingEnv struct {
	memEnv
	killed atomic.Bool
	checks atomic.Int64
}

func (e *interruptingEnv) CheckForInterrupt() error {
	e.checks.Add(1)
	if e.killed.Load() {
		return mongoerr.New(mongoerr.Interrupted, "operation was interrupted")
	}
	return nil
}

// A stage that would run for hours (three nested $unwinds, 10⁹
// documents, counted) checks for interrupts as it goes: a kill stops it.
func TestLongStagesCheckForInterrupt(t *testing.T) {
	arr := make(bson.A, 1000)
	for i := range arr {
		arr[i] = int32(i)
	}
	doc := raw(t, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: arr}, {Key: "b", Value: arr}, {Key: "c", Value: arr}})
	for name, stages := range map[string][]bson.D{
		"$count": {{{Key: "$unwind", Value: "$a"}}, {{Key: "$unwind", Value: "$b"}}, {{Key: "$unwind", Value: "$c"}}, {{Key: "$count", Value: "n"}}},
		"$group": {{{Key: "$unwind", Value: "$a"}}, {{Key: "$unwind", Value: "$b"}}, {{Key: "$group", Value: bson.D{{Key: "_id", Value: "$c"}}}}},
		"$sort":  {{{Key: "$unwind", Value: "$a"}}, {{Key: "$unwind", Value: "$b"}}, {{Key: "$project", Value: bson.D{{Key: "a", Value: 1}}}}, {{Key: "$sort", Value: bson.D{{Key: "a", Value: -1}}}}},
	} {
		env := &interruptingEnv{}
		done := make(chan error, 1)
		go func() {
			_, err := compile(t, stages...).Run(env, []bson.Raw{doc})
			done <- err
		}()
		// Kill once the stage is under way (it has checked a few times).
		for env.checks.Load() < 10 {
			time.Sleep(time.Millisecond)
		}
		env.killed.Store(true)
		select {
		case err := <-done:
			wantCode(t, name, err, mongoerr.Interrupted)
		case <-time.After(2 * time.Minute):
			t.Fatalf("%s: still running 2 minutes after the kill", name)
		}
	}
}
