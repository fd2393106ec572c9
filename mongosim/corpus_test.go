package mongosim_test

import (
	"context"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/internal/querycorpus"
	"github.com/qmlsab/qmlsab/mongosim"
)

// TestQueryCorpus runs the differential corpus (MongoDB's documented
// answers) against a standalone member over the Go driver: every case must
// pass.
func TestQueryCorpus(t *testing.T) {
	srv, err := mongosim.Start(mongosim.Options{})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(srv.Kill)
	client := connect(t, "mongodb://"+srv.Addr()+"/?directConnection=true")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	results, err := querycorpus.Check(ctx, client.Database("corpus"))
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	cases := map[string]querycorpus.Case{}
	for _, c := range querycorpus.Cases() {
		cases[c.ID] = c
	}
	if len(results) != len(cases) {
		t.Fatalf("%d results for %d cases", len(results), len(cases))
	}
	failed := 0
	for _, r := range results {
		if !r.Pass {
			failed++
			t.Errorf("%s (%s)\n   got: %s\n  want: %s", r.ID, cases[r.ID].Rule, r.Got, r.Want)
		}
	}
	t.Logf("%d cases, %d failed", len(results), failed)
}
