package main

import (
	"github.com/qmlsab/qmlsab/internal/mongouri"
	"github.com/qmlsab/qmlsab/internal/outputfile"
)

// historyFiles are the files of an SQLite history (the database and the
// journal files SQLite keeps beside it), which no output may be written
// over; none for a mongodb:// history.
func historyFiles(loc string) []outputfile.Protected {
	if loc == "" || mongouri.HasScheme(loc) {
		return nil
	}
	what := "the history database (--history-db)"
	out := []outputfile.Protected{{Path: loc, What: what}}
	for _, suffix := range []string{"-wal", "-shm", "-journal"} {
		out = append(out, outputfile.Protected{Path: loc + suffix, What: "a journal file of " + what})
	}
	return out
}

// checkOutput refuses, before anything is written, an output file path
// that is the history (loc) or an existing file qmlsab did not write as
// this kind of output (outputfile.Check).
func checkOutput(path string, kind outputfile.Kind, loc string) error {
	return outputfile.Check(path, kind, historyFiles(loc)...)
}
