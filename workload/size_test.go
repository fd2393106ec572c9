package workload

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// A size in a workload file reads as people write it: holdBytes: 8MiB is
// the same workload (and so, seeded, the same run) as holdBytes: 8388608.
func TestWorkloadSizesAsWritten(t *testing.T) {
	doc := func(hold, load string) []byte {
		return []byte("name: w\nkind: spill_to_disk\nspill_to_disk:\n  holdBytes: " + hold + "\n  loadBytes: " + load + "\n")
	}
	human, err := Parse("human.yaml", doc("8MiB", "20 mib"))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := Parse("plain.yaml", doc("8388608", "20971520"))
	if err != nil {
		t.Fatal(err)
	}
	hj, _ := json.Marshal(human)
	pj, _ := json.Marshal(plain)
	if !bytes.Equal(hj, pj) {
		t.Errorf("8MiB/20 mib and 8388608/20971520 differ:\n%s\n%s", hj, pj)
	}
	if human.SpillToDisk.HoldBytes.Bytes() != 8<<20 || human.SpillToDisk.LoadBytes.Bytes() != 20<<20 {
		t.Errorf("hold %d load %d", human.SpillToDisk.HoldBytes, human.SpillToDisk.LoadBytes)
	}
	// trial.json and the run's spec keep plain bytes.
	if !strings.Contains(string(hj), `"hold_bytes":8388608`) {
		t.Errorf("JSON should keep bytes: %s", hj)
	}
	// workloads show writes human sizes, and they read back.
	out, err := Marshal(human)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "holdBytes: 8MiB") || !strings.Contains(string(out), "docBytes: 5000B") {
		t.Errorf("Marshal should write human sizes:\n%s", out)
	}
	back, err := Parse("back.yaml", out)
	if err != nil {
		t.Fatal(err)
	}
	if bj, _ := json.Marshal(back); !bytes.Equal(bj, hj) {
		t.Errorf("written sizes do not read back:\n%s\n%s", bj, hj)
	}
}

// Decimal prefixes are refused at the key's line with the binary
// spelling; a bad duration is said without Go's type names.
func TestWorkloadSizeAndDurationErrors(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{"  holdBytes: 8MB\n", "w.yaml:4: "},
		{"  holdBytes: lots\n", "a size like 8MiB"},
		{"  phases:\n    storm: 30 seconds\n", "a duration like 30s"},
	} {
		_, err := Parse("w.yaml", []byte("name: w\nkind: spill_to_disk\nspill_to_disk:\n"+c.body))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "time.Duration") || strings.Contains(err.Error(), "int64") {
			t.Errorf("%q: %v; want an error containing %q and no Go type", c.body, err, c.want)
		}
	}
	_, err := Parse("w.yaml", []byte("name: w\nkind: spill_to_disk\nspill_to_disk:\n  holdBytes: 8MB\n"))
	if err == nil || !strings.Contains(err.Error(), "8MiB") {
		t.Errorf("8MB: %v; want the binary spelling suggested", err)
	}
}
