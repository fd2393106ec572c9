// Package nightly is qmlsab's memory across nights: it says which run
// folders make a night and whether a night is ready for the history
// (Nights, Ready), turns a night's folders into a history record (every
// valid trial's metrics, and each arm's Hodges-Lehmann shift against the
// baseline with its Mann-Whitney p), finds change points over the nights
// of a history (E-Divisive with means on all n trials of each night, and
// on the within-night A/B effect series), says which of them are
// regressions, and lays out what the history commands print.
package nightly

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/qmlsab/qmlsab/history"
	"github.com/qmlsab/qmlsab/report"
	"github.com/qmlsab/qmlsab/store"
)

// FromRun reads a run folder (report.Load's rules: readable, one
// workload) into a history record (FromRuns of one folder).
func FromRun(dir string, labels map[string]string) (history.Run, error) {
	return FromRuns([]string{dir}, labels)
}

// FromRuns reads one night into a history record: one run folder, or the
// shard folders of one plan. The night's id is the run id its manifest
// records (store.GroupRunID for shards), so a folder name reused on
// another night is another night; a run written before run ids has its
// folder's name. The start is the earliest trial's, and the host columns
// are those of the machines that ran the trials (each trial keeps its
// own), not of the machine that merged or reads them.
func FromRuns(dirs []string, labels map[string]string) (history.Run, error) {
	in, err := report.Load(dirs)
	if err != nil {
		return history.Run{}, err
	}
	id, err := nightID(dirs, in.Manifests)
	if err != nil {
		return history.Run{}, err
	}
	dir := dirs[0]
	a, err := report.Analyze(in, report.Options{})
	if err != nil {
		return history.Run{}, err
	}
	m := in.Manifests[0]
	var wl any
	_ = json.Unmarshal(m.Workload, &wl)
	canon, _ := json.Marshal(wl)
	sum := sha256.Sum256(canon)
	defs, err := report.ArmDefinitions(m)
	if err != nil {
		return history.Run{}, fmt.Errorf("%s: %w", filepath.Join(dir, store.ManifestFile), err)
	}
	r := history.Run{ID: id, Started: firstStart(in, m.Created), Workload: in.Workload.Name,
		WorkloadDigest: hex.EncodeToString(sum[:8]), Baseline: a.Baseline, Labels: labels, Simulated: in.Simulated,
		Host: hostColumns(in.Hosts, m.Target)}
	if len(canon) > 0 && string(canon) != "null" {
		r.WorkloadDefinition = canon
	}
	hostname := map[string]string{}
	for _, h := range in.Hosts {
		hostname[h.ID] = h.Hostname
	}
	for _, name := range in.Arms {
		arm := history.Arm{Name: name, Definition: defs[name]}
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
			host := hostname[t.Host]
			if host == "" {
				host = m.Host
			}
			r.Trials = append(r.Trials, history.Trial{Arm: name, Index: t.Index, Host: host, Metrics: metrics})
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

// nightID is the history id of one night's folders.
func nightID(dirs []string, ms []store.Manifest) (string, error) {
	if len(ms) == 1 {
		if ms[0].RunID != "" {
			return ms[0].RunID, nil
		}
		return filepath.Base(filepath.Clean(dirs[0])), nil
	}
	for i, m := range ms {
		if m.Shard == nil || m.Plan == nil || ms[0].Plan == nil || m.Plan.Digest != ms[0].Plan.Digest {
			return "", fmt.Errorf("%s and %s are not shards of one plan: a night is one run folder or the shards of one plan; add them one by one",
				dirs[0], dirs[i])
		}
	}
	return store.GroupRunID(ms), nil
}

// firstStart is the earliest start of a trial (created, when none
// recorded one).
func firstStart(in *report.Input, created time.Time) time.Time {
	var first time.Time
	for _, ts := range in.Trials {
		for _, t := range ts {
			if s := t.Trial.Started; !s.IsZero() && (first.IsZero() || s.Before(first)) {
				first = s
			}
		}
	}
	if first.IsZero() {
		return created
	}
	return first
}

// hostColumns describe the machines that ran a night's trials: one host's
// fingerprint, or for several their hostnames (sorted, comma-joined) and
// each other field where they all agree (absent where they differ).
func hostColumns(hosts []store.Host, target string) history.Host {
	if len(hosts) == 0 {
		return history.Host{TargetKind: target}
	}
	first := hosts[0]
	h := history.Host{CPUModel: first.CPUModel, Cores: first.Cores, MemoryBytes: first.MemoryBytes, Kernel: first.Kernel, TargetKind: first.Target}
	var names []string
	for _, x := range hosts {
		if !slices.Contains(names, x.Hostname) {
			names = append(names, x.Hostname)
		}
		if x.CPUModel != h.CPUModel {
			h.CPUModel = ""
		}
		if x.Cores != h.Cores {
			h.Cores = 0
		}
		if x.MemoryBytes != h.MemoryBytes {
			h.MemoryBytes = 0
		}
		if x.Kernel != h.Kernel {
			h.Kernel = ""
		}
		if x.Target != h.TargetKind {
			h.TargetKind = ""
		}
	}
	if h.TargetKind == "" {
		h.TargetKind = target
	}
	slices.Sort(names)
	h.Name = strings.Join(names, ",")
	return h
}
