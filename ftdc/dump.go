package ftdc

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
)

// Dump writes one line per sample of the given FTDC files and directories
// (see Files for the order) to w.
//
// format "jsonl" writes an object per line whose key "start" is the
// sample's time in milliseconds since the epoch and whose other keys are
// the chosen metrics' dotted paths; "csv" writes a header row ("start" then
// the paths) and the same values as columns. paths chooses the metrics and
// their order; none means every metric (for csv, every path seen in any of
// the sources, found by a first pass). A metric absent from a sample's
// chunk (the schema changed) is left out in jsonl and empty in csv.
//
// Samples of metrics.interim no later than the last sample already written
// are skipped: they were archived before the interim file was removed.
//
// Torn documents (ErrTruncated) do not stop the dump: it goes on with the
// next file and returns them, joined, at the end. Other errors stop it.
func Dump(w io.Writer, paths []string, format string, sources ...string) error {
	if format != "jsonl" && format != "csv" {
		return fmt.Errorf("ftdc: unknown dump format %q (want jsonl or csv)", format)
	}
	if format == "csv" && len(paths) == 0 {
		all, err := ListPaths(sources...)
		if err != nil && !IsTruncated(err) {
			return err
		}
		paths = all
	}
	wanted := withoutStart(paths)

	r, err := Open(sources...)
	if err != nil {
		return err
	}
	defer r.Close()
	bw := bufio.NewWriterSize(w, 256<<10)

	if format == "csv" {
		cw := csv.NewWriter(bw)
		if err := cw.Write(append([]string{"start"}, wanted...)); err != nil {
			return err
		}
		cw.Flush()
		if err := cw.Error(); err != nil {
			return err
		}
	}

	var (
		prev     []Metric
		cols     []int
		keys     [][]byte // jsonl: `,"path":`
		line     []byte
		lastTime int64
		anyTime  bool
	)
	torn, err := r.eachMetricChunk((*Document).Chunk, func(d *Document, c *Chunk) error {
		if !sameSchema(prev, c.Metrics) {
			prev = c.Metrics
			cols, keys = dumpColumns(c, wanted, format)
		}
		interim := filepath.Base(d.File) == InterimFile
		for s := 0; s < c.NumSamples; s++ {
			t := c.Time(s)
			if interim && anyTime && t <= lastTime {
				continue
			}
			if !anyTime || t > lastTime {
				lastTime, anyTime = t, true
			}
			line = line[:0]
			if format == "jsonl" {
				line = append(line, `{"start":`...)
				line = strconv.AppendInt(line, t, 10)
				for k, col := range cols {
					if col < 0 {
						continue
					}
					line = append(line, keys[k]...)
					line = strconv.AppendInt(line, c.values[col*c.NumSamples+s], 10)
				}
				line = append(line, '}', '\n')
			} else {
				line = strconv.AppendInt(line, t, 10)
				for _, col := range cols {
					line = append(line, ',')
					if col >= 0 {
						line = strconv.AppendInt(line, c.values[col*c.NumSamples+s], 10)
					}
				}
				line = append(line, '\n')
			}
			if _, err := bw.Write(line); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		bw.Flush()
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return torn
}

func withoutStart(paths []string) []string {
	out := make([]string, 0, len(paths))
	seen := make(map[string]bool, len(paths))
	for _, p := range paths {
		if p == "start" || seen[p] {
			continue
		}
		seen[p] = true
		out = append(out, p)
	}
	return out
}

func sameSchema(a, b []Metric) bool {
	if len(a) != len(b) || a == nil {
		return false
	}
	for i := range a {
		if a[i].Path != b[i].Path {
			return false
		}
	}
	return true
}

// dumpColumns maps the wanted paths (all of the chunk's when none) to the
// chunk's columns, -1 where absent, with their jsonl keys.
func dumpColumns(c *Chunk, wanted []string, format string) ([]int, [][]byte) {
	if len(wanted) == 0 {
		seen := make(map[string]bool, len(c.Metrics))
		for _, m := range c.Metrics {
			if m.Path != "start" && !seen[m.Path] {
				seen[m.Path] = true
				wanted = append(wanted, m.Path)
			}
		}
	}
	cols := make([]int, len(wanted))
	var keys [][]byte
	if format == "jsonl" {
		keys = make([][]byte, len(wanted))
	}
	for i, p := range wanted {
		col, ok := c.Lookup(p)
		if !ok {
			col = -1
		}
		cols[i] = col
		if keys != nil {
			q, _ := json.Marshal(p)
			keys[i] = append(append([]byte{','}, q...), ':')
		}
	}
	return cols, keys
}

// ListPaths returns every metric path in the sources' chunks, in the order
// first seen. It reads only each chunk's reference document. Torn
// documents are skipped and returned, joined, with the paths.
func ListPaths(sources ...string) ([]string, error) {
	r, err := Open(sources...)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var (
		out  []string
		seen = map[string]bool{}
		prev []Metric
	)
	torn, err := r.eachMetricChunk((*Document).Schema, func(_ *Document, c *Chunk) error {
		if sameSchema(prev, c.Metrics) {
			return nil
		}
		prev = c.Metrics
		for _, m := range c.Metrics {
			if !seen[m.Path] {
				seen[m.Path] = true
				out = append(out, m.Path)
			}
		}
		return nil
	})
	if err != nil {
		return out, err
	}
	return out, torn
}
