package report

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/qmlsab/qmlsab/arms/actor"
	"github.com/qmlsab/qmlsab/collect"
	"github.com/qmlsab/qmlsab/run"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/workload"
)

// trialData is a valid trial's raw files, read for the charts.
type trialData struct {
	Trial
	samples  []collect.Sample
	events   []run.Event
	outcomes []run.Second
	storm    []workload.StormResult
}

// readTrial reads a trial's raw files; a missing or corrupt file is an
// error naming it.
func readTrial(t Trial) (*trialData, error) {
	d := &trialData{Trial: t}
	var err error
	if d.samples, err = store.ReadJSONLinesGz[collect.Sample](filepath.Join(t.Dir, "samples.jsonl.gz")); err != nil {
		return nil, err
	}
	if d.events, err = readOptional[run.Event](filepath.Join(t.Dir, "events.jsonl.gz")); err != nil {
		return nil, err
	}
	if d.outcomes, err = readOptional[run.Second](filepath.Join(t.Dir, "outcomes.jsonl.gz")); err != nil {
		return nil, err
	}
	if d.storm, err = readOptional[workload.StormResult](filepath.Join(t.Dir, "storm.jsonl.gz")); err != nil {
		return nil, err
	}
	return d, nil
}

// readOptional reads a file a workload may not write (merge trials have
// no storm).
func readOptional[T any](path string) ([]T, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, nil
	}
	return store.ReadJSONLinesGz[T](path)
}

// rel is seconds since the trial started.
func (d *trialData) rel(t time.Time) float64 { return t.Sub(d.Started).Seconds() }

func (d *trialData) points(ps []collect.Point, scale float64) [][2]float64 {
	out := make([][2]float64, 0, len(ps))
	for _, p := range ps {
		out = append(out, [2]float64{d.rel(p.At), p.Value * scale})
	}
	return out
}

// availabilityPerSecond is the share of canaries scheduled in each
// second that met the SLO.
func (d *trialData) availabilityPerSecond() [][2]float64 {
	var out [][2]float64
	for _, s := range d.outcomes {
		ok, failed := s.Canary["ok"], s.Canary["failed"]
		if ok+failed > 0 {
			out = append(out, [2]float64{float64(s.T), float64(ok) / float64(ok+failed)})
		}
	}
	return out
}

// shedsPerSecond is the primary's server sheds per second plus the killOp
// actor's kills in each second.
func (d *trialData) shedsPerSecond() [][2]float64 {
	perSec := map[int]float64{}
	for _, p := range collect.PrimaryRates(d.samples, "queryMemory.operationsShed") {
		perSec[int(d.rel(p.At))] += p.Value
	}
	for _, e := range d.events {
		if e.Kind == "kill" && e.Kill != nil && e.Kill.Err == "" {
			perSec[int(d.rel(e.At))]++
		}
	}
	var out [][2]float64
	for t, v := range perSec {
		out = append(out, [2]float64{float64(t), v})
	}
	slices.SortFunc(out, func(a, b [2]float64) int { return int(a[0] - b[0]) })
	return out
}

// marks are a trial's failovers and restarts, seconds into it.
func (d *trialData) marks() (failovers, restarts []float64) {
	for _, e := range d.events {
		switch e.Kind {
		case "primary":
			failovers = append(failovers, d.rel(e.At))
		case "restart":
			restarts = append(restarts, d.rel(e.At))
		}
	}
	return failovers, restarts
}

// victim is a shed or killed op: its tracked bytes (0 when unknown) and
// stage.
type victim struct {
	bytes int64
	stage string
}

// victims are the trial's shed or killed storm ops in the storm phase.
// The model records each one's tracked bytes; over the wire only the
// killOp actor's kills carry them (a shed op's error does not).
func (d *trialData) victims() []victim {
	storm, recovery := d.Phases["storm"], d.Phases["recovery"]
	in := func(t time.Time) bool { r := d.rel(t); return r >= storm && r < recovery }
	var out []victim
	known := false
	for _, s := range d.storm {
		if (s.Outcome == workload.Shed || s.Outcome == workload.Killed) && in(s.Scheduled) {
			out = append(out, victim{s.TrackedBytes, s.Stage})
			known = known || s.TrackedBytes > 0
		}
	}
	if known {
		return out
	}
	// Over the wire: kills carry bytes and stage; sheds only a stage.
	out = out[:0]
	for _, s := range d.storm {
		if s.Outcome == workload.Shed && in(s.Scheduled) {
			out = append(out, victim{0, s.Stage})
		}
	}
	for _, e := range d.events {
		if e.Kind == "kill" && e.Kill != nil && e.Kill.Err == "" && in(e.At) {
			out = append(out, victim{killBytes(e.Kill), e.Kill.Stage})
		}
	}
	return out
}

func killBytes(k *actor.KillEvent) int64 { return k.TrackedBytes }

// downsample keeps at most max points of a series sorted by x: it splits
// the series into max/2 buckets and keeps each bucket's minimum and
// maximum (in x order), so no peak or trough is lost.
func downsample(pts [][2]float64, max int) [][2]float64 {
	if len(pts) <= max || max < 4 {
		return pts
	}
	buckets := max / 2
	out := make([][2]float64, 0, max)
	for b := range buckets {
		lo, hi := b*len(pts)/buckets, (b+1)*len(pts)/buckets
		if lo >= hi {
			continue
		}
		mi, ma := lo, lo
		for i := lo; i < hi; i++ {
			if pts[i][1] < pts[mi][1] {
				mi = i
			}
			if pts[i][1] > pts[ma][1] {
				ma = i
			}
		}
		first, second := min(mi, ma), math.MaxInt
		if mi != ma {
			second = max2(mi, ma)
		}
		out = append(out, pts[first])
		if second != math.MaxInt {
			out = append(out, pts[second])
		}
	}
	return out
}

func max2(a, b int) int {
	if a > b {
		return a
	}
	return b
}
