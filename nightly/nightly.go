// Package nightly is qmlsab's memory across nights: it turns a run folder
// into a history record (every valid trial's metrics, and each arm's
// Hodges-Lehmann shift against the baseline with its Mann-Whitney p),
// finds change points over the nights of a history (E-Divisive with
// means on all n trials of each night, and on the within-night A/B effect
// series), and says which of them are regressions.
package nightly

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"

	"github.com/qmlsab/qmlsab/history"
	"github.com/qmlsab/qmlsab/report"
)

// FromRun reads a run folder (report.Load's rules: readable, one
// workload) into a history record. The run's id is its folder's name.
func FromRun(dir string, labels map[string]string) (history.Run, error) {
	in, err := report.Load([]string{dir})
	if err != nil {
		return history.Run{}, err
	}
	a, err := report.Analyze(in, report.Options{})
	if err != nil {
		return history.Run{}, err
	}
	m := in.Manifests[0]
	var wl any
	_ = json.Unmarshal(m.Workload, &wl)
	canon, _ := json.Marshal(wl)
	sum := sha256.Sum256(canon)
	r := history.Run{ID: filepath.Base(filepath.Clean(dir)), Started: m.Created, Workload: in.Workload.Name,
		WorkloadDigest: hex.EncodeToString(sum[:8]), Baseline: a.Baseline, Labels: labels, Simulated: in.Simulated,
		Host: history.Host{Name: m.Host, TargetKind: m.Target}}
	for _, name := range in.Arms {
		arm := history.Arm{Name: name}
		for _, info := range m.ArmList {
			if info.Name == name {
				arm.Build, arm.Parameters = info.Build, info.Parameters
			}
		}
		r.Arms = append(r.Arms, arm)
		for _, t := range in.Valid(name) {
			metrics := map[string]float64{}
			for k, v := range t.Metrics {
				if !math.IsNaN(v) && !math.IsInf(v, 0) {
					metrics[k] = v
				}
			}
			r.Trials = append(r.Trials, history.Trial{Arm: name, Index: t.Index, Host: m.Host, Metrics: metrics})
		}
	}
	for _, c := range a.Comparisons {
		if math.IsNaN(c.Delta) || math.IsNaN(c.P) || math.IsInf(c.Delta, 0) {
			continue // not computable (too few trials): left out, not stored as NaN
		}
		r.Effects = append(r.Effects, history.Effect{Arm: c.Arm, Metric: c.Metric, Shift: c.Delta, P: c.P})
	}
	if len(r.Trials) == 0 {
		return history.Run{}, fmt.Errorf("%s: no valid trial to keep", dir)
	}
	return r, nil
}
