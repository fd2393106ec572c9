package run

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/store"
)

// resumeArms are the arms a resumed run runs: exactly those its manifest
// records (their resolved definitions: build, target, parameters,
// actors, topology), so that every trial of an arm ran the same arm. An
// arm in cfg.Arms (the arms file given again, say) must be one of them
// and run alike (arms.Differences), or the resume is refused naming the
// arm and each field that differs; it then supplies what the record
// lacks, a uri arm's credentials, which the manifest holds redacted: such
// an arm cannot run from the record alone, and is refused unless given.
func resumeArms(cfg Config, m store.Manifest, r *store.Run) ([]arms.Arm, error) {
	mpath := filepath.Join(cfg.Dir, store.ManifestFile)
	var doc string
	if len(m.Arms) == 0 {
		return nil, fmt.Errorf("%s records no arm definitions, so a resume could not run the arms it started with; start a new run", mpath)
	}
	if err := json.Unmarshal(m.Arms, &doc); err != nil {
		return nil, fmt.Errorf("%s: arms: %w", mpath, err)
	}
	recorded, err := arms.Parse(mpath+" (arms)", []byte(doc))
	if err != nil {
		return nil, fmt.Errorf("the arms %s records: %w", mpath, err)
	}
	// The run's --topology applies to every arm, recorded or given.
	recorded = onTopology(recorded, m.Topology)
	given := onTopology(cfg.Arms, m.Topology)
	var names []string
	for _, a := range recorded {
		names = append(names, a.Name)
	}
	for _, g := range given {
		i := slices.IndexFunc(recorded, func(a arms.Arm) bool { return a.Name == g.Name })
		if i < 0 {
			return nil, fmt.Errorf("Config.Arms: arm %s is not one of the arms of the run in %s (%s); a resumed run runs the arms it started with",
				g.Name, cfg.Dir, strings.Join(names, ", "))
		}
		diff, err := arms.Differences(recorded[i], g)
		if err != nil {
			return nil, err
		}
		if len(diff) > 0 {
			return nil, fmt.Errorf("Config.Arms: arm %s is not the arm %s records (%s); a resumed run runs the arms it started with, so finishing it with another definition would mix two arms under one name: resume with the arms file the run was started with, or without one (the recorded arms run)",
				g.Name, mpath, strings.Join(diff, "; "))
		}
	}
	var out []arms.Arm
	for _, rec := range recorded {
		a := rec
		if i := slices.IndexFunc(given, func(g arms.Arm) bool { return g.Name == rec.Name }); i >= 0 {
			a = given[i]
		} else if arms.NeedsCredentials(rec) {
			return nil, fmt.Errorf("arm %s: %s records its uri with the credentials redacted (%s), so the record alone cannot connect; give the arms file that defines %s again (qmlsab run --resume %s --arms-file FILE)",
				rec.Name, mpath, rec.URI, rec.Name, cfg.Dir)
		}
		if err := ranAs(a, r); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// ranAs refuses an arm that would run on a replica set when its finished
// trials ran on a sharded cluster: a manifest written before qmlsab
// recorded an arm's topology records an arms file's sharded arm as a
// replica set. A uri arm is sharded as discovered, so its trials say
// nothing of its definition.
func ranAs(a arms.Arm, r *store.Run) error {
	if a.IsSharded() || a.Target == arms.TargetURI || r == nil {
		return nil
	}
	for _, t := range r.Trials[a.Name] {
		var meta struct {
			Topology string `json:"topology"`
		}
		if json.Unmarshal(t.Metadata, &meta) == nil && meta.Topology == arms.TopologySharded {
			return fmt.Errorf("arm %s: its trial %d ran on a sharded cluster, but %s records the arm as a replica set (a manifest written before qmlsab recorded an arm's topology); finish the run with the qmlsab that started it, or start a new run",
				a.Name, t.Index, filepath.Join(r.Dir, store.ManifestFile))
		}
	}
	return nil
}
