package ftdcimport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/collect"
	"github.com/qmlsab/qmlsab/internal/field"
	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/store"
)

// TargetImported is the target kind of an imported run's arms and
// manifest: the trials ran somewhere qmlsab did not provision.
const TargetImported = "imported"

// Options are what an import writes besides its spec.
type Options struct {
	ToolVersion string
	CommandLine []string
	// Context, when set, stops the import once it is done (a signal):
	// between sources, between trials written, and before the folder is
	// renamed into place; what was assembled is removed. Nil: never.
	Context context.Context
}

// context is the import's context (Background when none is set).
func (o Options) context() context.Context {
	if o.Context == nil {
		return context.Background()
	}
	return o.Context
}

// stopped is the context's error, if the import is to stop.
func (o Options) stopped() error {
	if o.Context == nil {
		return nil
	}
	return context.Cause(o.Context)
}

// Result is what an import wrote.
type Result struct {
	Dir    string
	Trials int
	// Simulated: the diagnostic data was written by mongosim.
	Simulated bool
	// Missing are, by arm, the kinds of record the import lacked.
	Missing map[string][]string
	// Notes are things the user should know (torn documents, outcomes
	// outside every trial).
	Notes []string
}

// trialData is one trial built in memory.
type trialData struct {
	spec  TrialSpec
	index int
	files store.TrialFiles
}

// Import builds a run folder at dir from a spec. Everything is read and
// checked before anything is written; the folder is assembled beside dir
// and renamed into place, so a failed import leaves nothing behind.
func Import(spec *Spec, dir string, opts Options) (*Result, error) {
	if _, err := os.Stat(dir); err == nil {
		return nil, field.Errorf(FieldDir, dir, "%v %s already exists; name a new folder", field.Ref(FieldDir), dir)
	}
	wl, err := spec.workload()
	if err != nil {
		return nil, err
	}
	res := &Result{Dir: dir, Missing: map[string][]string{}}
	var outcomes *Outcomes
	if spec.Outcomes != "" {
		if outcomes, err = LoadOutcomes(opts.context(), spec.path(spec.Outcomes), wl.SpillToDisk.CanarySLO); err != nil {
			return nil, err
		}
	}

	// Read each source once, keeping the samples of every trial using it.
	windows := map[string][]TrialSpec{}
	var order []string
	for _, tr := range spec.Trials {
		for _, src := range spec.sources(tr.Arm) {
			if _, ok := windows[src]; !ok {
				order = append(order, src)
			}
			windows[src] = append(windows[src], tr)
		}
	}
	type read struct {
		samples     []store.Sample
		first, last time.Time
		simulated   bool
	}
	data := map[string]read{}
	for _, src := range order {
		if err := opts.stopped(); err != nil {
			return nil, err
		}
		trs := windows[src]
		keep := func(t time.Time) bool {
			return slices.ContainsFunc(trs, func(tr TrialSpec) bool {
				return collect.Window(tr.start, tr.until)(t)
			})
		}
		f, err := collect.ReadFTDC("", keep, src)
		if err != nil {
			return nil, err
		}
		if f.Torn != nil {
			res.Notes = append(res.Notes, fmt.Sprintf("%v (a member killed mid-write; everything before it was read)", f.Torn))
		}
		res.Simulated = res.Simulated || f.Simulated
		data[src] = read{f.Samples, f.First, f.Last, f.Simulated}
	}

	// Build every trial in memory.
	indexes := map[string]int{}
	var armOrder []string
	var trials []trialData
	used := map[int]bool{} // outcome records that fell in a trial
	for i, tr := range spec.Trials {
		if !slices.Contains(armOrder, tr.Arm) {
			armOrder = append(armOrder, tr.Arm)
		}
		indexes[tr.Arm]++
		ph := spec.phases(tr)
		start, end := tr.start, tr.start.Add(ph.Total())
		in := collect.Window(start, tr.until)
		var samples []store.Sample
		var members []string
		var span []string
		for _, src := range spec.sources(tr.Arm) {
			d := data[src]
			for _, s := range d.samples {
				if in(s.At) {
					samples = append(samples, s)
					if !slices.Contains(members, s.Member) {
						members = append(members, s.Member)
					}
				}
			}
			if !d.first.IsZero() {
				span = append(span, fmt.Sprintf("%s: %s … %s", src, d.first.UTC().Format(time.RFC3339), d.last.UTC().Format(time.RFC3339)))
			}
		}
		if len(samples) == 0 {
			return nil, spec.errf([]string{"trials", strconv.Itoa(i), "start"}, "trial %d (arm %s, %s until %s): no diagnostic data in its window; the data spans %v",
				i+1, tr.Arm, start.UTC().Format(time.RFC3339), tr.until.UTC().Format(time.RFC3339), span)
		}
		slices.SortStableFunc(samples, func(a, b store.Sample) int { return a.At.Compare(b.At) })
		rec := store.Records{Results: store.Results{PhaseStarts: map[store.Phase]time.Time{
			store.PhaseWarmup: start, store.PhaseStorm: start.Add(ph.Warmup), store.PhaseRecovery: start.Add(ph.Warmup + ph.Storm), store.PhaseEnd: end}}, Samples: samples}
		if outcomes != nil {
			for j, op := range outcomes.Storm {
				if in(op.Scheduled) {
					rec.Storm = append(rec.Storm, op)
					used[j] = true
				}
			}
			for j, c := range outcomes.Canaries {
				if in(c.Scheduled) {
					rec.Canaries = append(rec.Canaries, c)
					used[len(outcomes.Storm)+j] = true
				}
			}
			for j, k := range outcomes.Kills {
				if in(k.At) {
					rec.Kills = append(rec.Kills, k)
					used[len(outcomes.Storm)+len(outcomes.Canaries)+j] = true
				}
			}
		}
		// The storm and the canaries run through every trial: none in a
		// trial's window means none recorded. A killOp actor may kill
		// nothing in a trial, so its kills count as recorded when the file
		// has any.
		if len(rec.Storm) == 0 {
			rec.Missing = append(rec.Missing, store.StormRecords)
		}
		if len(rec.Canaries) == 0 {
			rec.Missing = append(rec.Missing, store.CanaryRecords)
		}
		rec.KillOpActor = spec.killOp(tr.Arm)
		if rec.KillOpActor && (outcomes == nil || len(outcomes.Kills) == 0) {
			rec.Missing = append(rec.Missing, store.KillRecords)
		}
		for _, k := range rec.Missing {
			if !slices.Contains(res.Missing[tr.Arm], k) {
				res.Missing[tr.Arm] = append(res.Missing[tr.Arm], k)
			}
		}
		simulated := false
		for _, src := range spec.sources(tr.Arm) {
			simulated = simulated || data[src].simulated
		}
		meta, _ := json.Marshal(map[string]any{"imported": "ftdc", "members": members, "sources": spec.sources(tr.Arm),
			"samples": len(samples), "missing": rec.Missing, "clock": store.ClockWall})
		t := store.Trial{Schema: store.TrialSchema, Arm: tr.Arm, Index: indexes[tr.Arm], Started: start, Clock: store.ClockWall, Simulated: simulated,
			Phases:   map[store.Phase]float64{store.PhaseWarmup: 0, store.PhaseStorm: ph.Warmup.Seconds(), store.PhaseRecovery: (ph.Warmup + ph.Storm).Seconds()},
			Metadata: meta}
		metric.Fill(&t, rec)
		if !slices.Contains(rec.Missing, store.StormRecords) {
			t.Victims = metric.VictimSummary(rec.Results, rec.Kills)
		}
		trials = append(trials, trialData{spec: tr, index: indexes[tr.Arm], files: store.TrialFiles{Trial: t, Samples: samples,
			Series: metric.PerSecond(samples, start, end), Storm: rec.Storm, Canaries: rec.Canaries,
			Outcomes: metric.Outcomes(start, rec.Results), Events: metric.Events(rec.PhaseStarts, samples, rec.Kills)}})
	}
	if outcomes != nil {
		if n := len(outcomes.Storm) + len(outcomes.Canaries) + len(outcomes.Kills) - len(used); n > 0 {
			res.Notes = append(res.Notes, fmt.Sprintf("%d record(s) of %s fall in no trial's window and were left out", n, spec.Outcomes))
		}
	}

	// The manifest, as a run's, saying it is an import.
	host, _ := os.Hostname()
	wlJSON, _ := json.Marshal(wl)
	var armList []arms.Arm
	m := store.Manifest{Schema: store.ManifestSchema, ToolVersion: opts.ToolVersion, Created: time.Now().UTC(), Host: host,
		CommandLine: opts.CommandLine, WorkloadName: wl.Name, Workload: wlJSON, Target: TargetImported, Simulated: res.Simulated, Clock: store.ClockWall,
		Imported: &store.Import{From: "ftdc", Spec: spec.file, Outcomes: spec.Outcomes, Missing: res.Missing}}
	for _, name := range armOrder {
		a := spec.Arms[name]
		armList = append(armList, arms.Arm{Name: name, Build: a.Build, Target: TargetImported, SetParameters: a.SetParameters})
		m.ArmList = append(m.ArmList, store.ArmInfo{Name: name, Build: a.Build, Target: TargetImported, Parameters: a.SetParameters})
	}
	armsYAML, _ := arms.Marshal(armList)
	m.Arms, _ = json.Marshal(string(armsYAML))
	m.Imported.Sources = order
	for _, td := range trials {
		m.Trials = append(m.Trials, store.TrialStatus{Arm: td.spec.Arm, Index: td.index, Status: store.Valid})
	}

	// Write beside dir, then rename into place.
	b, err := store.BuildBeside(dir, store.Importing)
	if err != nil {
		return nil, field.Errorf(FieldDir, dir, "%v %w", field.Ref(FieldDir), err)
	}
	defer b.Close() // removes the folder being built unless it was committed
	write := func() error {
		for _, td := range trials {
			if err := opts.stopped(); err != nil {
				return err
			}
			if err := store.WriteTrial(store.TrialDir(b.Dir, td.spec.Arm, td.index), td.files); err != nil {
				return err
			}
		}
		if err := store.WriteJSON(filepath.Join(b.Dir, store.ManifestFile), m); err != nil {
			return err
		}
		return opts.stopped()
	}
	if err := write(); err != nil {
		return nil, err
	}
	if err := b.Commit(); err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, field.Errorf(FieldDir, dir, "%v %s already exists; name a new folder", field.Ref(FieldDir), dir)
		}
		return nil, err
	}
	res.Trials = len(trials)
	return res, nil
}
