package run

import (
	"encoding/json"
	"os"
	"strings"
	"time"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/internal/mongouri"
	"github.com/qmlsab/qmlsab/plan"
	"github.com/qmlsab/qmlsab/store"
)

// newManifest is the manifest of a new run of e: the experiment as it
// records it, and every trial of the shard pending.
func newManifest(e Experiment, x Exec) (store.Manifest, error) {
	host, _ := os.Hostname()
	c, err := e.conditions()
	if err != nil {
		return store.Manifest{}, err
	}
	armsJSON, _ := json.Marshal(c.Arms)
	m := store.Manifest{Schema: store.ManifestSchema, WorkloadName: e.workload.Name, ToolVersion: x.ToolVersion, Created: time.Now().UTC(), Host: host,
		Profile: e.profile, Topology: e.topology, CommandLine: redactArgs(x.CommandLine), Workload: c.Workload, Arms: armsJSON, Seed: e.seed,
		Target: e.arms[0].Target, Clock: e.clock, Sim: c.Sim, RunID: x.RunID,
		Plan: &store.Plan{Digest: e.plan.Digest, Units: len(e.plan.Units), Arms: e.plan.Arms}}
	for _, a := range e.arms {
		m.ArmList = append(m.ArmList, store.ArmInfo{Name: a.Name, Build: a.Build, Target: a.Target, Parameters: a.SetParameters})
		m.Simulated = m.Simulated || a.Embedded()
	}
	if m.RunID == "" {
		if m.RunID, err = e.RunID(x.stamp(), m.Created); err != nil {
			return store.Manifest{}, err
		}
	}
	if x.Shard != (plan.Shard{}) {
		m.Shard = &x.Shard
	}
	for _, t := range e.plan.Trials(x.Shard) {
		m.Trials = append(m.Trials, store.TrialStatus{Arm: t.Arm, Index: t.Index, Status: store.Pending})
	}
	return m, nil
}

// redactArgs is a command line as a manifest records it: without the
// passwords of the URIs in it.
func redactArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		// A URI alone or as a flag's value (--history-db=mongodb://…),
		// in any case and however malformed.
		flag, value, isFlag := strings.Cut(a, "=")
		switch {
		case mongouri.HasScheme(a):
			a = arms.RedactURI(a)
		case isFlag && strings.HasPrefix(flag, "-") && mongouri.HasScheme(value):
			a = flag + "=" + arms.RedactURI(value)
		}
		out[i] = a
	}
	return out
}
