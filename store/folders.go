package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// CheckNewRunFolder checks that dir can become a new run folder: it does
// not exist yet, or it is an empty folder (one holding nothing but its
// own run.lock, which the writer takes before it looks). A folder holding
// anything else is refused, naming it and a few of its entries, so that a
// run, a merge or an import never mixes its files with files that are no
// part of it (`run --out .` in a home folder, say). The error begins with
// dir; callers prefix their flag.
func CheckNewRunFolder(dir string) error {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s exists and is not a folder", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	var names []string
	for _, e := range entries {
		if e.Name() != lockFile {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		return nil
	}
	shown := names[:min(len(names), 3)]
	more := ""
	if len(names) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(names)-len(shown))
	}
	return fmt.Errorf("%s exists and is not empty (it holds %s%s)", dir, strings.Join(shown, ", "), more)
}
