package store

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// A folder that is no run is said to be one, naming it once: not the
// manifest's path twice and the system's words for a missing file.
func TestOpenSaysAFolderIsNotARun(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "notes.txt")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]string{
		filepath.Join(tmp, "none"): filepath.Join(tmp, "none") + ": not a run folder (no such folder)",
		tmp:                        tmp + ": not a run folder (no manifest.json in it)",
		file:                       file + ": not a run folder (a file, not a folder)",
	} {
		_, err := Open(dir)
		if err == nil || err.Error() != want {
			t.Errorf("Open(%s) = %v, want %q", dir, err, want)
		}
		if !errors.Is(err, ErrNotRun) || !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Open(%s): %v is not ErrNotRun and fs.ErrNotExist", dir, err)
		}
		if _, err := ReadManifest(dir); err == nil || err.Error() != want {
			t.Errorf("ReadManifest(%s) = %v, want %q", dir, err, want)
		}
	}
}
