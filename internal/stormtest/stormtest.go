// Package stormtest holds what several packages' tests share: building
// cmd/mongosim as a binary to launch like mongod, and launching it as a
// process of its own for a benchmark that measures its own; the small real
// spill_to_disk data and query the wire tests drive, their clients, and
// an actor run beside them with the kills it reports; the checks of a run
// folder that a run interrupted and resumed must pass; and small helpers
// (a folder's names, a buffer goroutines write while the test reads it).
package stormtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/qmlsab/qmlsab/mongosim/mongoerr"
	"github.com/qmlsab/qmlsab/store"
)

// BuildMongosim builds cmd/mongosim into dir and returns the binary's path.
func BuildMongosim(dir string) (string, error) {
	_, file, _, _ := runtime.Caller(0)
	pkg := filepath.Join(filepath.Dir(file), "..", "..", "cmd", "mongosim")
	bin := filepath.Join(dir, "mongosim")
	if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		return "", fmt.Errorf("building cmd/mongosim: %v\n%s", err, out)
	}
	return bin, nil
}

// MainWithMongosim is a TestMain for packages that launch cmd/mongosim as
// a process: it builds the binary into a temporary folder, stores its path
// in *bin, runs the tests, and removes the folder.
func MainWithMongosim(m *testing.M, bin *string) {
	dir, err := os.MkdirTemp("", "mongosim-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if *bin, err = BuildMongosim(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// LoadData writes the storm's small real collection: 200 documents of
// ~1 KB in 10 partitions (with --simScanScale 200 they stand for 40 MB).
func LoadData(t testing.TB, ctx context.Context, coll *mongo.Collection) {
	t.Helper()
	pad := strings.Repeat("x", 900)
	var docs []any
	for i := range 200 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "p", Value: i % 10}, {Key: "v", Value: i}, {Key: "pad", Value: pad}})
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
}

// Open starts one storm query, a $setWindowFields over the partitions
// read in batches of batch documents, and returns its cursor: between
// getMores it is an idle cursor holding the stage's buffer.
func Open(ctx context.Context, coll *mongo.Collection, batch int32) (*mongo.Cursor, error) {
	return coll.Aggregate(ctx, mongo.Pipeline{{{Key: "$setWindowFields", Value: bson.D{
		{Key: "partitionBy", Value: "$p"}, {Key: "sortBy", Value: bson.D{{Key: "_id", Value: 1}}},
		{Key: "output", Value: bson.D{{Key: "s", Value: bson.D{{Key: "$sum", Value: "$v"}}}}}}}}},
		options.Aggregate().SetAllowDiskUse(true).SetBatchSize(batch))
}

// Query runs one storm query to the end (Open, drained by getMores).
func Query(ctx context.Context, coll *mongo.Collection, batch int32) error {
	cur, err := Open(ctx, coll, batch)
	if err != nil {
		return err
	}
	defer cur.Close(context.Background())
	for cur.Next(ctx) {
	}
	return cur.Err()
}

// Queries are storm queries run one after another, on a few clients at
// once, until Stop: a test waits for the events it is about (a kill, an
// interrupted query) instead of for a fixed number of queries.
type Queries struct {
	mu   sync.Mutex
	errs []error
	stop context.CancelFunc
	wg   sync.WaitGroup
}

// StartQueries runs Query on coll in batches of 10 documents, n at once,
// until Stop or the end of ctx.
func StartQueries(ctx context.Context, coll *mongo.Collection, n int) *Queries {
	q := &Queries{}
	qctx, stop := context.WithCancel(ctx)
	q.stop = stop
	q.wg.Add(n)
	for range n {
		go func() {
			defer q.wg.Done()
			for qctx.Err() == nil {
				err := Query(qctx, coll, 10)
				if qctx.Err() != nil {
					return // stopped, not failed
				}
				q.mu.Lock()
				q.errs = append(q.errs, err)
				q.mu.Unlock()
			}
		}()
	}
	return q
}

// Results are the ends of the queries finished so far: nil for one that
// completed, else its error.
func (q *Queries) Results() []error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.errs)
}

// Stop ends the queries and returns how each finished one ended.
func (q *Queries) Stop() []error {
	q.stop()
	q.wg.Wait()
	return q.Results()
}

// WaitFor polls cond every 20 ms until it holds or ctx ends, and reports
// whether it held: a test waits for an event, bounded by its deadline,
// never for a fixed time.
func WaitFor(ctx context.Context, cond func() bool) bool {
	for !cond() {
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return cond()
		}
	}
	return true
}

// Interrupted counts the errors that are the server's Interrupted (code
// 11601): the queries a killOp ended.
func Interrupted(errs []error) int {
	n := 0
	for _, err := range errs {
		var ce mongo.CommandError
		if errors.As(err, &ce) && ce.Code == mongoerr.Interrupted {
			n++
		}
	}
	return n
}

// Connect is a client of uri named app (the name $currentOp and the
// actors see), its reads not retried so that a killed query's error
// reaches the test; it disconnects when the test ends.
func Connect(t testing.TB, uri, app string) *mongo.Client {
	t.Helper()
	c, err := mongo.Connect(options.Client().ApplyURI(uri).SetAppName(app).SetRetryReads(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Disconnect(context.Background()) })
	return c
}

// ValidTrials is how many of r's trials its manifest marks valid.
func ValidTrials(r *store.Run) int {
	n := 0
	for _, ts := range r.Manifest.Trials {
		if ts.Status == store.Valid {
			n++
		}
	}
	return n
}

// TrialsOnce fails the test when one of arm's trials in r stands twice
// (the same index, as a resume that reran a finished trial leaves it) and
// returns how many distinct trials arm has.
func TrialsOnce(t testing.TB, r *store.Run, arm string) int {
	t.Helper()
	seen := map[int]bool{}
	for _, tr := range r.Trials[arm] {
		if seen[tr.Index] {
			t.Fatalf("%s#%d twice", arm, tr.Index)
		}
		seen[tr.Index] = true
	}
	return len(seen)
}

// DirEntries are the names in a folder, sorted (os.ReadDir's order).
func DirEntries(t testing.TB, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// SyncBuffer collects what goroutines write (a logger's, a progress
// printer's) while the test reads it: Write and String are safe together.
type SyncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Actor is an actor a test runs in the background, and the kills it has
// reported.
type Actor struct {
	mu    sync.Mutex
	kills []store.Kill
	first chan struct{}
	stop  context.CancelFunc
	done  chan error
}

// StartActor runs act, an actor that reports each kill through the
// function it is given, until Stop or the end of ctx.
func StartActor(ctx context.Context, act func(ctx context.Context, report func(store.Kill)) error) *Actor {
	a := &Actor{first: make(chan struct{}), done: make(chan error, 1)}
	actx, stop := context.WithCancel(ctx)
	a.stop = stop
	go func() {
		a.done <- act(actx, func(k store.Kill) {
			a.mu.Lock()
			defer a.mu.Unlock()
			if a.kills = append(a.kills, k); len(a.kills) == 1 {
				close(a.first)
			}
		})
	}()
	return a
}

// FirstKill is closed when the actor reports its first kill.
func (a *Actor) FirstKill() <-chan struct{} { return a.first }

// Kills are the kills reported so far.
func (a *Actor) Kills() []store.Kill {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.kills)
}

// Stop ends the actor, fails the test if it returned an error, and
// returns the kills it reported.
func (a *Actor) Stop(t testing.TB) []store.Kill {
	t.Helper()
	a.stop()
	if err := <-a.done; err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.kills
}

// Starved names the first trial of m the harness marked "host saturated"
// ("D#2: host saturated: …"), or is empty. Such a trial measured the busy
// machine, not the server: a wall-clock test retries its run, and skips
// when every attempt was starved.
func Starved(m store.Manifest) string {
	for _, ts := range m.Trials {
		if ts.Status == store.Invalid && strings.HasPrefix(ts.Reason, "host saturated") {
			return fmt.Sprintf("%s#%d: %s", ts.Arm, ts.Index, ts.Reason)
		}
	}
	return ""
}
