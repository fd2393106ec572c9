package store

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadersRefuseASparseFileUnread checks that a trial.json or a
// manifest.json of gigabytes (a sparse file: no disk used) is refused by
// its size, naming the file and the limit, instead of read whole.
func TestReadersRefuseASparseFileUnread(t *testing.T) {
	for _, tc := range []struct {
		file, want string
	}{
		{filepath.Join("E", "trial-1", TrialFile), "is more than 16 MiB"},
		{ManifestFile, "is more than 64 MiB"},
	} {
		dir := t.TempDir()
		writeRun(t, dir)
		path := filepath.Join(dir, tc.file)
		if err := os.Truncate(path, 6<<30); err != nil {
			t.Fatal(err)
		}
		_, err := Open(dir)
		if err == nil || !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), path+" "+tc.want) {
			t.Errorf("a 6 GiB %s: error %v, want it to name the file and %q", tc.file, err, tc.want)
		}
		if strings.Count(err.Error(), path) != 1 {
			t.Errorf("the file is named more than once: %v", err)
		}
	}
	dir := t.TempDir()
	writeRun(t, dir)
	os.Truncate(filepath.Join(dir, ManifestFile), 6<<30)
	if _, err := ReadManifest(dir); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ReadManifest of a 6 GiB manifest: %v", err)
	}
}

// TestJSONLinesGzRefusesABomb checks that a small gzip file inflating
// past its limit is an error naming it, after reading no more than the
// limit; and that a file of exactly the limit is read.
func TestJSONLinesGzRefusesABomb(t *testing.T) {
	dir := t.TempDir()
	line := []byte(`{"at":"2024-01-01T00:00:00Z","member":"m0","up":true,"values":{}}` + "\n")
	write := func(name string, lines int) string {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		zw.Write(bytes.Repeat(line, lines))
		zw.Close()
		p := filepath.Join(dir, name)
		os.WriteFile(p, buf.Bytes(), 0o644)
		return p
	}
	limit := int64(len(line) * 1000)
	exact := write("exact.jsonl.gz", 1000)
	if got, err := readJSONLinesGz[Sample](exact, limit); err != nil || len(got) != 1000 {
		t.Errorf("a file of exactly the limit: %d records, %v", len(got), err)
	}
	bomb := write(SeriesFile, 20_000)
	if st, _ := os.Stat(bomb); st.Size() > limit/10 {
		t.Fatalf("the bomb is %d bytes compressed; want a bomb", st.Size())
	}
	_, err := readJSONLinesGz[Sample](bomb, limit)
	if err == nil || !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), bomb+" inflates to more than") {
		t.Errorf("a bomb: error %v, want it to name %s", err, bomb)
	}
	// The limits by kind of file.
	if InflatedLimit(filepath.Join(dir, SeriesFile)) != MaxInflatedBytes || InflatedLimit(filepath.Join(dir, CanaryFile)) != MaxCanariesInflatedBytes {
		t.Error("per-file inflated limits")
	}
}

// TestReadFileCappedReadsAPipeUpToItsLimit checks the limit on what is no
// regular file (no size to look at): it is counted as read.
func TestReadFileCappedReadsAPipeUpToItsLimit(t *testing.T) {
	r := CapReader(strings.NewReader(strings.Repeat("x", 100)), "in", 99, "is")
	var buf bytes.Buffer
	_, err := buf.ReadFrom(r)
	var le *LimitError
	if !errors.As(err, &le) || buf.Len() > 99 || le.Path != "in" {
		t.Errorf("100 bytes through a 99-byte cap: %d read, %v", buf.Len(), err)
	}
	r = CapReader(strings.NewReader(strings.Repeat("x", 99)), "in", 99, "is")
	buf.Reset()
	if _, err := buf.ReadFrom(r); err != nil || buf.Len() != 99 {
		t.Errorf("99 bytes through a 99-byte cap: %d read, %v", buf.Len(), err)
	}
}

// A named pipe in a run folder, in the place of any file a reader opens
// (manifest.json, a trial.json, a .jsonl.gz), is refused at once, named:
// it used to block report, history add and run --resume in open(2) until
// a writer came, maybe never.
func TestRunFolderReadersRefuseANamedPipeWithoutBlocking(t *testing.T) {
	for _, c := range []struct {
		file string // relative to the run folder
		read func(dir string) error
	}{
		{ManifestFile, func(dir string) error { _, err := Open(dir); return err }},
		{ManifestFile, func(dir string) error { _, err := ReadManifest(dir); return err }},
		{filepath.Join("D", "trial-1", TrialFile), func(dir string) error { _, err := Open(dir); return err }},
		{filepath.Join("D", "trial-1", SeriesFile), func(dir string) error {
			_, err := ReadJSONLinesGz[Second](filepath.Join(TrialDir(dir, "D", 1), SeriesFile))
			return err
		}},
		{filepath.Join("D", "trial-1", TrialFile), func(dir string) error {
			_, err := ReadRunFile(filepath.Join(TrialDir(dir, "D", 1), TrialFile), MaxTrialFileBytes)
			return err
		}},
	} {
		dir := t.TempDir()
		writeRun(t, dir)
		fifo := filepath.Join(dir, c.file)
		os.Remove(fifo)
		if err := syscall.Mkfifo(fifo, 0o644); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- c.read(dir) }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), fifo+" is a named pipe (FIFO)") {
				t.Errorf("%s as a named pipe: %v; want it named as one", c.file, err)
			}
		case <-time.After(30 * time.Second):
			// Open the pipe's other end, so the blocked reader returns.
			if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				w.Close()
			}
			t.Fatalf("%s as a named pipe: the reader is still blocked after 30 s", c.file)
		}
	}
}

// gzipLines is a gzip file of n copies of line.
func gzipLines(t *testing.T, path, line string, n int) {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write(bytes.Repeat([]byte(line), n))
	zw.Close()
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A small file of tiny records ("{}", 3 bytes inflated, a whole record
// decoded) is refused past the records a trial's file of its kind holds,
// naming it: byte limits did not bound records, and 89 million "{}" in a
// 255 KB series.jsonl.gz took report out of memory. A file of exactly the
// limit reads.
func TestJSONLinesGzRefusesMoreRecordsThanATrialWrites(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		file  string
		limit int64
		read  func(string) (int, error)
	}{
		{SeriesFile, MaxSecondRecords, func(p string) (int, error) { r, err := ReadJSONLinesGz[Second](p); return len(r), err }},
		{OutcomesFile, MaxSecondRecords, func(p string) (int, error) { r, err := ReadJSONLinesGz[OutcomeSecond](p); return len(r), err }},
		{StormFile, MaxStormRecords, func(p string) (int, error) { r, err := ReadJSONLinesGz[StormOp](p); return len(r), err }},
		{MergeFile, MaxMergeRecords, func(p string) (int, error) { r, err := ReadJSONLinesGz[MergeOp](p); return len(r), err }},
	} {
		p := filepath.Join(dir, c.file)
		gzipLines(t, p, "{}\n", int(c.limit))
		if n, err := c.read(p); err != nil || int64(n) != c.limit {
			t.Errorf("%s of %d records, its limit: %d read, %v", c.file, c.limit, n, err)
		}
		gzipLines(t, p, "{}\n", int(c.limit)+1)
		want := fmt.Sprintf("%s holds more than %d records", p, c.limit)
		if n, err := c.read(p); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s of %d records: %d read, %v; want %q", c.file, c.limit+1, n, err, want)
		}
	}
	// Every trial file has a limit no larger than its records' memory
	// within its inflated limit.
	for _, name := range []string{SamplesFile, SeriesFile, StormFile, CanaryFile, OutcomesFile, EventsFile, MergeFile} {
		if l := RecordLimit(name); l <= 0 || l*56 > InflatedLimit(name) {
			t.Errorf("RecordLimit(%s) = %d: want a limit whose records (56 bytes and more each) fit in %d bytes", name, l, InflatedLimit(name))
		}
	}
}

// A writer refuses to write more records than a reader takes (an import
// of a trial window holding more storm operations than a trial runs), so
// no folder this tool writes is one it cannot read.
func TestWriteJSONLinesGzRefusesWhatAReaderWouldRefuse(t *testing.T) {
	p := filepath.Join(t.TempDir(), MergeFile)
	err := WriteJSONLinesGz(p, make([]MergeOp, MaxMergeRecords+1))
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), fmt.Sprintf("encoding %s: %d records, more than the %d", p, MaxMergeRecords+1, MaxMergeRecords)) {
		t.Errorf("writing %d merge ops: %v; want a refusal naming the file", MaxMergeRecords+1, err)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Errorf("%s after the refusal: %v; want nothing written", p, err)
	}
	if err := WriteJSONLinesGz(p, make([]MergeOp, MaxMergeRecords)); err != nil {
		t.Errorf("writing %d merge ops, the limit: %v", MaxMergeRecords, err)
	}
}
