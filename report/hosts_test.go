package report

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/workload"
)

// Hand-computed cases: one stratum is the ordinary rank-sum test's normal
// approximation, ties take the tie correction, and strata of different
// sizes are weighted by 1/(N_h+1).
func TestVanElterenByHand(t *testing.T) {
	for _, c := range []struct {
		name   string
		strata []Stratum
		z      float64
	}{
		// W = 3+4 = 7, E = 2·5/2 = 5, Var = 2·2·5/12 = 5/3.
		{"one stratum", []Stratum{{Base: []float64{1, 2}, Arm: []float64{3, 4}}}, 2 / math.Sqrt(5.0/3)},
		// Mid-ranks 2, 2, 2, 4: W = 6, E = 5, Var = 5/3 − 2·2·24/(12·4·3) = 1.
		{"ties", []Stratum{{Base: []float64{1, 1}, Arm: []float64{1, 2}}}, 1},
		// Stratum 1 as above (weight 1/5); stratum 2: m=1, n=2, arm ranks
		// 2+3 = 5, E = 2·4/2 = 4, Var = 1·2·4/12 = 2/3, weight 1/4.
		// T−E = 2/5 + 1/4, Var = (5/3)/25 + (2/3)/16.
		{"two strata", []Stratum{{Base: []float64{1, 2}, Arm: []float64{3, 4}}, {Base: []float64{10}, Arm: []float64{20, 30}}},
			(2.0/5 + 1.0/4) / math.Sqrt(5.0/3/25+2.0/3/16)},
		// A mirror image: the arm lower gives −Z.
		{"lower", []Stratum{{Base: []float64{3, 4}, Arm: []float64{1, 2}}}, -2 / math.Sqrt(5.0/3)},
	} {
		z, p, used := VanElteren(c.strata)
		if math.Abs(z-c.z) > 1e-12 || math.Abs(p-math.Erfc(math.Abs(c.z)/math.Sqrt2)) > 1e-12 || used != len(c.strata) {
			t.Errorf("%s: z=%v p=%v used=%d, want z=%v", c.name, z, p, used, c.z)
		}
	}
	if z, p, used := VanElteren([]Stratum{{Base: []float64{1}}, {Arm: []float64{2}}}); !math.IsNaN(z) || !math.IsNaN(p) || used != 0 {
		t.Errorf("no stratum with both sides: z=%v p=%v used=%d, want NaN", z, p, used)
	}
	if z, p, _ := VanElteren([]Stratum{{Base: []float64{5, 5}, Arm: []float64{5, 5}}}); z != 0 || p != 1 {
		t.Errorf("all values tied: z=%v p=%v, want 0 and 1", z, p)
	}
	// Within-host shift: pairs across strata are not formed.
	if d := StratifiedHodgesLehmann([]Stratum{{Base: []float64{0, 1}, Arm: []float64{2, 3}}, {Base: []float64{100}, Arm: []float64{102}}}); d != 2 {
		t.Errorf("stratified Hodges-Lehmann %v, want 2", d)
	}
}

// hostData is the constructed experiment: three hosts whose canary p99
// differs by 0, 40 and 80 ms (a slower machine), three trials of each arm
// on each, and E's p99 1 ms above D's within every host.
func hostData() (base, arm [][]float64) {
	noise := [][]float64{{0.1, -0.2, 0.3}, {-0.1, 0.2, 0}, {0.25, -0.15, 0.05}}
	for h, offset := range []float64{0, 40, 80} {
		var b, a []float64
		for i, n := range noise[h] {
			b = append(b, 50+offset+n)
			a = append(a, 51+offset+noise[(h+1)%3][i])
		}
		base, arm = append(base, b), append(arm, a)
	}
	return base, arm
}

// On trials from three hosts with a host offset, the pooled U test misses
// the arm's effect (the offsets swamp it) and the stratified test finds
// it.
func TestStratifiedTestFindsWhatHostOffsetsHide(t *testing.T) {
	base, arm := hostData()
	var strata []Stratum
	var pooledBase, pooledArm []float64
	for h := range base {
		strata = append(strata, Stratum{Base: base[h], Arm: arm[h]})
		pooledBase, pooledArm = append(pooledBase, base[h]...), append(pooledArm, arm[h]...)
	}
	pooled := Compare("canary_p99_ms", "D", "E", pooledBase, pooledArm, 0.05)
	z, p, used := VanElteren(strata)
	t.Logf("pooled exact U p=%.3f (Δ %.2f); van Elteren z=%.2f p=%.5f (Δ within hosts %.2f) over %d hosts",
		pooled.P, pooled.Delta, z, p, StratifiedHodgesLehmann(strata), used)
	if pooled.Significant || pooled.P < 0.2 {
		t.Errorf("pooled p=%.3f: the constructed offsets should hide the effect from the pooled test", pooled.P)
	}
	if p > 0.01 || z <= 0 || used != 3 {
		t.Errorf("van Elteren z=%.2f p=%.4f over %d hosts, want the arm found higher at p ≤ 0.01", z, p, used)
	}
	if d := StratifiedHodgesLehmann(strata); math.Abs(d-1) > 0.3 {
		t.Errorf("within-host shift %.2f, want about 1 ms", d)
	}
	// No effect within hosts: the stratified test finds none.
	var null []Stratum
	for h := range base {
		null = append(null, Stratum{Base: base[h], Arm: []float64{base[h][1] + 0.05, base[h][0] - 0.05, base[h][2]}})
	}
	if _, p, _ := VanElteren(null); p < 0.3 {
		t.Errorf("no effect within hosts, yet van Elteren p=%.3f", p)
	}
}

// writeHostRun writes a merged-style run folder of the constructed data:
// three hosts, each trial's canary p99 as hostData gives it.
func writeHostRun(t *testing.T, dir string) {
	t.Helper()
	spec, _ := workload.Builtin(workload.KindSpillToDisk)
	wl, _ := json.Marshal(spec)
	m := store.Manifest{Schema: store.ManifestSchema, ToolVersion: "test", Created: time.Unix(1, 0).UTC(), Host: "merger", Seed: 1,
		Target: "embedded", Simulated: true, WorkloadName: spec.Name, Workload: wl,
		ArmList: []store.ArmInfo{{Name: "D"}, {Name: "E"}}, Plan: &store.Plan{Digest: "d", Units: 9, Arms: []string{"D", "E"}}}
	for h := range 3 {
		m.Hosts = append(m.Hosts, store.Host{Hostname: fmt.Sprintf("ci-%d", h+1), CPUModel: "Fake CPU", Cores: 4, MemoryBytes: 16 << 30, Kernel: "6.1", Target: "embedded"}.WithID())
	}
	base, arm := hostData()
	for h := range 3 {
		for i := range 3 {
			index := 3*h + i + 1
			for name, v := range map[string]float64{"D": base[h][i], "E": arm[h][i]} {
				m.Trials = append(m.Trials, store.TrialStatus{Arm: name, Index: index, Status: store.Valid, Host: m.Hosts[h].ID})
				tr := store.Trial{Schema: store.TrialSchema, Arm: name, Index: index, Started: time.Unix(int64(index), 0).UTC(), Simulated: true,
					Metrics: map[string]float64{"canary_p99_ms": v, "availability": 1}}
				if err := store.WriteTrial(store.TrialDir(dir, name, index), store.TrialFiles{Trial: tr}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if err := store.WriteJSON(filepath.Join(dir, store.ManifestFile), m); err != nil {
		t.Fatal(err)
	}
}

// The report of trials from several hosts says so, shows the per-host
// table and the stratified test beside the pooled one, in every format.
func TestReportShowsHostsAndTheStratifiedTest(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	writeHostRun(t, dir)
	a := analyze(t, dir)
	if len(a.Hosts) != 3 || a.Hosts[1].Label != "ci-2" || a.Hosts[1].N["E"] != 3 || math.Abs(a.Hosts[2].Medians["D"]["canary_p99_ms"]-130.05) > 1e-9 {
		t.Fatalf("hosts %+v", a.Hosts)
	}
	s, ok := a.Stratification("E", "canary_p99_ms")
	if !ok || !s.Significant || s.PooledSignificant || s.Strata != 3 {
		t.Fatalf("stratified %+v: want significant within hosts, not pooled", s)
	}
	html, err := HTML(a, "test")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`id="hosts"`, `id="hosts-table"`, `id="host-medians"`, `id="stratified-table"`, "ci-1", "ci-3", "Fake CPU, 4 cores, 16 GiB, kernel 6.1",
		"the trials ran on 3 hosts (ci-1, ci-2, ci-3)", fmt.Sprintf("+1.17 %% (%s)", PValue(s.P)), fmt.Sprintf("~ (%s)", PValue(s.PooledP))} {
		if !strings.Contains(string(html), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	mdOut := string(Markdown(a))
	for _, want := range []string{"**The trials ran on 3 hosts.**", "| canary p99 | ci-2 | 90 ms (n=3) | 91 ms (n=3) |", "| canary p99 | E | ~ (p = "} {
		if !strings.Contains(mdOut, want) {
			t.Errorf("summary.md lacks %q:\n%s", want, mdOut)
		}
	}
	b, err := SummaryJSON(a, "test")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Hosts []struct {
			ID, Label, Hostname string
			Cores               int
			Trials              map[string]int
			Medians             map[string]map[string]float64
		}
		Stratified []struct {
			Metric, Arm    string
			Hosts          int
			P, PooledP     float64
			Significant    bool
			Delta, PooledD *float64
		}
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Hosts) != 3 || doc.Hosts[0].ID == "" || doc.Hosts[0].Cores != 4 || doc.Hosts[0].Trials["D"] != 3 || doc.Hosts[0].Medians["E"]["canary_p99_ms"] == 0 {
		t.Errorf("summary.json hosts: %+v", doc.Hosts)
	}
	found := false
	for _, st := range doc.Stratified {
		if st.Metric == "canary_p99_ms" && st.Arm == "E" {
			found = st.Significant && st.P == s.P && st.PooledP == s.PooledP && st.Hosts == 3 && st.Delta != nil
		}
	}
	if !found {
		t.Errorf("summary.json stratified lacks E's canary p99 comparison: %+v", doc.Stratified)
	}
}

// One host: no host section, and summary.json's host keys are empty.
func TestOneHostNeedsNoHostSection(t *testing.T) {
	a := analyze(t, fixture(t))
	if len(a.Hosts) != 0 || len(a.Stratified) != 0 {
		t.Errorf("one host gave hosts %+v", a.Hosts)
	}
	html, _ := HTML(a, "test")
	if strings.Contains(string(html), `id="hosts-table"`) {
		t.Error("a one-host report shows a host section")
	}
	b, _ := SummaryJSON(a, "test")
	if !strings.Contains(string(b), `"hosts": []`) || !strings.Contains(string(b), `"stratified": []`) {
		t.Errorf("summary.json of one host: want empty hosts and stratified arrays")
	}
}

// A run written before fingerprints (its manifest names only a hostname)
// is taken to have run on the fingerprinted host of that hostname; one of
// another hostname is another host.
func TestOlderRunsJoinTheirHostByHostname(t *testing.T) {
	spec, _ := workload.Builtin(workload.KindSpillToDisk)
	wl, _ := json.Marshal(spec)
	write := func(dir, hostname string, fingerprint bool) {
		m := store.Manifest{Schema: store.ManifestSchema, Created: time.Unix(1, 0).UTC(), Host: hostname, Target: "embedded",
			WorkloadName: spec.Name, Workload: wl}
		h := store.Host{Hostname: hostname, Cores: 8}.WithID()
		if fingerprint {
			m.AddHost(h)
		}
		for _, arm := range []string{"D", "E"} {
			ts := store.TrialStatus{Arm: arm, Index: 1, Status: store.Valid}
			if fingerprint {
				ts.Host = h.ID
			}
			m.Trials = append(m.Trials, ts)
			tr := store.Trial{Schema: store.TrialSchema, Arm: arm, Index: 1, Metrics: map[string]float64{"availability": 1}}
			if err := store.WriteTrial(store.TrialDir(dir, arm, 1), store.TrialFiles{Trial: tr}); err != nil {
				t.Fatal(err)
			}
		}
		if err := store.WriteJSON(filepath.Join(dir, store.ManifestFile), m); err != nil {
			t.Fatal(err)
		}
	}
	root := t.TempDir()
	old, now, elsewhere := filepath.Join(root, "old"), filepath.Join(root, "new"), filepath.Join(root, "elsewhere")
	write(old, "box", false)
	write(now, "box", true)
	write(elsewhere, "other", false)
	in, err := Load([]string{old, now})
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Hosts) != 1 || in.Trials["D"][0].Host != in.Hosts[0].ID || in.Hosts[0].Cores != 8 {
		t.Errorf("an older run on box and a newer one: hosts %+v", in.Hosts)
	}
	if in, _ := Load([]string{old, now, elsewhere}); len(in.Hosts) != 2 {
		t.Errorf("runs on box and other: hosts %+v, want 2", in.Hosts)
	}
}
