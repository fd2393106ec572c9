package ftdcimport

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// A UTF-8 byte-order mark, as spreadsheet exports and some editors write
// it, is not part of the first header name or the first JSON line: the
// file reads exactly as it does without one.
func TestOutcomesAcceptAByteOrderMark(t *testing.T) {
	const bom = "\uFEFF"
	dir := t.TempDir()
	for _, tc := range []struct{ name, body string }{
		{"o.csv", "kind,time,latencyMs,outcome\n" +
			"storm,2025-06-01T10:00:10Z,120.5,completed\n" +
			"canary,2025-06-01T10:00:12Z,3,\n"},
		{"o.jsonl", `{"kind":"storm","time":"2025-06-01T10:00:10Z","latencyMs":120.5,"outcome":"completed"}` + "\n" +
			`{"kind":"canary","time":"2025-06-01T10:00:12Z","latencyMs":3}` + "\n"},
	} {
		plain, err := LoadOutcomes(context.Background(), writeFile(t, filepath.Join(dir, "plain-"+tc.name), tc.body), time.Second)
		if err != nil {
			t.Fatalf("%s without a mark: %v", tc.name, err)
		}
		if len(plain.Storm) != 1 || len(plain.Canaries) != 1 {
			t.Fatalf("%s without a mark: storm %v canaries %v, want one of each", tc.name, plain.Storm, plain.Canaries)
		}
		marked, err := LoadOutcomes(context.Background(), writeFile(t, filepath.Join(dir, "bom-"+tc.name), bom+tc.body), time.Second)
		if err != nil {
			t.Fatalf("%s with a byte-order mark: %v", tc.name, err)
		}
		if !reflect.DeepEqual(marked, plain) {
			t.Errorf("%s with a byte-order mark read %+v, without %+v", tc.name, marked, plain)
		}
	}
	// Only a leading mark is skipped: one inside the file is still an error
	// naming the file and line.
	path := writeFile(t, filepath.Join(dir, "mid.jsonl"), `{"kind":"canary","time":"2025-06-01T10:00:12Z","latencyMs":3}`+"\n"+bom+`{"kind":"canary","time":"2025-06-01T10:00:13Z","latencyMs":3}`+"\n")
	if _, err := LoadOutcomes(context.Background(), path, time.Second); err == nil || !strings.Contains(err.Error(), path+":2:") {
		t.Errorf("a mark inside the file: got %v, want an error at %s:2", err, path)
	}
	// An empty file and one holding only the mark read as no records.
	for _, body := range []string{"", bom} {
		o, err := LoadOutcomes(context.Background(), writeFile(t, filepath.Join(dir, "empty.jsonl"), body), time.Second)
		if err != nil || len(o.Storm)+len(o.Canaries)+len(o.Kills) != 0 {
			t.Errorf("body %q: %+v, %v; want no records and no error", body, o, err)
		}
	}
}

// Every column reads the same from CSV as from JSON lines: strings as
// they are, numbers and bools parsed; a value that does not parse is an
// error naming the file, line, column and value.
func TestOutcomesCSVReadsEveryColumnAsJSONLinesDo(t *testing.T) {
	dir := t.TempDir()
	csv := writeFile(t, filepath.Join(dir, "o.csv"), strings.Join(columns, ",")+"\n"+
		"storm,2025-06-01T10:00:10Z,120.5,shed,QueryMemoryLimitExceeded,$setWindowFields,1048576,,,,,,\n"+
		"canary,2025-06-01T10:00:12Z,3,,,,,true,false,,,,\n"+
		"kill,2025-06-01T10:00:13Z,,,,,2097152,,,42,true,low_priority_queue,no such op\n")
	jsonl := writeFile(t, filepath.Join(dir, "o.jsonl"),
		`{"kind":"storm","time":"2025-06-01T10:00:10Z","latencyMs":120.5,"outcome":"shed","code":"QueryMemoryLimitExceeded","stage":"$setWindowFields","trackedBytes":1048576}`+"\n"+
			`{"kind":"canary","time":"2025-06-01T10:00:12Z","latencyMs":3,"write":true,"ok":false}`+"\n"+
			`{"kind":"kill","time":"2025-06-01T10:00:13Z","trackedBytes":2097152,"opid":42,"queued":true,"queue":"low_priority_queue","err":"no such op"}`+"\n")
	fromCSV, err := LoadOutcomes(context.Background(), csv, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	fromJSON, err := LoadOutcomes(context.Background(), jsonl, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(fromJSON.Storm) != 1 || len(fromJSON.Canaries) != 1 || len(fromJSON.Kills) != 1 {
		t.Fatalf("JSON lines read %+v, want one storm op, canary and kill", fromJSON)
	}
	if !reflect.DeepEqual(fromCSV, fromJSON) {
		t.Errorf("CSV read %+v, JSON lines %+v", fromCSV, fromJSON)
	}
	for col, bad := range map[string]string{"latencyMs": "fast", "trackedBytes": "1.5", "write": "maybe"} {
		// The bad value is the one error: it is read before the line is.
		path := writeFile(t, filepath.Join(dir, col+".csv"), "kind,time,"+col+"\ncanary,2025-06-01T10:00:12Z,"+bad+"\n")
		_, err := LoadOutcomes(context.Background(), path, time.Second)
		if want := path + ":2: " + col + `: "` + bad + `": invalid syntax`; err == nil || err.Error() != want {
			t.Errorf("%s %q: %v, want %s", col, bad, err, want)
		}
	}
}

// A kill's queue is one of the places a killOp actor kills from, and
// agrees with queued; a kill that says neither has an unknown queue.
func TestOutcomesKillQueue(t *testing.T) {
	dir := t.TempDir()
	for line, want := range map[string]string{
		`{"kind":"kill","time":"2025-06-01T10:00:13Z","queue":"idle_cursors"}`:                     `queue "idle_cursors": want one of`,
		`{"kind":"kill","time":"2025-06-01T10:00:13Z","queued":true,"queue":"running"}`:            `queue "running" contradicts queued true`,
		`{"kind":"kill","time":"2025-06-01T10:00:13Z","queue":"normal_priority_queue"}`:            "",
		`{"kind":"kill","time":"2025-06-01T10:00:13Z","queued":false,"queue":"running"}`:           "",
		`{"kind":"kill","time":"2025-06-01T10:00:13Z","queued":true,"queue":"low_priority_queue"}`: "",
	} {
		path := writeFile(t, filepath.Join(dir, "o.jsonl"), line+"\n")
		o, err := LoadOutcomes(context.Background(), path, time.Second)
		switch {
		case want != "" && (err == nil || !strings.Contains(err.Error(), path+":1: "+want)):
			t.Errorf("%s: %v, want %s:1: %s…", line, err, path, want)
		case want == "" && err != nil:
			t.Errorf("%s: %v", line, err)
		case want == "" && (o.Kills[0].Queue == "" || o.Kills[0].Queued != (o.Kills[0].Queue != "running")):
			t.Errorf("%s: read %+v", line, o.Kills[0])
		}
	}
}
