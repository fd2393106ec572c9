package store

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// Minted names say their kind and shard, differ within one second and
// sort in the order they were made.
func TestNewRunDirNames(t *testing.T) {
	created := time.Date(2026, 3, 1, 2, 30, 0, 0, time.FixedZone("CET", 3600))
	a := NewRunDir("results", RunFolder, created, 0, 0)
	b := NewRunDir("results", RunFolder, created, 0, 0)
	if a == b {
		t.Errorf("two folders minted in one second are both %s", a)
	}
	if !regexp.MustCompile(`^results/20260301T013000Z-[0-9a-f]{6}$`).MatchString(a) {
		t.Errorf("run folder %q: want results/<UTC time>-<6 hex digits>", a)
	}
	if s := NewRunDir("r", RunFolder, created, 2, 3); !strings.HasSuffix(s, "-shard2of3") {
		t.Errorf("shard 2 of 3's folder %q does not end in -shard2of3", s)
	}
	if s := NewRunDir("r", SweepFolder, created, 0, 0); !strings.HasPrefix(filepath.Base(s), "sweep-20260301T013000Z-") {
		t.Errorf("sweep folder %q does not start with sweep- and the time", s)
	}
	later := NewRunDir("results", RunFolder, created.Add(time.Second), 0, 0)
	names := []string{later, a}
	sort.Strings(names)
	if names[0] != a {
		t.Errorf("a folder minted later (%s) sorts before an earlier one (%s)", later, a)
	}
}

// NewestRun finds the run created last among minted and named folders,
// by manifest time, passing over sweep folders and loose files; a root
// without runs is an error that says so.
func TestNewestRunByManifestTime(t *testing.T) {
	root := t.TempDir()
	day := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	write := func(dir string, created time.Time) {
		t.Helper()
		if err := WriteJSON(filepath.Join(dir, ManifestFile), Manifest{Schema: ManifestSchema, Created: created}); err != nil {
			t.Fatal(err)
		}
	}
	first := NewRunDir(root, RunFolder, day, 0, 0)
	second := NewRunDir(root, RunFolder, day.Add(time.Hour), 0, 0)
	write(first, day)
	write(second, day.Add(time.Hour))
	if err := os.MkdirAll(NewRunDir(root, SweepFolder, day.Add(2*time.Hour), 0, 0), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := NewestRun(root); err != nil || got != second {
		t.Errorf("NewestRun = %q, %v; want the run minted last, %s", got, err, second)
	}
	named := filepath.Join(root, "a-baseline") // sorts first by name
	write(named, day.Add(3*time.Hour))
	if got, err := NewestRun(root); err != nil || got != named {
		t.Errorf("NewestRun = %q, %v; want the named run created last, %s", got, err, named)
	}
	empty := t.TempDir()
	if _, err := NewestRun(empty); err == nil || !strings.Contains(err.Error(), "no run folder") {
		t.Errorf("NewestRun of a root without runs = %v; want an error saying there is no run folder", err)
	}
}
