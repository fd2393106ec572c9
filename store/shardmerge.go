package store

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// MergeOptions say which shard folders to merge into which run folder.
type MergeOptions struct {
	Dirs []string
	// Expect is how many shards the plan was split into.
	Expect int
	Out    string
	// AllowPartial merges what there is when shards are missing or
	// unfinished; their trials are listed as pending.
	AllowPartial bool
	ToolVersion  string
	CommandLine  []string
}

// MergeShards merges shard folders of one plan into one run folder that
// reads like any other: the trials' folders are linked (or copied) as they
// are, the manifest lists every trial in plan order with the host that ran
// it, the hosts and the shards. Statistics are not merged: a report
// recomputes them from the trials. Everything is checked before anything
// is written, and the folder is built beside Out and renamed into place,
// so on any error nothing is written. It returns the merged manifest and
// what a partial merge lacks.
func MergeShards(o MergeOptions) (Manifest, []string, error) {
	switch {
	case o.Expect < 1:
		return Manifest{}, nil, fmt.Errorf("--expect %d: the number of shards the run was split into (at least 1)", o.Expect)
	case o.Out == "":
		return Manifest{}, nil, errors.New("--out: the merged run's folder is required")
	case len(o.Dirs) == 0:
		return Manifest{}, nil, errors.New("no shard folder given")
	}
	out := filepath.Clean(o.Out)
	if fi, err := os.Stat(out); err == nil {
		if !fi.IsDir() {
			return Manifest{}, nil, fmt.Errorf("--out %s exists and is not a folder", o.Out)
		}
		if entries, _ := os.ReadDir(out); len(entries) > 0 {
			return Manifest{}, nil, fmt.Errorf("--out %s exists and is not empty; merge into a new folder", o.Out)
		}
	}
	var runs []*Run
	for _, dir := range o.Dirs {
		d := filepath.Clean(dir)
		if d == out || strings.HasPrefix(out, d+string(filepath.Separator)) {
			return Manifest{}, nil, fmt.Errorf("--out %s is inside shard folder %s", o.Out, dir)
		}
		if pid := Writer(dir); pid != 0 {
			return Manifest{}, nil, fmt.Errorf("%s is still being written (pid %d holds its run.lock); merge when it has finished", dir, pid)
		}
		r, err := Open(dir)
		if err != nil {
			return Manifest{}, nil, err
		}
		runs = append(runs, r)
	}
	set, err := CheckShards(runs, o.Expect)
	if err != nil {
		return Manifest{}, nil, err
	}
	problems := set.Problems()
	if len(problems) > 0 && !o.AllowPartial {
		return Manifest{}, problems, fmt.Errorf("refusing to merge an incomplete run (--allow-partial merges what there is):\n  %s", strings.Join(problems, "\n  "))
	}

	first := runs[0].Manifest
	host, _ := os.Hostname()
	var sources []Manifest
	for _, r := range set.Runs {
		sources = append(sources, r.Manifest)
	}
	m := Manifest{Schema: ManifestSchema, ToolVersion: o.ToolVersion, Created: time.Now().UTC(), RunID: GroupRunID(sources), Host: host, CommandLine: o.CommandLine,
		WorkloadName: first.WorkloadName, Workload: first.Workload, Arms: first.Arms, ArmList: first.ArmList, Seed: first.Seed,
		Target: first.Target, Clock: first.Clock, Profile: first.Profile, Parallel: first.Parallel, Plan: &set.Plan, Shards: []ShardSource{}}
	owner := map[int]*Run{} // unit → its shard
	for _, r := range set.Runs {
		sm := r.Manifest
		m.Simulated = m.Simulated || sm.Simulated
		src := ShardSource{Dir: r.Dir, Shard: *sm.Shard, Created: sm.Created, Hosts: []string{}}
		for _, ts := range sm.Trials {
			if ts.Status == Valid || ts.Status == Invalid {
				src.Trials++
				if ts.Host != "" && !slices.Contains(src.Hosts, ts.Host) {
					src.Hosts = append(src.Hosts, ts.Host)
				}
			}
		}
		for _, h := range sm.Hosts {
			if slices.Contains(src.Hosts, h.ID) {
				m.AddHost(h)
			}
		}
		m.Shards = append(m.Shards, src)
		for _, k := range sm.Shard.Units(set.Plan.Units) {
			owner[k] = r
		}
	}
	var copies []func(tmp string) error
	for k := range set.Plan.Units {
		r, ok := owner[k]
		if !ok { // a missing shard's unit (--allow-partial): still to run
			for _, arm := range set.Plan.Arms {
				m.Trials = append(m.Trials, TrialStatus{Arm: arm, Index: k + 1, Status: Pending})
			}
			continue
		}
		for _, ts := range r.Manifest.Trials {
			if Unit(ts.Index) != k {
				continue
			}
			if ts.Status != Valid && ts.Status != Invalid {
				ts.Status, ts.Reason, ts.Host = Pending, "", ""
			} else {
				src, rel := TrialDir(r.Dir, ts.Arm, ts.Index), TrialDir("", ts.Arm, ts.Index)
				copies = append(copies, func(tmp string) error { return linkTree(src, filepath.Join(tmp, rel)) })
			}
			m.Trials = append(m.Trials, ts)
		}
	}

	parent := filepath.Dir(out)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return Manifest{}, nil, fmt.Errorf("--out %s: %w", o.Out, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(out)+".merging-")
	if err != nil {
		return Manifest{}, nil, fmt.Errorf("--out %s: %w", o.Out, err)
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
	}()
	if err := os.Chmod(tmp, 0o755); err != nil {
		return Manifest{}, nil, err
	}
	for _, c := range copies {
		if err := c(tmp); err != nil {
			return Manifest{}, nil, err
		}
	}
	if err := WriteJSON(filepath.Join(tmp, ManifestFile), m); err != nil {
		return Manifest{}, nil, err
	}
	if err := os.Rename(tmp, out); err != nil {
		return Manifest{}, nil, fmt.Errorf("--out %s: %w", o.Out, err)
	}
	done = true
	return m, problems, nil
}

// linkTree recreates the folder src at dst, each file hard-linked (a
// trial's files are never changed once written), or copied where links
// cannot be made (another file system).
func linkTree(src, dst string) error {
	if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
		return nil // an invalid trial that wrote nothing
	}
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if strings.HasPrefix(d.Name(), ".") && strings.Contains(d.Name(), ".tmp") {
			return nil // a temporary file a killed writer left behind
		}
		if os.Link(path, target) == nil {
			return nil
		}
		return copyFile(path, target)
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copying %s: %w", src, err)
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
