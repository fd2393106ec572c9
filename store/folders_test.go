package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A new run folder may be absent, empty, or hold only its own lock;
// anything else is refused, naming the folder and what it holds.
func TestCheckNewRunFolder(t *testing.T) {
	root := t.TempDir()
	empty := filepath.Join(root, "empty")
	locked := filepath.Join(root, "locked")
	full := filepath.Join(root, "full")
	file := filepath.Join(root, "file")
	for _, d := range []string{empty, locked, full} {
		must(t, os.Mkdir(d, 0o755))
	}
	must(t, os.WriteFile(filepath.Join(locked, lockFile), []byte("1\n"), 0o644))
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		must(t, os.WriteFile(filepath.Join(full, name), nil, 0o644))
	}
	must(t, os.WriteFile(file, nil, 0o644))
	for _, ok := range []string{filepath.Join(root, "absent"), empty, locked} {
		if err := CheckNewRunFolder(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for dir, want := range map[string]string{
		full: full + " exists and is not empty (it holds a, b, c and 2 more)",
		file: file + " exists and is not a folder",
	} {
		if err := CheckNewRunFolder(dir); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want %q", dir, err, want)
		}
	}
}
