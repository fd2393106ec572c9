package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/collect"
	"github.com/qmlsab/qmlsab/ftdc"
	"github.com/qmlsab/qmlsab/internal/stormtest"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/run"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/workload"
)

// localMongosim is cmd/mongosim behind a wrapper that sizes its model
// small (4 CPUs, 512 MiB baseline, 200 modelled documents per real one),
// so a short storm queues, with room (8 GiB) to do so without an OOM kill.
func localMongosim(t *testing.T) string {
	dir := t.TempDir()
	bin, err := stormtest.BuildMongosim(dir)
	if err != nil {
		t.Fatal(err)
	}
	wrapper := filepath.Join(dir, "mongosim-small")
	script := fmt.Sprintf("#!/bin/sh\nexec %s --simScanScale 200 --simBaselineMB 512 --simMemLimitMB 8192 --simCPUs 4 \"$@\"\n", bin)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return wrapper
}

// The acceptance test of importing diagnostic data: a D-vs-E run on two
// local sets of cmd/mongosim processes (one per trial, each writing
// diagnostic.data in its dbpath), n = 2, trials of 16 s (2 s warmup, 10 s
// storm, 4 s recovery; 64 s of wall-clock trials in all, 1 Hz sampler).
//
//  1. Round trip: every member's diagnostic data decodes to the values
//     the sampler saw at the same instants (for the fields both have).
//  2. qmlsab import ftdc of that data gives a report whose medians match
//     the run's own report for every metric FTDC carries, within what one
//     sample changes; the metrics resting on client-side records are
//     absent and the report says which and why; with a client-outcomes
//     file they are present and match too.
func TestFTDCOfARunRoundTripsAndImportsToTheSameReport(t *testing.T) {
	if testing.Short() {
		t.Skip("64 s of wall-clock trials on local mongosim sets")
	}
	bin := localMongosim(t)
	root := t.TempDir()
	if keep := os.Getenv("QMLSAB_KEEP"); keep != "" {
		root = keep // to look at a failing run's files
	}
	runDir := filepath.Join(root, "run")
	var sel []arms.Arm
	for _, n := range []string{"D", "E"} {
		a, _ := arms.Lookup(n)
		a.Target, a.Mongod = arms.TargetLocal, bin
		sel = append(sel, a)
	}
	spec, _ := workload.Builtin(workload.KindSpillToDisk)
	w := *spec.SpillToDisk
	w.Phases = workload.Phases{Warmup: 2 * time.Second, Storm: 10 * time.Second, Recovery: 4 * time.Second}
	w.ServerSelectionTimeout = 10 * time.Second
	spec.SpillToDisk = &w
	e, err := run.NewExperiment(run.Spec{Arms: sel, N: 2, Workload: spec, Seed: 1, Clock: store.ClockWall})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Run(context.Background(), e, runDir, run.Exec{ToolVersion: "test", CommandLine: []string{"qmlsab", "run", "--arms", "D,E"}}); err != nil {
		t.Fatal(err)
	}
	r, err := store.Open(runDir)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("round trip", func(t *testing.T) { roundTrip(t, r) })

	// The import spec: each arm's members' diagnostic data, each trial's
	// start, the phases; and the client-side outcomes of the same trials.
	var specYAML strings.Builder
	fmt.Fprintf(&specYAML, "phases: {warmup: 2s, storm: 10s, recovery: 4s}\narms:\n")
	for _, a := range []string{"D", "E"} {
		fmt.Fprintf(&specYAML, "  %s:\n    diagnosticData:\n", a)
		for _, tr := range r.Trials[a] {
			for m := range 3 {
				fmt.Fprintf(&specYAML, "      - %s\n", filepath.Join(store.TrialDir(runDir, a, tr.Index), fmt.Sprintf("member%d", m), "db", "diagnostic.data"))
			}
		}
	}
	fmt.Fprintf(&specYAML, "trials:\n")
	outcomes, err := os.Create(filepath.Join(root, "outcomes.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	enc := json.NewEncoder(outcomes)
	for _, ts := range r.Manifest.Trials {
		tr := trialOf(t, r, ts.Arm, ts.Index)
		if got, want := tr.Phases["storm"], 2.0; got != want || tr.Phases["recovery"] != 12 {
			t.Fatalf("trial %s#%d phases %v", ts.Arm, ts.Index, tr.Phases)
		}
		dir := store.TrialDir(runDir, ts.Arm, ts.Index)
		// The run's records go on until the storm's last op returned (its
		// last sample, or the driver's last topology event): the import
		// takes the same window, and one diagnostic sample more.
		sampled, _ := store.ReadJSONLinesGz[store.Sample](filepath.Join(dir, store.SamplesFile))
		events, _ := store.ReadJSONLinesGz[store.Event](filepath.Join(dir, store.EventsFile))
		until := tr.Started.Add(16 * time.Second)
		for _, at := range []time.Time{sampled[len(sampled)-1].At, events[len(events)-1].At} {
			if at.After(until) {
				until = at
			}
		}
		until = until.Add(time.Second)
		fmt.Fprintf(&specYAML, "  - {arm: %s, start: %q, until: %q}\n", ts.Arm, tr.Started.Format(time.RFC3339Nano), until.Format(time.RFC3339Nano))
		storm, _ := store.ReadJSONLinesGz[store.StormOp](filepath.Join(dir, store.StormFile))
		for _, op := range storm {
			enc.Encode(map[string]any{"kind": "storm", "time": op.Scheduled, "latencyMs": float64(op.Latency) / 1e6, "outcome": op.Outcome,
				"code": op.Code, "stage": op.Stage, "trackedBytes": op.TrackedBytes})
		}
		canaries, _ := store.ReadJSONLinesGz[store.CanaryOp](filepath.Join(dir, store.CanaryFile))
		for _, c := range canaries {
			enc.Encode(map[string]any{"kind": "canary", "time": c.Scheduled, "latencyMs": float64(c.Latency) / 1e6, "write": c.Write, "ok": c.OK, "code": c.Code})
		}
		for _, e := range events {
			if k := e.Kill; k != nil {
				enc.Encode(map[string]any{"kind": "kill", "time": k.At, "opid": k.OpID, "trackedBytes": k.TrackedBytes, "queued": k.Queued, "queue": k.Queue,
					"stage": k.Stage, "err": k.Err})
			}
		}
	}
	outcomes.Close()
	bare := filepath.Join(root, "import.yaml")
	os.WriteFile(bare, []byte(specYAML.String()), 0o644)
	withOutcomes := filepath.Join(root, "import-outcomes.yaml")
	os.WriteFile(withOutcomes, []byte("outcomes: outcomes.jsonl\n"+specYAML.String()), 0o644)

	own := reportMedians(t, runDir)
	tol := tolerances(t, r)
	for _, tc := range []struct {
		name, spec string
		absent     map[string][]string // arm → metrics the import must lack
	}{
		{"diagnostic data only", bare, map[string][]string{
			"D": {"availability", "availability_warmup", "availability_storm", "availability_recovery", "actor_kills_per_s", "actor_kills_lowpri_queue_per_s",
				"actor_kills_normal_queue_per_s", "actor_kills_running_per_s", "storm_completed", "storm_shed", "storm_killed", "storm_failed",
				"storm_unsupported", "storm_unfinished", "canary_p50_ms", "canary_p99_ms", "victim_tracked_bytes_p50"},
			"E": {"availability", "availability_warmup", "availability_storm", "availability_recovery", "storm_completed", "storm_shed", "storm_killed", "storm_failed", "storm_unsupported", "storm_unfinished", "canary_p50_ms", "canary_p99_ms", "victim_tracked_bytes_p50"}}},
		{"with client outcomes", withOutcomes, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(root, strings.ReplaceAll(tc.name, " ", "-"))
			msg, code := qmlsab(t, "import", "ftdc", "--spec", tc.spec, "--out", out)
			if code != 0 {
				t.Fatalf("import: exit %d: %s", code, msg)
			}
			if !strings.Contains(msg, "SIMULATED") {
				t.Errorf("the import of mongosim's data must say it is simulated:\n%s", msg)
			}
			m, err := store.Open(out)
			if err != nil {
				t.Fatal(err)
			}
			if m.Manifest.Imported == nil || m.Manifest.Imported.From != "ftdc" || !m.Manifest.Simulated || len(m.Manifest.Trials) != len(r.Manifest.Trials) {
				t.Errorf("manifest: imported %+v simulated %v, %d trials", m.Manifest.Imported, m.Manifest.Simulated, len(m.Manifest.Trials))
			}
			imp := reportMedians(t, out)
			matched := 0
			for _, arm := range []string{"D", "E"} {
				for name, want := range own.medians[arm] {
					got, ok := imp.medians[arm][name]
					if slices.Contains(tc.absent[arm], name) {
						if ok {
							t.Errorf("%s %s = %v: FTDC cannot give it; it must be absent, not %v", arm, name, got, got)
						}
						continue
					}
					if !ok {
						t.Errorf("%s %s absent from the import (run's median %v)", arm, name, want)
						continue
					}
					// The sampler's serverStatus and the member's diagnostic
					// data are two samplings of one trial, each within one
					// sample of what happened, so they are within two of each
					// other (a slope moved by 7.46 against one sample's 7.36 on
					// a machine running three suites). Under load the two can
					// also be a second apart: a few percent of a gauge (read
					// tickets moved 99 → 104 in one CI run).
					limit := 2*tol[arm][name] + 0.06*math.Abs(want) + 1e-9*math.Abs(want)
					switch name {
					case metric.LowQueueGrowth, metric.Failovers, metric.Restarts:
						// Whole-trial steps, not sums of samples: one trial's
						// figure moves the median of n trials by 1/n, not by
						// what one sample changes. LowQueueGrowth is a 0/1
						// verdict of a significance test (the trend after
						// the fill > 0 at p < 0.01), which a trial on the
						// border flips with the sample timing. Failovers and restarts count
						// events: one that falls in the second between the two
						// samplings' trial windows (E's crash loop fails over
						// at any moment) is in one count and not the other.
						// A primary killed before its diagnostic data reached
						// the disk is in both: the secondaries' replica-set
						// view records it (metric.PrimaryChanges).
						limit = max(limit, 1/float64(len(r.Trials[arm])))
					}
					t.Logf("%s %-26s run %12.4f  import %12.4f  |Δ| %10.4f  one sample %10.4f", arm, name, want, got, math.Abs(got-want), tol[arm][name])
					if math.Abs(got-want) > limit {
						t.Errorf("%s %s: import median %v, run's %v: |Δ| %v is more than two samplings differ (one sample changes it by %v)", arm, name, got, want, math.Abs(got-want), tol[arm][name])
					}
					matched++
				}
			}
			t.Logf("%s: %d arm×metric medians match", tc.name, matched)
			for arm, names := range tc.absent {
				warned := slices.ContainsFunc(imp.warnings, func(w string) bool {
					return strings.Contains(w, arm) && strings.Contains(w, "no client-side outcomes") && strings.Contains(w, "availability")
				})
				if !warned {
					t.Errorf("arm %s: the report must say which metrics are absent and why (%v); warnings %q", arm, names, imp.warnings)
				}
			}
			if !slices.ContainsFunc(imp.warnings, func(w string) bool { return strings.Contains(w, "IMPORTED") }) {
				t.Errorf("the report must say the trials were imported: %q", imp.warnings)
			}
		})
	}
}

func trialOf(t *testing.T, r *store.Run, arm string, index int) store.Trial {
	for _, tr := range r.Trials[arm] {
		if tr.Index == index {
			return tr
		}
	}
	t.Fatalf("no trial %s#%d", arm, index)
	return store.Trial{}
}

// roundTrip finds, for each sampler sample, the same instant in the
// member's diagnostic data by the member's own clock: lo, the last
// diagnostic sample of the same process whose uptimeMillis is at most the
// sampler's, and hi, the first at least it. A counter must lie between
// lo's and hi's values (so equal both when they are equal), or, where load
// kept the reply from its uptime longer, below the first diagnostic sample
// dated after the sampler's 1 s timeout; a gauge the
// diagnostic data shows unchanged from lo to hi must mostly be the same in
// the sampler's sample (a queue may fill and drain in between, so not
// always); and the instant the uptimes place the sampler's serverStatus
// at must be within its 1 s timeout after the sampler's timestamp.
func roundTrip(t *testing.T, r *store.Run) {
	var exact, bracketed, straddled, aligned, varying, gauges, gaugesEqual, samples int
	for arm, trials := range r.Trials {
		for _, tr := range trials {
			dir := store.TrialDir(r.Dir, arm, tr.Index)
			sampled, err := store.ReadJSONLinesGz[store.Sample](filepath.Join(dir, store.SamplesFile))
			if err != nil {
				t.Fatal(err)
			}
			byMember := map[string][]store.Sample{}
			for m := range 3 {
				f, err := collect.ReadFTDC("", nil, filepath.Join(dir, fmt.Sprintf("member%d", m), "db", "diagnostic.data"))
				if err != nil {
					t.Fatal(err)
				}
				byMember[f.Member] = f.Samples
			}
			for _, s := range sampled {
				if !s.Up || s.FromFTDC {
					continue
				}
				all, ok := byMember[s.Member]
				if !ok {
					t.Fatalf("no diagnostic data of member %s (have %v)", s.Member, keys(byMember))
				}
				var fs []store.Sample
				for _, f := range all {
					if f.ProcessID == s.ProcessID {
						fs = append(fs, f)
					}
				}
				u := s.Values["uptimeMillis"]
				i := sort.Search(len(fs), func(i int) bool { return fs[i].Values["uptimeMillis"] > u }) - 1
				j := sort.Search(len(fs), func(i int) bool { return fs[i].Values["uptimeMillis"] >= u })
				if i < 0 || j >= len(fs) {
					continue // before the first or after the last diagnostic sample
				}
				samples++
				// The process started at the latest of the diagnostic
				// samples' time less uptime (each was dated a moment before
				// its uptime was read).
				var began time.Time
				for _, f := range fs {
					if b := f.At.Add(-time.Duration(f.Values["uptimeMillis"]) * time.Millisecond); b.After(began) {
						began = b
					}
				}
				at := began.Add(time.Duration(u) * time.Millisecond)
				if at.Before(s.At.Add(-5*time.Millisecond)) || at.After(s.At.Add(time.Second)) {
					t.Errorf("%s %s: the sampler's serverStatus of %s ran at %s by the member's clock", arm, s.Member, s.At.Format("15:04:05.000"), at.Format("15:04:05.000"))
				}
				aligned++
				// serverStatus reads uptime and its sections at slightly
				// different instants, and under load they can straddle a
				// diagnostic sample: counters are bracketed one sample wider.
				lo, hi := fs[max(i-1, 0)].Values, fs[min(j+1, len(fs)-1)].Values
				// On a loaded machine the reply can be read further from its
				// uptime than one diagnostic sample; it was read before the
				// sampler's 1 s timeout ran out, so the first diagnostic
				// sample dated after that read its counters later still:
				// a counter beyond hi but within it is a straddle, beyond
				// it an error. Without such a sample, there is no bound.
				var last map[string]float64
				if k := sort.Search(len(fs), func(k int) bool { return !fs[k].At.Before(s.At.Add(time.Second)) }); k < len(fs) {
					last = fs[k].Values
				}
				for name, v := range s.Values {
					a, okA := lo[name]
					b, okB := hi[name]
					switch {
					case !okA || !okB || name == "uptimeMillis":
						continue
					case collect.IsCounter(name):
						if v > b && (last == nil || v <= last[name]) {
							straddled++
							continue
						}
						if v < a || v > b {
							t.Errorf("%s %s at %s: counter %s = %v, diagnostic data %v then %v", arm, s.Member, s.At.Format("15:04:05.000"), name, v, a, b)
						}
						if a == b {
							exact++
						} else {
							bracketed++
						}
					case constantBetween(fs[i:j+1], name):
						gauges++
						if v == fs[i].Values[name] {
							gaugesEqual++
						}
					default:
						varying++ // a gauge that moved between the two diagnostic samples
					}
				}
			}
		}
	}
	t.Logf("round trip: %d sampler samples placed in the diagnostic data by uptime (%d within the sampler's timeout); %d counters equal to its values, "+
		"%d between two of its samples, %d read past them within the timeout; %d of %d steady gauges equal; %d moving gauges not compared", samples, aligned, exact, bracketed, straddled, gaugesEqual, gauges, varying)
	if samples < 100 || exact < 5*samples {
		t.Errorf("too little compared: %d samples, %d exact values", samples, exact)
	}
	if gaugesEqual < gauges*95/100 {
		t.Errorf("%d of %d gauges steady in the diagnostic data differ from the sampler's", gauges-gaugesEqual, gauges)
	}
}

func constantBetween(fs []store.Sample, name string) bool {
	for _, f := range fs {
		if f.Values[name] != fs[0].Values[name] {
			return false
		}
	}
	return true
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

type medians struct {
	medians  map[string]map[string]float64
	warnings []string
}

// reportMedians runs qmlsab report on a run folder and reads summary.json.
func reportMedians(t *testing.T, dir string) medians {
	t.Helper()
	if out, code := qmlsab(t, "report", dir, "--format", "json"); code != 0 {
		t.Fatalf("report %s: exit %d: %s", dir, code, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Arms []struct {
			Name    string
			Metrics map[string]struct{ Median float64 }
		}
		Warnings []struct{ Arm, Metric, Text string }
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	out := medians{medians: map[string]map[string]float64{}}
	for _, a := range s.Arms {
		out.medians[a.Name] = map[string]float64{}
		for k, v := range a.Metrics {
			out.medians[a.Name][k] = v.Median
		}
	}
	for _, w := range s.Warnings {
		out.warnings = append(out.warnings, w.Arm+": "+w.Text)
	}
	return out
}

// tolerances are, per arm and metric, what sampling the same trial at
// other instants changes (and, for the queue's fitted slope, what its
// standard error allows): the most a trial's metric moves when the window
// moves by one sample (1 s either way), when one sample is left out, or
// when each sample is dated when the member answered rather than when the
// sampler asked; how far
// apart the metric is between two interleaved samplings of the trial
// offset by one sample (each member's odd and even samples); and, for a
// metric of a gauge's values (quantiles, extremes), what it becomes when
// each reading is replaced by the highest or lowest of its member's within
// two samples (a sample taken up to a second away, and read up to the
// sampler's 1 s timeout late, reads what the gauge showed in that span).
// Over the trials of an arm the largest bounds the change of their median.
func tolerances(t *testing.T, r *store.Run) map[string]map[string]float64 {
	gauges := map[string]string{"read_tickets_median": "read.totalTickets", "read_tickets_min": "read.totalTickets",
		"lowpri_queue_p95": "read.low.queueLength", "lowpri_queue_max": "read.low.queueLength", "rss_peak_bytes": "residentMB"}
	out := map[string]map[string]float64{}
	for arm, trials := range r.Trials {
		out[arm] = map[string]float64{}
		for _, tr := range trials {
			dir := store.TrialDir(r.Dir, arm, tr.Index)
			samples, _ := store.ReadJSONLinesGz[store.Sample](filepath.Join(dir, store.SamplesFile))
			storm, _ := store.ReadJSONLinesGz[store.StormOp](filepath.Join(dir, store.StormFile))
			canaries, _ := store.ReadJSONLinesGz[store.CanaryOp](filepath.Join(dir, store.CanaryFile))
			events, _ := store.ReadJSONLinesGz[store.Event](filepath.Join(dir, store.EventsFile))
			var kills []store.Kill
			for _, e := range events {
				if e.Kill != nil {
					kills = append(kills, *e.Kill)
				}
			}
			start := tr.Started
			ph := map[store.Phase]time.Time{store.PhaseWarmup: start, store.PhaseStorm: start.Add(2 * time.Second), store.PhaseRecovery: start.Add(12 * time.Second), store.PhaseEnd: start.Add(16 * time.Second)}
			rec := func(ss []store.Sample) store.Records {
				return store.Records{Results: store.Results{PhaseStarts: ph, Storm: storm, Canaries: canaries}, Samples: ss, Kills: kills}
			}
			base := metric.Summarize(rec(samples))
			widen := func(m map[string]float64) {
				for k, v := range m {
					out[arm][k] = max(out[arm][k], math.Abs(v-base[k]))
				}
			}
			for _, d := range []time.Duration{-time.Second, time.Second} {
				shifted := slices.Clone(samples)
				for i := range shifted {
					shifted[i].At = shifted[i].At.Add(d)
				}
				widen(metric.Summarize(rec(shifted)))
			}
			for i, s := range samples {
				if s.Up && !s.At.Before(ph["storm"]) && s.At.Before(ph["recovery"]) {
					widen(metric.Summarize(rec(slices.Delete(slices.Clone(samples), i, i+1))))
				}
			}
			// The sampler stamps a sample when it asks; the member answers up
			// to its 1 s timeout later. Restamped at the instant the member's
			// own clock (uptimeMillis since its start, which its diagnostic
			// data dates) says it answered:
			started := map[string]time.Time{} // process → its start
			for m := range 3 {
				f, err := collect.ReadFTDC("", nil, filepath.Join(dir, fmt.Sprintf("member%d", m), "db", "diagnostic.data"))
				if err != nil {
					t.Fatal(err)
				}
				for _, x := range f.Samples {
					if b := x.At.Add(-time.Duration(x.Values["uptimeMillis"]) * time.Millisecond); b.After(started[x.ProcessID]) {
						started[x.ProcessID] = b
					}
				}
			}
			restamped := slices.Clone(samples)
			for i, s := range restamped {
				if at, ok := started[s.ProcessID]; ok && s.Up {
					restamped[i].At = at.Add(time.Duration(s.Values["uptimeMillis"]) * time.Millisecond)
				}
			}
			widen(metric.Summarize(rec(restamped)))
			var halves [2][]store.Sample
			for _, ss := range metric.ByMember(samples) {
				for i, s := range ss {
					halves[i%2] = append(halves[i%2], s)
				}
			}
			odd, even := metric.Summarize(rec(halves[0])), metric.Summarize(rec(halves[1]))
			for k, v := range odd {
				if w, ok := even[k]; ok {
					out[arm][k] = max(out[arm][k], math.Abs(v-w))
				}
			}
			// A fitted trend is as precise as its standard error (the
			// autocorrelation-robust one its test uses): two samplings of
			// the same queue differ by up to 2√2 of it.
			if g, why := metric.StormQueueGrowth(rec(samples)); why == "" {
				out[arm][metric.LowQueueSlope] = max(out[arm][metric.LowQueueSlope], 2*math.Sqrt2*g.SE)
			}
			// A gauge read up to a second away (the other sampling's phase),
			// and up to the sampler's 1 s timeout late, reads what the gauge
			// showed within two samples either side: the metric of each
			// member's series replaced by its highest (lowest) reading within
			// two samples bounds what such a reading gives.
			fields := map[string]bool{}
			for _, f := range gauges {
				fields[f] = true
			}
			for _, pick := range []func(a, b float64) float64{math.Max, math.Min} {
				var env []store.Sample
				for _, ss := range metric.ByMember(samples) {
					for i, s := range ss {
						e := s
						e.Values = maps.Clone(s.Values)
						for f := range fields {
							v, ok := s.Values[f]
							if !ok || !s.Up {
								continue
							}
							for j := max(i-2, 0); j <= min(i+2, len(ss)-1); j++ {
								if w, ok := ss[j].Values[f]; ok && ss[j].Up && ss[j].ProcessID == s.ProcessID {
									v = pick(v, w)
								}
							}
							e.Values[f] = v
						}
						env = append(env, e)
					}
				}
				m := metric.Summarize(rec(env))
				for name := range gauges {
					out[arm][name] = max(out[arm][name], math.Abs(m[name]-base[name]))
				}
			}
		}
		// A difference of two rates moves by what moves either.
		out[arm][metric.ServerShedsMinusAdmissions] = max(out[arm][metric.ServerShedsMinusAdmissions], out[arm][metric.ServerShedsPerS]+out[arm][metric.AdmissionsPerS])
	}
	return out
}

// writeDiagnosticData writes n one-second samples of a member into dir.
func writeDiagnosticData(t *testing.T, dir string, n int) time.Time {
	t.Helper()
	start := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	w, err := ftdc.NewWriter(dir, ftdc.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		at := start.Add(time.Duration(i) * time.Second)
		if err := w.Add(bson.D{{Key: "start", Value: at}, {Key: "serverStatus", Value: bson.D{{Key: "host", Value: "db0:27017"},
			{Key: "uptimeMillis", Value: int64(1000 * i)}, {Key: "mem", Value: bson.D{{Key: "resident", Value: int32(100 + i)}}}}}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return start
}

func TestFTDCDumpAndItsBadInput(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "diagnostic.data")
	start := writeDiagnosticData(t, dir, 3)
	out, code := qmlsab(t, "ftdc", "dump", dir, "--paths", "serverStatus.mem.resident", "--format", "csv")
	want := fmt.Sprintf("start,serverStatus.mem.resident\n%d,100\n%d,101\n%d,102\n", start.UnixMilli(), start.UnixMilli()+1000, start.UnixMilli()+2000)
	if code != 0 || out != want {
		t.Errorf("dump csv: exit %d\n%s\nwant\n%s", code, out, want)
	}
	out, code = qmlsab(t, "ftdc", "dump", "--paths=serverStatus.uptimeMillis", dir)
	if code != 0 || !strings.HasPrefix(out, fmt.Sprintf(`{"start":%d,"serverStatus.uptimeMillis":0}`, start.UnixMilli())) || strings.Count(out, "\n") != 3 {
		t.Errorf("dump jsonl: exit %d\n%s", code, out)
	}
	out, code = qmlsab(t, "ftdc", "dump", dir, "--list")
	if code != 0 || out != "start\nserverStatus.uptimeMillis\nserverStatus.mem.resident\n" {
		t.Errorf("dump --list: exit %d\n%s", code, out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"ftdc", "dump"}, "qmlsab ftdc dump: name at least one FTDC file or diagnostic.data directory"},
		{[]string{"ftdc", "dump", dir, "--format", "xml"}, `qmlsab ftdc dump: --format "xml": want jsonl or csv`},
		{[]string{"ftdc", "dump", dir, "--paths", "serverStatus.nope"}, "qmlsab ftdc dump: --paths serverStatus.nope: no such metric in " + dir + " (--list shows them)"},
		{[]string{"ftdc", "dump", dir + "x"}, "qmlsab ftdc dump: stat " + dir + "x: no such file or directory"},
		{[]string{"ftdc", "dump", filepath.Dir(dir)}, "qmlsab ftdc dump: ftdc: no metrics.* files in " + filepath.Dir(dir)},
		{[]string{"import", "ftdc", "--phases", "1s,2s,3s", "--start", "2025-06-01T10:00:00Z", dir}, "qmlsab import ftdc: --arm: which arm the window was"},
		{[]string{"import", "ftdc", "--arm", "D", "--phases", "1s,2s", "--start", "2025-06-01T10:00:00Z", dir}, `qmlsab import ftdc: --phases "1s,2s": want warmup,storm,recovery such as 30s,150s,60s (or --spec FILE)`},
		{[]string{"import", "ftdc", "--arm", "D", "--phases", "1s,2s,3s", "--start", "noon", dir}, `qmlsab import ftdc: --start "noon": want an RFC 3339 time such as 2025-06-01T10:00:00Z`},
		{[]string{"import", "ftdc", "--arm", "D", "--phases", "1s,0s,3s", "--start", "2025-06-01T10:00:00Z", dir}, "qmlsab import ftdc: --phases: storm must be longer than 0"},
		{[]string{"import", "ftdc", "--arm", "D", "--phases", "1s,2s,3s", "--start", "2025-06-01T10:00:00Z"}, "qmlsab import ftdc: no diagnostic data given: name each member's diagnostic.data directory"},
		{[]string{"import", "ftdc", "--arm", "D", "--phases", "1s,2s,3s", "--start", "2025-06-02T10:00:00Z", dir},
			"qmlsab import ftdc: trial 1 (arm D, 2025-06-02T10:00:00Z until 2025-06-02T10:00:06Z): no diagnostic data in its window; the data spans [" + dir + ": 2025-06-01T10:00:00Z … 2025-06-01T10:00:02Z]"},
		{[]string{"import", "ftdc", "--spec", "x.yaml", dir}, "qmlsab import ftdc: unexpected argument \"" + dir + "\": with --spec, the spec file names the diagnostic data"},
		{[]string{"import", "ftdc", "--spec", "x.yaml", "--arm", "D"}, "qmlsab import ftdc: --arm: with --spec, the spec file says it"},
	} {
		out := filepath.Join(t.TempDir(), "out")
		got, code := qmlsab(t, append(tc.args, "--out", out)...)
		if tc.args[0] == "ftdc" {
			got, code = qmlsab(t, tc.args...)
		}
		if code != 1 || strings.TrimSpace(got) != tc.want {
			t.Errorf("%v:\n exit %d: %s\nwant exit 1: %s", tc.args, code, strings.TrimSpace(got), tc.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%v: bad input still wrote %s", tc.args, out)
		}
	}
	// One trial by flags: imported, and the report says what is absent.
	out = filepath.Join(t.TempDir(), "imported")
	if msg, code := qmlsab(t, "import", "ftdc", "--arm", "E", "--phases", "0s,2s,0s", "--start", start.Format(time.RFC3339), "--out", out, dir); code != 0 {
		t.Fatalf("import by flags: exit %d: %s", code, msg)
	}
	m := reportMedians(t, out)
	if !slices.ContainsFunc(m.warnings, func(w string) bool {
		return strings.HasPrefix(w, "E: no client-side outcomes (storm op outcomes, canaries) in the imported data: availability,")
	}) {
		t.Errorf("warnings %q", m.warnings)
	}
}

// A member that has written its metadata but no sample yet: dump says
// there are no samples yet (exit 0) whatever it was asked, not "no such
// metric" nor an empty list. A file that is not FTDC at all is called
// that, not a document "exceeding decoder bounds".
func TestFTDCDumpSaysNoSamplesYetAndNotFTDC(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "diagnostic.data")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	meta := ftdc.MetadataDocument(start, mustRaw(t, bson.D{{Key: "buildInfo", Value: bson.D{{Key: "version", Value: "8.3.0"}}}}))
	if err := os.WriteFile(filepath.Join(dir, "metrics.2025-06-01T10-00-00Z-00000"), meta, 0o644); err != nil {
		t.Fatal(err)
	}
	note := "qmlsab ftdc dump: no samples yet in " + dir + ": the diagnostic data holds no metric chunk"
	for _, args := range [][]string{{"--list"}, {"--paths", "serverStatus.mem.resident"}, {}, {"--format", "csv"}} {
		out, code := qmlsab(t, append([]string{"ftdc", "dump", dir}, args...)...)
		if code != 0 || !strings.HasPrefix(out, note) || strings.Count(out, "\n") != 1 {
			t.Errorf("ftdc dump %s on a fresh member: exit %d\n%s\nwant exit 0 and one line: %s …", strings.Join(args, " "), code, out, note)
		}
	}
	readme := filepath.Join(t.TempDir(), "README.md")
	if err := os.WriteFile(readme, []byte("# qmlsab\n\nA/B-test MongoDB query memory load shedding.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{}, {"--list"}} {
		out, code := qmlsab(t, append([]string{"ftdc", "dump", readme}, args...)...)
		if want := "qmlsab ftdc dump: " + readme + ": not an FTDC file"; code != 1 || !strings.HasPrefix(out, want) || strings.Contains(out, "decoder bounds") {
			t.Errorf("ftdc dump %s %s: exit %d\n%s\nwant exit 1: %s …", readme, strings.Join(args, " "), code, out, want)
		}
	}
}

func mustRaw(t *testing.T, d bson.D) bson.Raw {
	t.Helper()
	b, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
