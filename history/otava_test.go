package history

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestExportOtava(t *testing.T) {
	r1 := sampleRun("n1", 1, "master", "find")
	r0 := sampleRun("n0", 0, "master", "find")
	r0.Labels["arm"] = "label loses to the arm attribute"
	delete(r0.Labels, "branch")
	var buf bytes.Buffer
	if err := ExportOtava(&buf, []Run{r1, r0}, OtavaOptions{Metrics: []string{"ops/s", "latency.p99_ms"}}); err != nil {
		t.Fatal(err)
	}
	// Decode as Otava's importer reads it: an array of entries with an
	// integer timestamp, metrics as name/value pairs, string attributes.
	var got []struct {
		Timestamp  int64             `json:"timestamp"`
		Metrics    []map[string]any  `json:"metrics"`
		Attributes map[string]string `json:"attributes"`
	}
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("%v in\n%s", err, buf.String())
	}
	if len(got) != 4 {
		t.Fatalf("%d entries, want 4 (2 runs x 2 arms):\n%s", len(got), buf.String())
	}
	e := got[1] // n0, arm "shed" (the run's second arm)
	if e.Timestamp != r0.Started.Unix() || got[2].Timestamp != r1.Started.Unix() {
		t.Fatalf("timestamps %d, %d", e.Timestamp, got[2].Timestamp)
	}
	wantAttrs := map[string]string{"branch": "", "ci.job": "nightly", "run": "n0", "workload": "find",
		"workload_digest": "sha256:find", "arm": "shed", "build": "8.1.0-0"}
	if g, w := jsonOf(t, e.Attributes), jsonOf(t, wantAttrs); g != w {
		t.Fatalf("attributes %s, want %s", g, w)
	}
	// Medians over trials 0..2 of arm "shed" on day 0: 100, 101, 102.
	wantMetrics := `[{"name":"latency.p99_ms","value":101},{"name":"ops/s","value":4999}]`
	if g, _ := json.Marshal(e.Metrics); string(g) != wantMetrics {
		t.Fatalf("metrics %s, want %s", g, wantMetrics)
	}
	if got[3].Attributes["branch"] != "master" || got[0].Attributes["arm"] != "base" {
		t.Fatalf("entries %+v", got)
	}

	buf.Reset()
	if err := ExportOtava(&buf, []Run{r0, r1}, OtavaOptions{Arms: []string{"shed"}}); err != nil {
		t.Fatal(err)
	}
	entries := OtavaEntries([]Run{r0, r1}, OtavaOptions{Arms: []string{"shed"}})
	if len(entries) != 2 || len(entries[0].Metrics) != 3 || entries[0].Attributes["arm"] != "shed" {
		t.Fatalf("one-arm export %+v", entries)
	}
	buf.Reset()
	if err := ExportOtava(&buf, nil, OtavaOptions{}); err != nil || strings.TrimSpace(buf.String()) != "[]" {
		t.Fatalf("empty export %q, %v", buf.String(), err)
	}
}
