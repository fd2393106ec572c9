// Package outputfile guards the files qmlsab writes as outputs (a
// report's page and summaries, trend.html, a history export, a sweep's
// files) against writing over anything else. An output is written only
// where no file is, over an empty file, or over a file qmlsab wrote as
// that kind of output, which each kind recognises by its mark (an HTML
// page's generator meta tag, a JSON document's schema, …); never over a
// protected file (the history database, found by os.SameFile, not by
// its name), a folder, or anything else. A refusal names the file and
// says why; the caller adds the flag.
package outputfile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"strings"
)

// Kind is a kind of output and how a file qmlsab wrote as one is
// recognised.
type Kind struct {
	// Name says what the kind is, in a refusal ("an HTML page qmlsab
	// wrote").
	Name string
	// Mark says how it is recognised, in a refusal.
	Mark string
	// recognise reports whether the file's content (read through r, at
	// most readLimit bytes) is one qmlsab wrote as this kind.
	recognise func(r io.Reader) bool
}

// readLimit bounds what is read of an existing file to recognise it: a
// larger file is no output qmlsab writes, and is refused unread.
const readLimit = 64 << 20

// The kinds of output qmlsab writes.
var (
	// HTML is a page qmlsab wrote: report.html, trend.html, sweep.html.
	HTML = Kind{Name: "an HTML page qmlsab wrote", Mark: `<meta name="generator" content="qmlsab …"> in its head`, recognise: func(r io.Reader) bool {
		head := make([]byte, 8<<10)
		n, _ := io.ReadFull(r, head)
		return bytes.Contains(head[:n], []byte(`<meta name="generator" content="qmlsab`))
	}}
	// SummaryJSON is a report's summary.json.
	SummaryJSON = schemaKind("a summary.json qmlsab wrote", "qmlsab/summary/")
	// SweepJSON is a sweep's sweep.json.
	SweepJSON = schemaKind("a sweep.json qmlsab wrote", "qmlsab/sweep/")
	// FitJSON is a file of calibrate --fit: fit.json, a shard's
	// fit-search.json or fit-predict.json.
	FitJSON = schemaKind("a fit file qmlsab wrote", "qmlsab/fit-")
	// PerfJSON is a report's perf.json (Evergreen's perf.send form, which
	// has no room for a schema): a list of tests, each tagged "qmlsab"
	// first.
	PerfJSON = Kind{Name: "a perf.json qmlsab wrote", Mark: `a JSON list of tests whose tags begin with "qmlsab"`, recognise: func(r io.Reader) bool {
		var tests []struct {
			Info *struct {
				Tags []string `json:"tags"`
			} `json:"info"`
		}
		if decodeWhole(r, &tests) != nil {
			return false
		}
		for _, t := range tests {
			if t.Info == nil || len(t.Info.Tags) == 0 || t.Info.Tags[0] != "qmlsab" {
				return false
			}
		}
		return true
	}}
	// OtavaJSON is history export's Apache Otava import file: a list of
	// entries of a timestamp, metrics and attributes naming qmlsab's run,
	// workload digest and arm.
	OtavaJSON = Kind{Name: "an Otava export qmlsab wrote", Mark: "a JSON list of entries with timestamp, metrics and attributes run, workload_digest and arm", recognise: func(r io.Reader) bool {
		var entries []map[string]json.RawMessage
		if decodeWhole(r, &entries) != nil {
			return false
		}
		for _, e := range entries {
			var attrs map[string]string
			if len(e) != 3 || e["timestamp"] == nil || e["metrics"] == nil || json.Unmarshal(e["attributes"], &attrs) != nil {
				return false
			}
			for _, k := range []string{"run", "workload_digest", "arm"} {
				if _, ok := attrs[k]; !ok {
					return false
				}
			}
		}
		return true
	}}
	// BenchTxt is a report's bench.txt: Go benchmark format, the
	// workload line first, then configuration lines and benchmark lines.
	BenchTxt = Kind{Name: "a bench.txt qmlsab wrote", Mark: `a first line "workload: …", then only server:, note:, # comment and Benchmark… lines`, recognise: func(r io.Reader) bool {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for i := 0; sc.Scan(); i++ {
			line := sc.Text()
			if i == 0 && !strings.HasPrefix(line, "workload: ") || i > 0 && !benchLine.MatchString(line) {
				return false
			}
		}
		return sc.Err() == nil
	}}
	// SummaryMD is a report's summary.md.
	SummaryMD = Kind{Name: "a summary.md qmlsab wrote", Mark: `a first line "### qmlsab: …"`, recognise: func(r io.Reader) bool {
		head := make([]byte, len(mdHeading))
		_, err := io.ReadFull(r, head)
		return err == nil && string(head) == mdHeading
	}}
)

const mdHeading = "### qmlsab: "

// benchLine is a line of bench.txt after its first.
var benchLine = regexp.MustCompile(`^((server|note): .*|# .*|Benchmark\S+ 1 \S+ \S+)$`)

// schemaKind is a JSON document whose "schema" begins with prefix.
func schemaKind(name, prefix string) Kind {
	return Kind{Name: name, Mark: fmt.Sprintf(`"schema": %q…`, prefix), recognise: func(r io.Reader) bool {
		var doc struct {
			Schema string `json:"schema"`
		}
		return decodeWhole(r, &doc) == nil && strings.HasPrefix(doc.Schema, prefix)
	}}
}

// decodeWhole decodes one JSON document that is the whole of r.
func decodeWhole(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("more after the document")
	}
	return nil
}

// Protected is a file no output may be written over, and what it is
// ("the history database (--history-db)").
type Protected struct {
	Path, What string
}

// Check says whether path may take an output of this kind: nil when no
// file is there, the file is empty, or it is one qmlsab wrote as that
// kind; otherwise an error beginning with path that says what is there.
// A protected file is refused whatever it holds, however it is named
// (another path, a hard or symbolic link to it).
func Check(path string, kind Kind, protected ...Protected) error {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, p := range protected {
		if pfi, err := os.Stat(p.Path); err == nil && os.SameFile(fi, pfi) {
			return fmt.Errorf("%s is %s (%s): an output is never written over it; name another file", path, p.What, p.Path)
		}
	}
	switch {
	case fi.IsDir():
		return fmt.Errorf("%s is a folder; name a file", path)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file (%s); name a file", path, fi.Mode().Type())
	case fi.Size() == 0:
		return nil // nothing to lose
	case fi.Size() > readLimit:
		return fmt.Errorf("%s exists and is not %s (%d bytes, more than any such output); refusing to write over it: name a new file, or remove it first", path, kind.Name, fi.Size())
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%s exists and cannot be read to check that it is %s: %w", path, kind.Name, err)
	}
	defer f.Close()
	if !kind.recognise(io.LimitReader(f, readLimit)) {
		return fmt.Errorf("%s exists and is not %s (no %s); refusing to write over it: name a new file, or remove it first", path, kind.Name, kind.Mark)
	}
	return nil
}
