package ftdcimport

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// stopAfter is a context that is live for its first n checks and
// cancelled from then on: an import stopped at each of its stopping
// points in turn.
type stopAfter struct {
	context.Context
	n int
}

var errStopped = errors.New("stopped by the test")

func (c *stopAfter) Err() error {
	if c.n > 0 {
		c.n--
		return nil
	}
	return errStopped
}

func (c *stopAfter) Deadline() (time.Time, bool) { return time.Time{}, false }

// An import stopped (by a signal, in qmlsab) at any of its stopping
// points returns the reason and leaves nothing: no --out folder, and no
// folder it was assembling beside it.
func TestImportStoppedAnywhereLeavesNothing(t *testing.T) {
	dir := fixture(t)
	spec, err := LoadSpec(writeFile(t, filepath.Join(dir, "import.yaml"), goodSpec))
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadDir(dir)
	out := filepath.Join(dir, "out")
	for n := 0; ; n++ {
		_, err := Import(spec, out, Options{Context: &stopAfter{context.Background(), n}})
		if err == nil {
			if n < 2 {
				t.Fatalf("the import finished after %d checks; want it checked between sources and trials", n)
			}
			if _, err := os.Stat(filepath.Join(out, "manifest.json")); err != nil {
				t.Fatalf("the unstopped import: %v", err)
			}
			t.Logf("stopped at each of %d points", n)
			return
		}
		if !errors.Is(err, errStopped) {
			t.Fatalf("stopped after %d checks: %v, want the reason it was stopped", n, err)
		}
		after, _ := os.ReadDir(dir)
		if len(after) != len(before) {
			var names []string
			for _, e := range after {
				names = append(names, e.Name())
			}
			t.Fatalf("stopped after %d checks, the folder holds %v; want nothing new", n, names)
		}
	}
}
