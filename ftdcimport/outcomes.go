package ftdcimport

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/qmlsab/qmlsab/store"
)

// Outcomes are the client-side records of an import: what the clients
// that drove the trials saw (docs/ftdc.md, "Client-side outcomes").
type Outcomes struct {
	Storm    []store.StormOp
	Canaries []store.CanaryOp
	Kills    []store.Kill
}

// record is one line of an outcomes file, in either encoding.
type record struct {
	Kind         string   `json:"kind"`
	Time         string   `json:"time"`
	LatencyMs    *float64 `json:"latencyMs"`
	Outcome      string   `json:"outcome"`
	Code         string   `json:"code"`
	Stage        string   `json:"stage"`
	TrackedBytes *int64   `json:"trackedBytes"`
	Write        *bool    `json:"write"`
	OK           *bool    `json:"ok"`
	OpID         *int64   `json:"opid"`
	Queued       *bool    `json:"queued"`
	Queue        string   `json:"queue"`
	Err          string   `json:"err"`
}

// columns are the keys of a record (its fields' JSON names), in field
// order, as CSV header names.
var columns = func() []string {
	t := reflect.TypeFor[record]()
	keys := make([]string, t.NumField())
	for i := range keys {
		keys[i] = t.Field(i).Tag.Get("json")
	}
	return keys
}()

// LoadOutcomes reads a client-side outcomes file: CSV when its name ends
// in .csv, JSON lines otherwise. canarySLO decides a canary's ok when the
// file does not. Errors name the file and line.
//
// The file may be a pipe (`--outcomes <(zcat outcomes.jsonl.gz)`) whose
// writer stalls: when ctx ends, a read waiting on it returns, so a signal
// stops the import instead of leaving it blocked.
func LoadOutcomes(ctx context.Context, path string, canarySLO time.Duration) (*Outcomes, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// A pipe is in Go's poller, so a deadline wakes its blocked read; a
	// regular file's read never waits and ignores the deadline.
	defer context.AfterFunc(ctx, func() { f.SetReadDeadline(time.Now()) })()
	o, err := loadOutcomes(f, path, canarySLO)
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("%s: %w", path, context.Cause(ctx))
	}
	return o, err
}

func loadOutcomes(f *os.File, path string, canarySLO time.Duration) (*Outcomes, error) {
	r, err := skipBOM(store.CapReader(f, path, store.MaxInputFileBytes, "is"))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := &Outcomes{}
	add := func(line int, r record) error {
		if err := out.add(r, canarySLO); err != nil {
			return fmt.Errorf("%s:%d: %v", path, line, err)
		}
		return nil
	}
	if strings.HasSuffix(strings.ToLower(path), ".csv") {
		return out, readCSV(path, r, add)
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		var r record
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, line, err)
		}
		if err := add(line, r); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %v", path, line+1, err)
	}
	return out, nil
}

// utf8BOM is the byte-order mark some editors and spreadsheet exports put
// at the start of a UTF-8 file.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// skipBOM returns r positioned after a leading UTF-8 byte-order mark, if
// there is one: the mark is not part of the first CSV header name or
// JSON line.
func skipBOM(r io.Reader) (io.Reader, error) {
	br := bufio.NewReader(r)
	head, err := br.Peek(len(utf8BOM))
	if err != nil && err != io.EOF {
		return nil, err
	}
	if bytes.Equal(head, utf8BOM) {
		br.Discard(len(utf8BOM))
	}
	return br, nil
}

func readCSV(path string, r io.Reader, add func(int, record) error) error {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err != nil {
		return fmt.Errorf("%s:1: header: %v", path, err)
	}
	for _, h := range header {
		if !slices.Contains(columns, h) {
			return fmt.Errorf("%s:1: unknown column %q (want any of %s)", path, h, strings.Join(columns, ", "))
		}
	}
	for {
		row, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		line, _ := cr.FieldPos(0)
		if err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
		if len(row) != len(header) {
			return fmt.Errorf("%s:%d: %d fields, the header has %d", path, line, len(row), len(header))
		}
		var rec record
		for i, v := range row {
			if v == "" {
				continue
			}
			if err := rec.set(header[i], v); err != nil {
				return fmt.Errorf("%s:%d: %s: %v", path, line, header[i], err)
			}
		}
		if err := add(line, rec); err != nil {
			return err
		}
	}
}

// set reads one CSV field into the record's field of that key: a string
// as it is, a number or bool parsed as the field's type.
func (r *record) set(col, v string) error {
	field := reflect.ValueOf(r).Elem().Field(slices.Index(columns, col))
	var parsed any
	var err error
	switch field.Interface().(type) {
	case string:
		field.SetString(v)
		return nil
	case *float64:
		parsed, err = strconv.ParseFloat(v, 64)
	case *int64:
		parsed, err = strconv.ParseInt(v, 10, 64)
	case *bool:
		parsed, err = strconv.ParseBool(v)
	default:
		return fmt.Errorf("column %s has no CSV reading", col)
	}
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) {
			err = ne.Err
		}
		return fmt.Errorf("%q: %v", v, err)
	}
	value := reflect.New(field.Type().Elem())
	value.Elem().Set(reflect.ValueOf(parsed))
	field.Set(value)
	return nil
}

func (o *Outcomes) add(r record, canarySLO time.Duration) error {
	at, err := time.Parse(time.RFC3339Nano, r.Time)
	if err != nil {
		return fmt.Errorf("time %q: want an RFC 3339 time", r.Time)
	}
	latency := func() (time.Duration, error) {
		if r.LatencyMs == nil || *r.LatencyMs < 0 || math.IsNaN(*r.LatencyMs) || *r.LatencyMs > float64(math.MaxInt64/int64(time.Millisecond)) {
			return 0, fmt.Errorf("a %s needs latencyMs, a number of milliseconds ≥ 0", r.Kind)
		}
		return time.Duration(math.Round(*r.LatencyMs * float64(time.Millisecond))), nil // to the nanosecond
	}
	val := func(p *int64) int64 {
		if p == nil {
			return 0
		}
		return *p
	}
	is := func(p *bool) bool { return p != nil && *p }
	if b := val(r.TrackedBytes); b < 0 || b > store.MaxTrackedBytes {
		return fmt.Errorf("trackedBytes %d: want a number of bytes in [0, %d] (1 PiB, beyond any server's memory)", b, store.MaxTrackedBytes)
	}
	switch r.Kind {
	case "storm":
		lat, err := latency()
		if err != nil {
			return err
		}
		outcome := store.ClassifyCode(r.Code)
		if r.Outcome != "" {
			outcome = store.Outcome(r.Outcome)
			if !slices.Contains(store.Outcomes, outcome) {
				return fmt.Errorf("outcome %q: want one of %v", r.Outcome, store.Outcomes)
			}
		}
		o.Storm = append(o.Storm, store.StormOp{Scheduled: at, Latency: lat, Stage: r.Stage, Outcome: outcome, Code: r.Code, TrackedBytes: val(r.TrackedBytes)})
	case "canary":
		lat, err := latency()
		if err != nil {
			return err
		}
		if r.Outcome != "" && r.Outcome != string(store.Completed) && r.Outcome != string(store.Failed) {
			return fmt.Errorf("canary outcome %q: want completed or failed", r.Outcome)
		}
		completed := r.Outcome == string(store.Completed) || (r.Outcome == "" && r.Code == "")
		ok := completed && lat <= canarySLO
		if r.OK != nil {
			ok = *r.OK
		}
		o.Canaries = append(o.Canaries, store.CanaryOp{Scheduled: at, Latency: lat, Write: is(r.Write), OK: ok, Code: r.Code})
	case "kill":
		k := store.Kill{At: at, OpID: val(r.OpID), TrackedBytes: val(r.TrackedBytes), Queued: is(r.Queued), Queue: r.Queue, Stage: r.Stage, Err: r.Err}
		if r.Queue != "" {
			if !slices.Contains(store.Queues[:3], r.Queue) {
				return fmt.Errorf("queue %q: want one of %v", r.Queue, store.Queues[:3])
			}
			running := r.Queue == store.QueueRunning
			if r.Queued != nil && *r.Queued == running {
				return fmt.Errorf("queue %q contradicts queued %v", r.Queue, *r.Queued)
			}
			k.Queued = !running
		}
		o.Kills = append(o.Kills, k)
	default:
		return fmt.Errorf("kind %q: want storm, canary or kill", r.Kind)
	}
	return nil
}
