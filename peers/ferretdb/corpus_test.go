package ferretdb

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/internal/querycorpus"
)

// knownDeviations are the corpus cases FerretDB v1.24.2 answers other
// than MongoDB's documented behaviour, by case ID, each with why. The
// corpus's expected answers are MongoDB's rules; FerretDB is a peer to
// compare with, not an oracle, so its known faults are listed here rather
// than bent into the expectations. (The mongosim side of the corpus is
// tested in the root module, with no such list.)
//
// Seen against the corpus as it stood in development (IDs as it named
// them); cases whose seed FerretDB could not store are not listed.
var knownDeviations = map[string]string{
	"agg/setwindowfields-running-sum": "FerretDB v1 does not implement $setWindowFields (NotImplemented)",
	"agg/setwindowfields-whole":       "FerretDB v1 does not implement $setWindowFields (NotImplemented)",
	"agg/merge-window":                "FerretDB v1 implements neither $setWindowFields nor $merge (NotImplemented)",
	"update/pull-condition":           "FerretDB's $pull ignores a query condition and removes nothing",
	"update/pull-subdoc-query":        "FerretDB's $pull ignores a query on subdocuments and removes nothing",
	"update/positional":               "FerretDB has no positional $ update operator: it refuses a field named '$'",
}

// Every corpus case FerretDB fails is a listed deviation: a new failure
// is either a corpus case that is wrong or a FerretDB fault to list. A
// listed deviation that now passes is logged (the list is stale there),
// not failed, so that a FerretDB fix does not break the build.
func TestCorpusAgainstFerretDB(t *testing.T) {
	cases := querycorpus.Cases()
	if len(cases) == 0 {
		t.Skip("the query corpus has no cases in this tree (internal/querycorpus is a placeholder)")
	}
	ids := make([]string, 0, len(cases))
	for _, c := range cases {
		ids = append(ids, c.ID)
	}
	for id := range knownDeviations {
		if !slices.Contains(ids, id) {
			t.Errorf("known deviation %q is no corpus case: remove it or fix its ID", id)
		}
	}

	s := startPeer(t)
	c := connect(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	results, err := querycorpus.Check(ctx, c.Database("qmlsab_corpus"))
	if err != nil {
		t.Fatalf("run the corpus against FerretDB: %v", err)
	}
	if len(results) != len(cases) {
		t.Errorf("Check returned %d results for %d cases", len(results), len(cases))
	}
	failed, nowPass := 0, 0
	for _, r := range results {
		reason, listed := knownDeviations[r.ID]
		switch {
		case !r.Pass && !listed:
			failed++
			t.Errorf("%s: FerretDB got %s, want %s (not a known deviation)", r.ID, r.Got, r.Want)
		case r.Pass && listed:
			nowPass++
			t.Logf("%s: listed as a deviation (%s) but FerretDB now answers as MongoDB does", r.ID, reason)
		}
	}
	t.Logf("%d cases: %d known FerretDB deviations listed, %d of them now pass, %d unlisted failures", len(results), len(knownDeviations), nowPass, failed)
}
