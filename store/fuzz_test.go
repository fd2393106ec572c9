package store

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"
)

// A results folder may be damaged: any manifest bytes and any samples or
// series file either read or give an error naming the file, never a
// panic, and never more records than a trial's file of its kind holds
// (RecordLimit): one seed is a file of one "{}" more than a series holds.
func FuzzOpen(f *testing.F) {
	f.Add([]byte(`{"schema":"qmlsab/run/v2","tool_version":"x","created":"2026-11-29T00:00:00Z","host":"h","command_line":[],"seed":1,"target":"embedded","simulated":true,"trials":[{"arm":"D","index":1,"status":"valid"}]}`),
		[]byte(`{"at":"2026-11-29T00:00:00Z","member":"m","up":true,"values":{"a":1}}`+"\n"))
	f.Add([]byte(`{"schema":"qmlsab/run/v2","trials":[{"arm":"../x","index":-1,"status":"invalid"}]}`), []byte("{"))
	f.Add([]byte(`{"schema":"qmlsab/run/v1","trials":[{"arm":"D","index":1,"status":"valid"}]}`), []byte("{}\n"))
	f.Add([]byte(`{"schema":"qmlsab/run/v2","trials":[{"arm":"D","index":1,"status":"valid"},{"arm":"D","index":1,"status":"valid"}]}`),
		bytes.Repeat([]byte("{}\n"), MaxSecondRecords+1))
	f.Fuzz(func(t *testing.T, manifest, lines []byte) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "manifest.json"), manifest, 0o644)
		td := TrialDir(dir, "D", 1)
		os.MkdirAll(td, 0o755)
		os.WriteFile(filepath.Join(td, "trial.json"), []byte(`{"schema":"qmlsab/trial/v2","arm":"D","index":1,"started":"2026-11-29T00:00:00Z","metrics":{}}`), 0o644)
		if _, err := Open(dir); err != nil && !bytes.Contains([]byte(err.Error()), []byte(dir)) {
			t.Fatalf("error does not name the file: %v", err)
		}
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		zw.Write(lines)
		zw.Close()
		for _, b := range [][]byte{gz.Bytes(), lines} { // well-formed gzip of any lines, and raw bytes
			p := filepath.Join(td, "samples.jsonl.gz")
			os.WriteFile(p, b, 0o644)
			if _, err := ReadJSONLinesGz[map[string]any](p); err != nil && !bytes.Contains([]byte(err.Error()), []byte(p)) {
				t.Fatalf("error does not name the file: %v", err)
			}
		}
		checkRecords(t, filepath.Join(td, SeriesFile), gz.Bytes(), ReadJSONLinesGz[Second])
	})
}

// checkRecords writes b to path and reads it as records: an error names
// the file; a read holds no more records than RecordLimit allows.
func checkRecords[T any](t *testing.T, path string, b []byte, read func(string) ([]T, error)) {
	t.Helper()
	os.WriteFile(path, b, 0o644)
	got, err := read(path)
	if err != nil && !bytes.Contains([]byte(err.Error()), []byte(path)) {
		t.Fatalf("error does not name the file: %v", err)
	}
	if int64(len(got)) > RecordLimit(path) {
		t.Fatalf("%s: %d records read, more than its limit %d", path, len(got), RecordLimit(path))
	}
}
