package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/internal/stormtest/remoteset"
	"github.com/qmlsab/qmlsab/store"
)

// A run whose uri arm names loopback members only, of a set with a
// member on another machine (found through hello.hosts), refuses the arm
// naming that member and --allow-remote, and exits non-zero; the
// member's parameter is untouched. With --allow-remote the run measures
// the set, that member sampled with the others: every client of the
// trial, not only provisioning's, may reach it.
func TestRunRefusesAMemberDiscoveredOutsideLoopbackUnlessAllowed(t *testing.T) {
	if testing.Short() {
		t.Skip("a short wall-clock trial on an in-process mongosim set")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rs := remoteset.StartRemoteMemberSet(t, ctx, nil)
	const param = "queryMemoryLoadSheddingLowMarkPercent"
	before := remoteset.Parameter(t, ctx, rs.Remote, param)
	tmp := t.TempDir()
	armsFile, wl := filepath.Join(tmp, "arms.yaml"), filepath.Join(tmp, "short.yaml")
	for name, doc := range map[string]string{
		armsFile: "arms:\n  - name: U\n    target: uri\n    uri: \"" + rs.SeedURI + "\"\n    setParameters: {" + param + ": \"17\"}\n",
		wl:       "name: short\nkind: spill_to_disk\nspill_to_disk:\n  stormRate: 5\n  phases: {warmup: 1s, storm: 2s, recovery: 1s}\n",
	} {
		if err := os.WriteFile(name, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, code := qmlsab(t, "run", "--arms", "U", "--arms-file", armsFile, "--workload", wl, "--n", "1", "--out", filepath.Join(tmp, "refused"))
	if code == 0 {
		t.Errorf("a run on a set with a member outside loopback exited 0 without --allow-remote:\n%s", out)
	}
	for _, want := range []string{"refusing non-loopback target " + rs.Remote, "--allow-remote"} {
		if !strings.Contains(out, want) {
			t.Errorf("the refused run does not say %q:\n%s", want, out)
		}
	}
	if got := remoteset.Parameter(t, ctx, rs.Remote, param); got != before {
		t.Errorf("%s on %s is %s after the refused run, want %s untouched", param, rs.Remote, got, before)
	}

	dir := filepath.Join(tmp, "allowed")
	out, code = qmlsab(t, "run", "--arms", "U", "--arms-file", armsFile, "--workload", wl, "--n", "1", "--allow-remote", "--out", dir)
	if code != 0 {
		t.Fatalf("--allow-remote given: exit %d\n%s", code, out)
	}
	samples, err := store.ReadJSONLinesGz[store.Sample](filepath.Join(store.TrialDir(dir, "U", 1), store.SamplesFile))
	if err != nil {
		t.Fatal(err)
	}
	up := 0
	for _, s := range samples {
		if s.Member == rs.Remote && s.Up {
			up++
		}
	}
	if up == 0 {
		t.Errorf("--allow-remote given: no sample of %s answered (%d samples in all); the sampler was refused the member", rs.Remote, len(samples))
	}
}
