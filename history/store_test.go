package history

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// backend is what the shared suite needs to know about one backend.
type backend struct {
	// location returns a fresh, empty location.
	location func(t *testing.T) string
	// setVersion writes schema version v into the store at location.
	setVersion func(t *testing.T, location string, v int)
	// version is the schema version the backend's code writes.
	version int
	// snapshot returns something that changes when the store does (a
	// checksum of the file and its companions, a dump of the database).
	snapshot func(t *testing.T, location string) string
}

func TestMain(m *testing.M) {
	if db := os.Getenv(adderEnvDB); db != "" {
		os.Exit(adderProcess(db, strings.Split(os.Getenv(adderEnvRuns), ",")))
	}
	code := m.Run()
	closeReplicaSet()
	os.Exit(code)
}

// sampleRun makes a deterministic run: two arms, three trials each, with
// metric and label names holding '.', '/' and '$'.
func sampleRun(id string, day int, branch, workload string) Run {
	cet := time.FixedZone("CET", 3600)
	r := Run{
		ID:             id,
		Started:        time.Date(2025, 3, 1, 2, 30, 0, 123456789, cet).AddDate(0, 0, day),
		Workload:       workload,
		WorkloadDigest: "sha256:" + workload,
		// Not canonical (spacing, key order): stores keep it canonical.
		WorkloadDefinition: json.RawMessage(`{"storm_rate": 271.5, "kind": "` + workload + `"}`),
		Baseline:           "base",
		Arms: []Arm{
			{Name: "base", Build: "8.0.4", Parameters: map[string]string{"shedding": "off"}},
			{Name: "shed", Build: fmt.Sprintf("8.1.0-%d", day), Parameters: map[string]string{"shedding": "on", "threshold.pct": "80"},
				Definition: json.RawMessage(`{"setParameters": {"shedding": "on"}, "actors": [{"killop": {"rssHighPercent": 70}}]}`)},
		},
		Labels:    map[string]string{"branch": branch, "ci.job": "nightly"},
		Host:      Host{Name: "bench-1", CPUModel: "EPYC", Cores: 2, MemoryBytes: 24 << 30, Kernel: "6.1", TargetKind: "embedded"},
		Simulated: true,
	}
	for ai, arm := range []string{"shed", "base"} { // trials deliberately not in (arm, index) order
		for i := 2; i >= 0; i-- {
			x := float64(day*10+i) + float64(ai)*0.25
			r.Trials = append(r.Trials, Trial{Arm: arm, Index: i, Host: "bench-1", Metrics: map[string]float64{
				"latency.p99_ms": 100 + x, "ops/s": 5000 - x, "$oom": float64(i % 2)}})
		}
	}
	r.Effects = []Effect{
		{Arm: "shed", Metric: "ops/s", Shift: -0.25, P: 0.5},
		{Arm: "shed", Metric: "latency.p99_ms", Shift: 0.25 + float64(day), P: 0.01},
	}
	return r
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustOpen(t *testing.T, loc string) Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, loc)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mustAdd(t *testing.T, s Store, r Run) bool {
	t.Helper()
	added, err := s.Add(context.Background(), r)
	if err != nil {
		t.Fatalf("Add %s: %v", r.ID, err)
	}
	return added
}

func ids[T any](items []T, id func(T) string) []string {
	var out []string
	for _, it := range items {
		out = append(out, id(it))
	}
	return out
}

func summaryID(s RunSummary) string { return s.ID }
func runID(r Run) string            { return r.ID }

// runSuite is the behaviour every backend must have.
func runSuite(t *testing.T, b backend) {
	ctx := context.Background()

	t.Run("RoundTrip", func(t *testing.T) {
		s := mustOpen(t, b.location(t))
		in := []Run{sampleRun("r2", 2, "master", "find"), sampleRun("r0", 0, "master", "find"), sampleRun("r1", 1, "feature", "agg")}
		for _, r := range in {
			if !mustAdd(t, s, r) {
				t.Fatalf("first Add of %s reported added=false", r.ID)
			}
		}
		for _, r := range in {
			got, err := s.Get(ctx, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := jsonOf(t, got), jsonOf(t, Normalize(r)); g != w {
				t.Fatalf("Get %s:\n%s\nwant\n%s", r.ID, g, w)
			}
			if !got.Started.Equal(r.Started) || got.Started.Location() != time.UTC {
				t.Fatalf("Started %v, want %v in UTC", got.Started, r.Started)
			}
		}
		all, err := s.Runs(ctx, Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if g := ids(all, runID); !slices.Equal(g, []string{"r0", "r1", "r2"}) {
			t.Fatalf("Runs order %v", g)
		}
		list, err := s.List(ctx, Filter{})
		if err != nil {
			t.Fatal(err)
		}
		want := summarize(Normalize(in[1]))
		if g, w := jsonOf(t, list[0]), jsonOf(t, want); g != w {
			t.Fatalf("List[0]:\n%s\nwant\n%s", g, w)
		}
		if g := ids(list, summaryID); !slices.Equal(g, []string{"r0", "r1", "r2"}) {
			t.Fatalf("List order %v", g)
		}
		series, err := s.Series(ctx, "latency.p99_ms", "shed", Filter{})
		if err != nil {
			t.Fatal(err)
		}
		wantSeries := []SeriesPoint{
			{RunID: "r0", Started: Normalize(in[1]).Started, Build: "8.1.0-0", Values: []float64{100, 101, 102}},
			{RunID: "r1", Started: Normalize(in[2]).Started, Build: "8.1.0-1", Values: []float64{110, 111, 112}},
			{RunID: "r2", Started: Normalize(in[0]).Started, Build: "8.1.0-2", Values: []float64{120, 121, 122}},
		}
		if g, w := jsonOf(t, series), jsonOf(t, wantSeries); g != w {
			t.Fatalf("Series:\n%s\nwant\n%s", g, w)
		}
		base, err := s.Series(ctx, "ops/s", "base", Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(base) != 3 || !slices.Equal(base[2].Values, []float64{5000 - 20.25, 5000 - 21.25, 5000 - 22.25}) {
			t.Fatalf("base ops/s series %+v", base)
		}
		effects, err := s.Effects(ctx, "latency.p99_ms", "shed", Filter{})
		if err != nil {
			t.Fatal(err)
		}
		wantEffects := []EffectPoint{
			{RunID: "r0", Started: wantSeries[0].Started, Baseline: "base", Build: "8.1.0-0", Shift: 0.25, P: 0.01},
			{RunID: "r1", Started: wantSeries[1].Started, Baseline: "base", Build: "8.1.0-1", Shift: 1.25, P: 0.01},
			{RunID: "r2", Started: wantSeries[2].Started, Baseline: "base", Build: "8.1.0-2", Shift: 2.25, P: 0.01},
		}
		if g, w := jsonOf(t, effects), jsonOf(t, wantEffects); g != w {
			t.Fatalf("Effects:\n%s\nwant\n%s", g, w)
		}
		for _, q := range [][2]string{{"nope", "shed"}, {"ops/s", "nope"}} {
			if p, err := s.Series(ctx, q[0], q[1], Filter{}); err != nil || len(p) != 0 {
				t.Fatalf("Series %v = %v, %v; want none", q, p, err)
			}
			if p, err := s.Effects(ctx, q[0], q[1], Filter{}); err != nil || len(p) != 0 {
				t.Fatalf("Effects %v = %v, %v; want none", q, p, err)
			}
		}
		if _, err := s.Get(ctx, "missing"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get missing: %v, want ErrNotFound", err)
		}
	})

	t.Run("MinimalRun", func(t *testing.T) {
		s := mustOpen(t, b.location(t))
		r := Run{ID: "bare", Started: time.Unix(1700000000, 5), Workload: "w",
			Trials: []Trial{{Arm: "only", Index: 0}, {Arm: "only", Index: 1, Metrics: map[string]float64{"m": -1.5e-300}}}}
		mustAdd(t, s, r)
		got, err := s.Get(ctx, "bare")
		if err != nil {
			t.Fatal(err)
		}
		if g, w := jsonOf(t, got), jsonOf(t, Normalize(r)); g != w {
			t.Fatalf("Get:\n%s\nwant\n%s", g, w)
		}
		if l, err := s.List(ctx, Filter{}); err != nil || len(l) != 1 || l[0].Trials != 2 || l[0].Arms != nil {
			t.Fatalf("List = %+v, %v", l, err)
		}
	})

	t.Run("IdempotentReAdd", func(t *testing.T) {
		loc := b.location(t)
		s := mustOpen(t, loc)
		r := sampleRun("night-1", 1, "master", "find")
		if !mustAdd(t, s, r) {
			t.Fatal("first Add reported added=false")
		}
		before := b.snapshot(t, loc)
		same := r
		same.Started = r.Started.In(time.FixedZone("PST", -8*3600)) // the same instant
		same.Trials = slices.Clone(r.Trials)
		slices.Reverse(same.Trials)
		if mustAdd(t, s, same) {
			t.Fatal("re-Add reported added=true")
		}
		other := mustOpen(t, loc) // a second handle sees the same
		if mustAdd(t, other, r) {
			t.Fatal("re-Add through a second handle reported added=true")
		}
		changed := sampleRun("night-1", 1, "master", "find")
		changed.Trials[0].Metrics["ops/s"]++
		added, err := s.Add(ctx, changed)
		if added || !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "night-1") {
			t.Fatalf("Add of changed content = %v, %v; want ErrConflict naming the run", added, err)
		}
		if after := b.snapshot(t, loc); after != before {
			t.Fatal("re-adds changed the store")
		}
		if l, err := s.List(ctx, Filter{}); err != nil || len(l) != 1 {
			t.Fatalf("List = %v, %v; want one run", l, err)
		}
	})

	t.Run("ConflictNamesWhatDiffers", func(t *testing.T) {
		s := mustOpen(t, b.location(t))
		r := sampleRun("night-2", 2, "master", "find")
		mustAdd(t, s, r)
		// The same night added again without its labels: the error names
		// the labels, not two digests.
		bare := sampleRun("night-2", 2, "master", "find")
		bare.Labels = nil
		_, err := s.Add(ctx, bare)
		if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "labels: stored branch=master ci.job=nightly, given none") ||
			strings.Contains(err.Error(), "sha256:") {
			t.Fatalf("re-Add without labels: %v; want ErrConflict naming the labels", err)
		}
		// A changed arm definition is named key by key.
		redefined := sampleRun("night-2", 2, "master", "find")
		redefined.Arms[1].Definition = json.RawMessage(`{"setParameters": {"shedding": "on"}, "actors": [{"killop": {"rssHighPercent": 80}}]}`)
		if _, err := s.Add(ctx, redefined); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "arm shed definition: actors[0].killop.rssHighPercent 70 → 80") {
			t.Fatalf("re-Add with another definition: %v", err)
		}
	})

	t.Run("NightsStoredWithoutDefinitionsReAddAlike", func(t *testing.T) {
		s := mustOpen(t, b.location(t))
		// A night stored by a qmlsab that kept no definitions …
		old := sampleRun("night-3", 3, "master", "find")
		old.WorkloadDefinition = nil
		for i := range old.Arms {
			old.Arms[i].Definition = nil
		}
		mustAdd(t, s, old)
		// … is the same night when this one adds it again with them.
		if added, err := s.Add(ctx, sampleRun("night-3", 3, "master", "find")); added || err != nil {
			t.Fatalf("re-Add with definitions of a night stored without = %v, %v; want nothing changed", added, err)
		}
	})

	t.Run("InvalidRunsAreRefused", func(t *testing.T) {
		loc := b.location(t)
		s := mustOpen(t, loc)
		good := sampleRun("ok", 0, "master", "find")
		nan := sampleRun("nan", 0, "master", "find")
		nan.Trials[1].Metrics["ops/s"] = math.NaN()
		dup := sampleRun("dup", 0, "master", "find")
		dup.Trials[1].Index = dup.Trials[0].Index
		stranger := sampleRun("stranger", 0, "master", "find")
		stranger.Effects[0].Arm = "ghost"
		badDef := sampleRun("bad-definition", 0, "master", "find")
		badDef.Arms[0].Definition = json.RawMessage(`{"build":`)
		for _, r := range []Run{{Started: time.Now()}, {ID: "no-time"}, nan, dup, stranger, badDef} {
			if added, err := s.Add(ctx, r); added || !errors.Is(err, ErrInvalidRun) {
				t.Fatalf("Add %q = %v, %v; want ErrInvalidRun", r.ID, added, err)
			}
		}
		mustAdd(t, s, good)
		if l, err := s.List(ctx, Filter{}); err != nil || len(l) != 1 {
			t.Fatalf("List = %v, %v; want only the valid run", l, err)
		}
	})

	t.Run("Filters", func(t *testing.T) {
		s := mustOpen(t, b.location(t))
		for i := range 8 {
			branch, workload := "master", "find"
			if i%3 == 1 {
				branch = "feature/x"
			}
			if i%2 == 1 {
				workload = "agg"
			}
			mustAdd(t, s, sampleRun(fmt.Sprintf("n%d", i), i, branch, workload))
		}
		day := func(i int) time.Time { return sampleRun("", i, "", "").Started }
		cases := []struct {
			name string
			f    Filter
			want []string
		}{
			{"all", Filter{}, []string{"n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7"}},
			{"branch", Filter{Labels: map[string]string{"branch": "master"}}, []string{"n0", "n2", "n3", "n5", "n6"}},
			{"branch+job", Filter{Labels: map[string]string{"branch": "master", "ci.job": "nightly"}}, []string{"n0", "n2", "n3", "n5", "n6"}},
			{"label value mismatch", Filter{Labels: map[string]string{"branch": "master", "ci.job": "weekly"}}, nil},
			{"unknown label", Filter{Labels: map[string]string{"os": "linux"}}, nil},
			{"workload", Filter{Workload: "agg"}, []string{"n1", "n3", "n5", "n7"}},
			{"workload+branch", Filter{Workload: "agg", Labels: map[string]string{"branch": "master"}}, []string{"n3", "n5"}},
			{"since/until", Filter{Since: day(2), Until: day(5)}, []string{"n2", "n3", "n4"}},
			{"last", Filter{Last: 3}, []string{"n5", "n6", "n7"}},
			{"last of branch", Filter{Last: 2, Labels: map[string]string{"branch": "master"}}, []string{"n5", "n6"}},
			{"last beyond", Filter{Last: 100, Workload: "agg", Until: day(4)}, []string{"n1", "n3"}},
		}
		for _, c := range cases {
			list, err := s.List(ctx, c.f)
			if err != nil {
				t.Fatal(err)
			}
			if g := ids(list, summaryID); !slices.Equal(g, c.want) {
				t.Errorf("%s: List %v, want %v", c.name, g, c.want)
			}
			runs, err := s.Runs(ctx, c.f)
			if err != nil {
				t.Fatal(err)
			}
			if g := ids(runs, runID); !slices.Equal(g, c.want) {
				t.Errorf("%s: Runs %v, want %v", c.name, g, c.want)
			}
			series, err := s.Series(ctx, "ops/s", "shed", c.f)
			if err != nil {
				t.Fatal(err)
			}
			if g := ids(series, func(p SeriesPoint) string { return p.RunID }); !slices.Equal(g, c.want) {
				t.Errorf("%s: Series %v, want %v", c.name, g, c.want)
			}
			effects, err := s.Effects(ctx, "ops/s", "shed", c.f)
			if err != nil {
				t.Fatal(err)
			}
			if g := ids(effects, func(p EffectPoint) string { return p.RunID }); !slices.Equal(g, c.want) {
				t.Errorf("%s: Effects %v, want %v", c.name, g, c.want)
			}
		}
	})

	t.Run("ConcurrentAdders", func(t *testing.T) {
		loc := b.location(t)
		const adders, nRuns = 4, 6
		var runs []Run
		for i := range nRuns {
			runs = append(runs, sampleRun(fmt.Sprintf("c%d", i), i, "master", "find"))
		}
		var mu sync.Mutex
		addedBy := map[string]int{}
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make(chan error, adders)
		for a := range adders {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				// Each adder opens its own handle, racing the others to
				// create and migrate the store too.
				s, err := Open(ctx, loc)
				if err != nil {
					errs <- err
					return
				}
				defer s.Close()
				for i := range runs {
					r := runs[(i+a)%len(runs)]
					added, err := s.Add(ctx, r)
					if err != nil {
						errs <- err
						return
					}
					if added {
						mu.Lock()
						addedBy[r.ID]++
						mu.Unlock()
					}
				}
			}()
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for _, r := range runs {
			if addedBy[r.ID] != 1 {
				t.Errorf("run %s reported added by %d adders, want exactly 1", r.ID, addedBy[r.ID])
			}
		}
		s := mustOpen(t, loc)
		all, err := s.Runs(ctx, Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != nRuns {
			t.Fatalf("%d runs stored, want %d", len(all), nRuns)
		}
		for i, r := range all {
			if g, w := jsonOf(t, r), jsonOf(t, Normalize(runs[i])); g != w {
				t.Fatalf("stored run %d:\n%s\nwant\n%s", i, g, w)
			}
		}
	})

	t.Run("NewerSchemaIsRefused", func(t *testing.T) {
		loc := b.location(t)
		s := mustOpen(t, loc)
		mustAdd(t, s, sampleRun("keep", 0, "master", "find"))
		s.Close()
		b.setVersion(t, loc, b.version+1)
		before := b.snapshot(t, loc)
		_, err := Open(ctx, loc)
		if !errors.Is(err, ErrNewerSchema) {
			t.Fatalf("Open of a newer schema: %v, want ErrNewerSchema", err)
		}
		if !strings.Contains(err.Error(), fmt.Sprint(b.version+1)) || !strings.Contains(err.Error(), RedactURI(loc)) {
			t.Fatalf("error %q does not name the location and version", err)
		}
		if after := b.snapshot(t, loc); after != before {
			t.Fatal("opening a newer schema changed the store")
		}
		b.setVersion(t, loc, b.version)
		s = mustOpen(t, loc)
		if _, err := s.Get(ctx, "keep"); err != nil {
			t.Fatal(err)
		}
	})
}
