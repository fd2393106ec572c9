package ftdcimport

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/ftdc"
	"github.com/qmlsab/qmlsab/store"
)

var t0 = time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)

// writeMember writes n seconds of one member's diagnostic data from t0:
// a primary whose low-priority queue admits 10 ops a second and whose
// shedder sheds 2 a second.
func writeMember(t *testing.T, dir, name string, n int, primary bool) {
	t.Helper()
	w, err := ftdc.NewWriter(dir, ftdc.WriterOptions{Metadata: bson.D{{Key: "buildInfo", Value: bson.D{{Key: "version", Value: "8.0.4"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	pid := bson.NewObjectID()
	for i := range n {
		at := t0.Add(time.Duration(i) * time.Second)
		ss := bson.D{{Key: "start", Value: at}, {Key: "host", Value: name}, {Key: "uptimeMillis", Value: int64(60000 + i*1000)},
			{Key: "mem", Value: bson.D{{Key: "resident", Value: int32(1000 + i)}}},
			{Key: "queues", Value: bson.D{{Key: "execution", Value: bson.D{{Key: "read", Value: bson.D{
				{Key: "lowPriority", Value: bson.D{{Key: "removedFromQueue", Value: int64(10 * i)}, {Key: "canceled", Value: int64(0)}, {Key: "queueLength", Value: int64(i % 5)}}},
				{Key: "totalTickets", Value: int32(64)}}}}}}},
			{Key: "queryMemory", Value: bson.D{{Key: "loadShedding", Value: bson.D{{Key: "operationsShed", Value: int64(2 * i)}}}}},
			{Key: "repl", Value: bson.D{{Key: "topologyVersion", Value: bson.D{{Key: "processId", Value: pid}}}, {Key: "isWritablePrimary", Value: primary}}}}
		if err := w.Add(bson.D{{Key: "start", Value: at}, {Key: "serverStatus", Value: ss}, {Key: "end", Value: at}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// fixture writes two members' diagnostic data (two minutes) and returns
// the folder.
func fixture(t *testing.T) string {
	dir := t.TempDir()
	writeMember(t, filepath.Join(dir, "m0", "diagnostic.data"), "db0:27017", 120, true)
	writeMember(t, filepath.Join(dir, "m1", "diagnostic.data"), "db1:27017", 120, false)
	return dir
}

func writeFile(t *testing.T, path, text string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const goodSpec = `# two trials of one deployment
diagnosticData: [m0/diagnostic.data, m1/diagnostic.data]
phases: {warmup: 5s, storm: 30s, recovery: 10s}
arms:
  D: {killOp: true}
trials:
  - {arm: D, start: "2025-06-01T10:00:00Z"}
  - {arm: E, start: "2025-06-01T10:01:00Z"}
`

func TestImportBuildsARunWithAbsentClientMetrics(t *testing.T) {
	dir := fixture(t)
	spec, err := LoadSpec(writeFile(t, filepath.Join(dir, "import.yaml"), goodSpec))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	res, err := Import(spec, out, Options{ToolVersion: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Trials != 2 || res.Simulated {
		t.Errorf("result %+v: want 2 trials, not simulated (mongod wrote it)", res)
	}
	r, err := store.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	m := r.Manifest
	if m.Imported == nil || m.Imported.From != "ftdc" || m.Target != TargetImported || m.Simulated {
		t.Errorf("manifest: imported %+v target %q simulated %v", m.Imported, m.Target, m.Simulated)
	}
	if got := m.Imported.Missing; !slices.Equal(got["D"], []string{store.StormRecords, store.CanaryRecords, store.KillRecords}) ||
		!slices.Equal(got["E"], []string{store.StormRecords, store.CanaryRecords}) {
		t.Errorf("missing %v: D ran the killOp actor, whose kills only a client sees", got)
	}
	d, e := r.Trials["D"][0], r.Trials["E"][0]
	for _, name := range []string{"availability", "storm_completed", "canary_p99_ms", "victim_tracked_bytes_p50"} {
		if _, ok := d.Metrics[name]; ok {
			t.Errorf("D %s present (%v): without client outcomes it is absent, not zero", name, d.Metrics[name])
		}
	}
	if _, ok := d.Metrics["actor_kills_per_s"]; ok || d.Absent["actor_kills_per_s"] == "" {
		t.Error("D actor_kills_per_s present although the killOp actor's kills are unknown")
	}
	// The shedder sheds 2/s and the queue admits 10/s on the primary: the
	// server's sheds are in the diagnostic data whatever a client saw.
	if e.Metrics["server_sheds_per_s"] != 2 || d.Metrics["server_sheds_per_s"] != 2 || e.Metrics["admissions_per_s"] != 10 ||
		d.Metrics["admissions_per_s"] != 10 || e.Metrics["read_tickets_median"] != 64 {
		t.Errorf("E metrics %v, D %v", e.Metrics, d.Metrics)
	}
	// Diagnostic data has no census: the primary's life names no queue.
	if lives := e.PrimaryLives; len(lives) != 1 || lives[0].Cause != store.LifeTrialEnded || lives[0].HeaviestQueue != "" {
		t.Errorf("E's primary lives %+v: want one, to the trial's end, naming no queue", lives)
	}
	if d.Metrics["failovers"] != 0 || d.Metrics["restarts"] != 0 {
		t.Errorf("D failovers %v restarts %v", d.Metrics["failovers"], d.Metrics["restarts"])
	}
	if d.Victims != nil {
		t.Errorf("victims %+v without storm records", d.Victims)
	}
	samples, err := store.ReadJSONLinesGz[store.Sample](filepath.Join(store.TrialDir(out, "E", 1), store.SamplesFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 2*45 || !samples[0].FromFTDC || samples[0].At.Before(t0.Add(time.Minute)) {
		t.Errorf("%d samples in E's 45 s window of two members, first %+v", len(samples), samples[0])
	}
	series, _ := store.ReadJSONLinesGz[store.Second](filepath.Join(store.TrialDir(out, "E", 1), store.SeriesFile))
	if len(series) != 45 || !series[10].FTDC || series[10].Primary != "db0:27017" {
		t.Errorf("series: %d seconds, second 10 %+v", len(series), series[10])
	}
	if _, err := Import(spec, out, Options{}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("a second import into the same folder: %v", err)
	}
}

func TestImportTakesClientOutcomes(t *testing.T) {
	dir := fixture(t)
	writeFile(t, filepath.Join(dir, "client.csv"), "kind,time,latencyMs,outcome,code,stage,trackedBytes,write,ok\n"+
		"storm,2025-06-01T10:00:10Z,120.5,completed,,$sort,,,\n"+
		"storm,2025-06-01T10:00:11Z,80,,QueryMemoryLimitExceeded,$group,33554432,,\n"+
		"canary,2025-06-01T10:00:12Z,3,,,,,false,\n"+
		"canary,2025-06-01T10:00:13Z,1500,completed,,,,true,\n"+
		"kill,2025-06-01T10:00:14Z,,,,$setWindowFields,50331648,,\n"+
		"canary,2025-06-01T11:00:00Z,1,,,,,,\n")
	spec, err := LoadSpec(writeFile(t, filepath.Join(dir, "import.yaml"), "outcomes: client.csv\n"+goodSpec))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Import(spec, filepath.Join(dir, "out"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Missing) != 1 || !slices.Equal(res.Missing["E"], []string{store.StormRecords, store.CanaryRecords}) ||
		len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "1 record(s)") {
		t.Errorf("missing %v notes %v: E's window has no client records; the 11:00 canary falls in no trial", res.Missing, res.Notes)
	}
	r, _ := store.Open(filepath.Join(dir, "out"))
	d := r.Trials["D"][0].Metrics
	// One canary within the 1 s SLO of two; one storm op shed, one
	// completed; 2/s sheds from the server and, apart, one actor kill (of
	// an op not waiting for a ticket: running) in the 30 s storm.
	if d["availability"] != 0.5 || d["storm_shed"] != 1 || d["storm_completed"] != 1 || d["victim_tracked_bytes_p50"] != 33554432 ||
		d["server_sheds_per_s"] != 2 || d["actor_kills_per_s"] != 1.0/30 || d["actor_kills_running_per_s"] != 1.0/30 {
		t.Errorf("D metrics %v", d)
	}
	if v, ok := r.Trials["E"][0].Metrics["availability"]; ok {
		t.Errorf("E availability %v: no canary of the file is in its window, so it is absent, not zero", v)
	}
}

func TestImportErrorsNameTheFileAndLine(t *testing.T) {
	dir := fixture(t)
	writeFile(t, filepath.Join(dir, "bad.jsonl"), `{"kind":"storm","time":"2025-06-01T10:00:10Z","latencyMs":3}`+"\n"+`{"kind":"storm","time":"yesterday","latencyMs":3}`+"\n")
	writeFile(t, filepath.Join(dir, "bad.csv"), "kind,time,colour\n")
	// 2^63−1 tracked bytes: the victims histogram grew a bin per 8 MiB up
	// to it and the import ran out of memory.
	writeFile(t, filepath.Join(dir, "huge.jsonl"), `{"kind":"kill","time":"2025-06-01T10:00:11Z","opid":4,"trackedBytes":1048576}`+"\n"+
		`{"kind":"storm","time":"2025-06-01T10:00:10Z","latencyMs":3,"outcome":"shed","trackedBytes":9223372036854775807}`+"\n")
	writeFile(t, filepath.Join(dir, "huge.csv"), "kind,time,latencyMs,outcome,trackedBytes\nstorm,2025-06-01T10:00:10Z,3,shed,1125899906842625\n")
	writeFile(t, filepath.Join(dir, "negative.jsonl"), `{"kind":"kill","time":"2025-06-01T10:00:11Z","opid":4,"trackedBytes":-1}`+"\n")
	for _, tc := range []struct{ spec, want string }{
		{"trials:\n  - {arm: D, start: 2025-06-01T10:00:00Z}\ncolour: blue\n", `:3: field colour not found`},
		{"diagnosticData: [m0/diagnostic.data]\nphases: {storm: 30s}\ntrials:\n  - arm: D\n    start: noon\n", `:5: trial 1: start "noon": want an RFC 3339 time`},
		{"diagnosticData: [m0/diagnostic.data]\nphases: {storm: 0s}\ntrials:\n  - {arm: D, start: 2025-06-01T10:00:00Z}\n", `:2: phases: storm must be longer than 0`},
		{"diagnosticData: [m0/diagnostic.data, nowhere]\nphases: {storm: 30s}\ntrials:\n  - {arm: D, start: 2025-06-01T10:00:00Z}\n", `:1: diagnosticData nowhere: stat`},
		{"phases: {storm: 30s}\ntrials:\n  - {arm: D, start: 2025-06-01T10:00:00Z}\n", `:3: trial 1: no diagnosticData for arm D`},
		{"phases: {storm: 3x}\n", ":1: `3x`: want a duration like 30s"},
		{"trials: []\n", `:1: no trials`},
		{"diagnosticData: [m0/diagnostic.data]\nphases: {storm: 30s}\ntrials:\n  - {arm: D, start: 2025-06-01T10:00:00Z}\n  - {arm: D, start: 2025-06-02T10:00:00Z}\n",
			`:5: trial 2 (arm D, 2025-06-02T10:00:00Z until 2025-06-02T10:00:30Z): no diagnostic data in its window; the data spans`},
		{"outcomes: bad.jsonl\ndiagnosticData: [m0/diagnostic.data]\nphases: {storm: 30s}\ntrials:\n  - {arm: D, start: 2025-06-01T10:00:00Z}\n", `bad.jsonl:2: time "yesterday"`},
		{"outcomes: bad.csv\ndiagnosticData: [m0/diagnostic.data]\nphases: {storm: 30s}\ntrials:\n  - {arm: D, start: 2025-06-01T10:00:00Z}\n", `bad.csv:1: unknown column "colour"`},
		{"trials:\n  - {arm: D, start: 2025-06-01T10:00:00Z}\n---\ntrials: []\n", `:3: a second YAML document`},
		{"outcomes: huge.jsonl\ndiagnosticData: [m0/diagnostic.data]\nphases: {storm: 30s}\ntrials:\n  - {arm: D, start: 2025-06-01T10:00:00Z}\n", `huge.jsonl:2: trackedBytes 9223372036854775807: want a number of bytes in [0, 1125899906842624]`},
		{"outcomes: huge.csv\ndiagnosticData: [m0/diagnostic.data]\nphases: {storm: 30s}\ntrials:\n  - {arm: D, start: 2025-06-01T10:00:00Z}\n", `huge.csv:2: trackedBytes 1125899906842625: want`},
		{"outcomes: negative.jsonl\ndiagnosticData: [m0/diagnostic.data]\nphases: {storm: 30s}\ntrials:\n  - {arm: D, start: 2025-06-01T10:00:00Z}\n", `negative.jsonl:1: trackedBytes -1: want`},
		{"workload: merge_partial_write\ndiagnosticData: [m0/diagnostic.data]\nphases: {storm: 30s}\ntrials:\n  - {arm: D, start: 2025-06-01T10:00:00Z}\n", `:1: workload merge_partial_write is a merge_partial_write workload`},
	} {
		path := writeFile(t, filepath.Join(dir, "spec.yaml"), tc.spec)
		out := filepath.Join(dir, "out")
		spec, err := LoadSpec(path)
		if err == nil {
			_, err = Import(spec, out, Options{})
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q:\n got %v\nwant …%s…", tc.spec, err, tc.want)
		}
		if strings.HasPrefix(tc.want, ":") && err != nil && !strings.HasPrefix(err.Error(), path+":") {
			t.Errorf("%v: the error must name %s and the line", err, path)
		}
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "out") || strings.HasPrefix(e.Name(), ".out") {
				t.Errorf("a failed import left %s behind", e.Name())
			}
		}
	}
}

func TestOutcomeLatenciesKeepTheirNanoseconds(t *testing.T) {
	path := writeFile(t, filepath.Join(t.TempDir(), "o.jsonl"), `{"kind":"canary","time":"2025-06-01T10:00:00Z","latencyMs":2.111338}`+"\n")
	o, err := LoadOutcomes(context.Background(), path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Canaries) != 1 || o.Canaries[0].Latency != 2111338*time.Nanosecond || !o.Canaries[0].OK {
		t.Errorf("canaries %+v", o.Canaries)
	}
}
