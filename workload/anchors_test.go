package workload

import (
	"strings"
	"testing"
	"time"
)

// A workload file may share values through a top-level anchored
// definition, aliases and merge keys, and out-of-bounds values reached
// through them are still refused at a line of the file.
func TestWorkloadFileTakesAnchorsAndMergeKeys(t *testing.T) {
	doc := "phasesShared: &ph {warmup: 2s, storm: 20s}\n" +
		"name: shared\nkind: spill_to_disk\nspill_to_disk:\n" +
		"  phases: {<<: *ph, recovery: 4s}\n" +
		"  stormRate: 60\n"
	s, err := Parse("w.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	p := s.SpillToDisk.Phases
	if s.Name != "shared" || p.Warmup != 2*time.Second || p.Storm != 20*time.Second || p.Recovery != 4*time.Second || s.SpillToDisk.StormRate != 60 {
		t.Errorf("got %+v phases %+v", s, p)
	}
	bad := "rate: &r -5\nname: x\nkind: spill_to_disk\nspill_to_disk:\n  stormRate: *r\n"
	if _, err := Parse("w.yaml", []byte(bad)); err == nil || !strings.Contains(err.Error(), "w.yaml:5: spill_to_disk.stormRate: -5 is outside") {
		t.Errorf("an aliased out-of-bounds rate: %v", err)
	}
}
