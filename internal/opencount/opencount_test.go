//go:build linux

package opencount

import (
	"os"
	"path/filepath"
	"testing"
)

// Every open of a watched file counts, two in a row included; a file
// written (not opened by name: a temporary renamed over it) and a file in
// a subfolder do not.
func TestOpensAreCountedOnePerOpen(t *testing.T) {
	dir := t.TempDir()
	f, sub := filepath.Join(dir, "f.json"), filepath.Join(dir, "sub")
	os.WriteFile(f, []byte("{}"), 0o644)
	os.Mkdir(sub, 0o755)
	os.WriteFile(filepath.Join(sub, "g"), nil, 0o644)
	w, err := New(dir)
	if err != nil {
		t.Skipf("no inotify here: %v", err)
	}
	for range 3 {
		if _, err := os.ReadFile(f); err != nil {
			t.Fatal(err)
		}
	}
	os.ReadFile(filepath.Join(sub, "g"))
	tmp := filepath.Join(dir, ".f.json.tmp")
	os.WriteFile(tmp, []byte("{1}"), 0o644)
	os.Rename(tmp, f)
	opens, err := w.Opens()
	if err != nil {
		t.Fatal(err)
	}
	if opens[f] != 3 || opens[filepath.Join(sub, "g")] != 0 {
		t.Errorf("opens %v; want f.json 3 times and nothing of sub/g", opens)
	}
}
