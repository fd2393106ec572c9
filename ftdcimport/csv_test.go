package ftdcimport

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Every column reads the same from CSV as from JSON lines: strings as
// they are, numbers and bools parsed; a value that does not parse is an
// error naming the file, line, column and value.
func TestOutcomesCSVReadsEveryColumnAsJSONLinesDo(t *testing.T) {
	dir := t.TempDir()
	csv := writeFile(t, filepath.Join(dir, "o.csv"), strings.Join(columns, ",")+"\n"+
		"storm,2025-06-01T10:00:10Z,120.5,shed,QueryMemoryLimitExceeded,$setWindowFields,1048576,,,,,\n"+
		"canary,2025-06-01T10:00:12Z,3,,,,,true,false,,,\n"+
		"kill,2025-06-01T10:00:13Z,,,,,2097152,,,42,true,no such op\n")
	jsonl := writeFile(t, filepath.Join(dir, "o.jsonl"),
		`{"kind":"storm","time":"2025-06-01T10:00:10Z","latencyMs":120.5,"outcome":"shed","code":"QueryMemoryLimitExceeded","stage":"$setWindowFields","trackedBytes":1048576}`+"\n"+
			`{"kind":"canary","time":"2025-06-01T10:00:12Z","latencyMs":3,"write":true,"ok":false}`+"\n"+
			`{"kind":"kill","time":"2025-06-01T10:00:13Z","trackedBytes":2097152,"opid":42,"queued":true,"err":"no such op"}`+"\n")
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
