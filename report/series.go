package report

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/qmlsab/qmlsab/metric"
	"github.com/qmlsab/qmlsab/store"
)

// trialData is a valid trial's raw files, read for the charts.
type trialData struct {
	Trial
	// length is how long the trial ran, in seconds from its start: every
	// x a chart draws for it lies in [0, length].
	length   float64
	series   []store.Second
	events   []store.Event
	outcomes []store.OutcomeSecond
	// shards, for a trial on a sharded cluster, are its per-second series
	// by shard (each from that shard's primary) and the routers' under
	// their samples' label; nil on a replica set.
	shards map[string][]store.Second
	// shardSamples are the sharded trial's samples by the same keys.
	shardSamples map[string][]store.Sample
	// routers are the sharded trial's routers' labels in shards.
	routers []string
}

// readTrial reads the raw files of a trial that ran for length; a
// missing or corrupt file is an error naming it.
func readTrial(t Trial, length time.Duration) (*trialData, error) {
	d := &trialData{Trial: t, length: length.Seconds()}
	var err error
	// The derived per-second series; a run written before they were
	// stored has only the raw samples, from which they are derived here.
	if d.series, err = readOptional[store.Second](filepath.Join(t.Dir, store.SeriesFile)); err != nil {
		return nil, err
	}
	if d.series == nil {
		samples, err := store.ReadJSONLinesGz[store.Sample](filepath.Join(t.Dir, store.SamplesFile))
		if err != nil {
			return nil, err
		}
		d.series = metric.PerSecond(samples, t.Started, t.Started.Add(length))
	}
	if d.events, err = readOptional[store.Event](filepath.Join(t.Dir, store.EventsFile)); err != nil {
		return nil, err
	}
	if err := d.readShards(); err != nil {
		return nil, err
	}
	if d.outcomes, err = readOptional[store.OutcomeSecond](filepath.Join(t.Dir, store.OutcomesFile)); err != nil {
		return nil, err
	}
	return d, nil
}

// readOptional reads a file a workload may not write (merge trials have
// no storm).
func readOptional[T any](path string) ([]T, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return store.ReadJSONLinesGz[T](path)
}

// rel is seconds since the trial started.
func (d *trialData) rel(t time.Time) float64 { return t.Sub(d.Started).Seconds() }

// during reports whether x seconds into the trial is within it.
func (d *trialData) during(x float64) bool { return x >= 0 && x <= d.length }

// gauge is one per-second series, scaled.
func (d *trialData) gauge(field func(store.Second) *float64, scale float64) [][2]float64 {
	return gaugeOf(d.series, field, scale)
}

// gaugeOf is one field of a per-second series, scaled.
func gaugeOf(series []store.Second, field func(store.Second) *float64, scale float64) [][2]float64 {
	var out [][2]float64
	for _, s := range series {
		if v := field(s); v != nil {
			out = append(out, [2]float64{float64(s.T), *v * scale})
		}
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

// serverShedsPerSecond is the primary's own sheds in each second (its
// operationsShed rate): a second without the counter is absent.
func (d *trialData) serverShedsPerSecond() [][2]float64 {
	return gaugeOf(d.series, func(s store.Second) *float64 { return s.Sheds }, 1)
}

// actorKillsPerSecond is the killOp actor's kills in each second. A trial
// whose actor killed is known to have run one: its kills are known for
// every second of the trial (none in a second is 0); a trial without a
// kill has no line.
func (d *trialData) actorKillsPerSecond() [][2]float64 {
	return d.actorKillsOf(func(*store.Kill) bool { return true })
}

// actorKillsOf is actorKillsPerSecond of the kills mine picks (on a
// sharded cluster: one shard's actor's).
func (d *trialData) actorKillsOf(mine func(*store.Kill) bool) [][2]float64 {
	kill := func(e store.Event) bool { return e.Kind == store.EventKill && e.Kill != nil && mine(e.Kill) }
	if !slices.ContainsFunc(d.events, kill) {
		return nil
	}
	perSec := map[int]float64{}
	for t := 0; float64(t) < d.length; t++ {
		perSec[t] = 0
	}
	for _, e := range d.events {
		// A kill the actor made after the trial ended is outside it.
		if x := d.rel(e.At); kill(e) && e.Kill.Err == "" && x >= 0 && x < d.length {
			perSec[int(x)]++
		}
	}
	var out [][2]float64
	for t, v := range perSec {
		out = append(out, [2]float64{float64(t), v})
	}
	slices.SortFunc(out, func(a, b [2]float64) int { return int(a[0] - b[0]) })
	return out
}

// marks are a trial's failovers and restarts, seconds into it; those
// seen after the trial ended (the sampler runs on a moment) are not.
func (d *trialData) marks() (failovers, restarts []float64) {
	for _, e := range d.events {
		x := d.rel(e.At)
		if !d.during(x) {
			continue
		}
		switch e.Kind {
		case store.EventPrimary:
			failovers = append(failovers, x)
		case store.EventRestart:
			restarts = append(restarts, x)
		}
	}
	return failovers, restarts
}

// downsample keeps at most limit points of a series sorted by x: it
// splits the series into limit/2 buckets and keeps each bucket's minimum
// and maximum (in x order), so no peak or trough is lost.
func downsample(pts [][2]float64, limit int) [][2]float64 {
	if len(pts) <= limit || limit < 4 {
		return pts
	}
	buckets := limit / 2
	out := make([][2]float64, 0, limit)
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
		out = append(out, pts[min(mi, ma)])
		if mi != ma {
			out = append(out, pts[max(mi, ma)])
		}
	}
	return out
}

// trialLength is how long a trial of the analysis ran: from its start
// to the recovery phase's start (as the trial recorded it) plus the
// workload's recovery.
func trialLength(a *Analysis, t Trial) time.Duration {
	var recovery time.Duration
	if w := a.In.Workload.SpillToDisk; w != nil {
		recovery = time.Duration(w.Phases.Recovery)
	}
	return time.Duration(t.Phases[store.PhaseRecovery]*float64(time.Second)) + recovery
}

// readTrials reads every valid trial's files, one trial per CPU at a
// time (decoding the samples is most of a report's cost).
func readTrials(a *Analysis) ([]*trialData, error) {
	var trials []Trial
	for _, arm := range a.In.Arms {
		trials = append(trials, a.In.Valid(arm)...)
	}
	data := make([]*trialData, len(trials))
	errs := make([]error, len(trials))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, t := range trials {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			data[i], errs[i] = readTrial(t, trialLength(a, t))
		})
	}
	wg.Wait()
	return data, errors.Join(errs...)
}
