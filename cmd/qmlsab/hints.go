package main

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"

	"github.com/qmlsab/qmlsab/report"
)

// gateSetError is LoadGates's err for --gates g, or, when g is neither a
// file nor a built-in gate set but close to a built-in's name (a typo:
// sweeper-acceptanse), that said with the name meant.
func gateSetError(g string, err error) error {
	if _, serr := os.Stat(g); !errors.Is(serr, fs.ErrNotExist) {
		return err
	}
	if m := closest(g, slices.Sorted(maps.Keys(report.BuiltinGates))); m != "" {
		return fmt.Errorf("%q is neither a built-in gate set nor a file; did you mean %q?", g, m)
	}
	return err
}
