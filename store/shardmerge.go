package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/qmlsab/qmlsab/internal/field"
	"github.com/qmlsab/qmlsab/plan"
)

// Fields of MergeOptions, as MergeShards's errors name them
// (internal/field): a command maps each to the flag that sets it.
const (
	FieldExpect       = "MergeOptions.Expect"
	FieldOut          = "MergeOptions.Out"
	FieldAllowPartial = "MergeOptions.AllowPartial"
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
// reads like any other: the trials' files are linked (or copied) as they
// are, the manifest lists every trial in plan order with the host that ran
// it, the hosts and the shards. Statistics are not merged: a report
// recomputes them from the trials. Everything is checked before anything
// is written — a shard's files must be regular files in real folders
// (checkShardFiles), its plan digest must be the one its plan gives — and
// the folder is built beside Out and renamed into place (BuildBeside), so
// on any error, and when ctx ends (the CLI cancels it on SIGINT, SIGTERM
// and SIGHUP), nothing is left: the folder being built is removed. A
// folder a merge killed outright (SIGKILL) left beside Out is removed by
// the next merge into Out; one merge into Out runs at a time. It returns
// the merged manifest and the shards it was made of (or, refusing an
// incomplete set, the shards given, whose Problems say what it lacks).
func MergeShards(ctx context.Context, o MergeOptions) (Manifest, *ShardSet, error) {
	switch {
	case o.Expect < 1:
		return Manifest{}, nil, field.Errorf(FieldExpect, o.Expect, "the number of shards the run was split into (at least 1)")
	case o.Out == "":
		return Manifest{}, nil, field.Errorf(FieldOut, nil, "the merged run's folder is required")
	case len(o.Dirs) == 0:
		return Manifest{}, nil, errors.New("no shard folder given")
	}
	out := filepath.Clean(o.Out)
	if err := CheckNewRunFolder(o.Out); err != nil {
		return Manifest{}, nil, field.Errorf(FieldOut, o.Out, "%v %w; merge into a new folder", field.Ref(FieldOut), err)
	}
	var runs []*Run
	for _, dir := range o.Dirs {
		d := filepath.Clean(dir)
		if d == out || strings.HasPrefix(out, d+string(filepath.Separator)) {
			return Manifest{}, nil, field.Errorf(FieldOut, o.Out, "%v %s is inside shard folder %s", field.Ref(FieldOut), o.Out, dir)
		}
		if err := checkShardFiles(dir); err != nil {
			return Manifest{}, nil, err
		}
		if h, held := Writer(dir); held {
			return Manifest{}, nil, fmt.Errorf("%s is still being written (%s); merge when it has finished", dir, h.holds("its "+lockFile))
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
		return Manifest{}, set, field.Errorf(FieldAllowPartial, nil, "refusing to merge an incomplete run (%v merges what there is):\n  %s", field.Ref(FieldAllowPartial), strings.Join(problems, "\n  "))
	}

	first := runs[0].Manifest
	host, _ := os.Hostname()
	var sources []Manifest
	for _, r := range set.Runs {
		sources = append(sources, r.Manifest)
	}
	m := Manifest{Schema: ManifestSchema, ToolVersion: o.ToolVersion, Created: time.Now().UTC(), RunID: GroupRunID(sources), Host: host, CommandLine: o.CommandLine,
		WorkloadName: first.WorkloadName, Workload: first.Workload, Arms: first.Arms, ArmList: first.ArmList, Seed: first.Seed,
		Target: first.Target, Clock: first.Clock, Profile: first.Profile, Sim: first.Sim, Parallel: first.Parallel, Plan: &set.Plan, Shards: []ShardSource{}}
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
	var copies []func(ctx context.Context, tmp string) error
	for k := range set.Plan.Units {
		r, ok := owner[k]
		if !ok { // a missing shard's unit (--allow-partial): still to run
			for _, arm := range set.Plan.Arms {
				m.Trials = append(m.Trials, TrialStatus{Arm: arm, Index: k + 1, Status: Pending})
			}
			continue
		}
		for _, ts := range r.Manifest.Trials {
			if plan.Unit(ts.Index) != k {
				continue
			}
			if ts.Status != Valid && ts.Status != Invalid {
				ts.Status, ts.Reason, ts.Host = Pending, "", ""
			} else {
				src, rel := TrialDir(r.Dir, ts.Arm, ts.Index), TrialDir("", ts.Arm, ts.Index)
				copies = append(copies, func(ctx context.Context, tmp string) error { return linkTree(ctx, src, filepath.Join(tmp, rel)) })
			}
			m.Trials = append(m.Trials, ts)
		}
	}

	b, err := BuildBeside(out, Merging)
	if err != nil {
		return Manifest{}, nil, field.Errorf(FieldOut, o.Out, "%v %w", field.Ref(FieldOut), err)
	}
	defer b.Close() // removes the folder being built unless it was committed
	for _, c := range copies {
		if err := c(ctx, b.Dir); err != nil {
			return Manifest{}, nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return Manifest{}, nil, fmt.Errorf("merge stopped (%w); nothing was written to %s", err, o.Out)
	}
	if err := WriteJSON(filepath.Join(b.Dir, ManifestFile), m); err != nil {
		return Manifest{}, nil, err
	}
	if err := b.Commit(); err != nil {
		return Manifest{}, nil, field.Errorf(FieldOut, o.Out, "%w", err)
	}
	return m, set, nil
}

// checkShardFiles refuses a shard folder holding anything merge must not
// open or link: its manifest, its lock and every finished trial's folder
// (and the arm folder above it) must be regular files and real folders.
// A symbolic link would be linked as itself (a relative one then breaks
// in the merged run, an absolute one points outside it); a named pipe
// blocks whoever opens it until a writer comes, which may be never; a
// device or a socket is no result. Nothing is followed or opened: every
// check is an lstat. Errors name the path and what it is.
func checkShardFiles(dir string) error {
	for _, name := range []string{ManifestFile, lockFile} {
		p := filepath.Join(dir, name)
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue // Open names a missing manifest; no lock is no writer
		}
		if err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			return notRegular(p, fi.Mode())
		}
	}
	m, err := ReadManifest(dir)
	if err != nil {
		return err
	}
	for _, ts := range m.Trials {
		if ts.Status != Valid && ts.Status != Invalid {
			continue
		}
		trial := TrialDir(dir, ts.Arm, ts.Index)
		for _, p := range []string{filepath.Dir(trial), trial} {
			fi, err := os.Lstat(p)
			if errors.Is(err, fs.ErrNotExist) {
				break // an invalid trial that wrote nothing; Open names a missing valid one
			}
			if err != nil {
				return err
			}
			if !fi.IsDir() {
				return notRegular(p, fi.Mode())
			}
		}
		if err := walkRegular(trial, func(string, fs.DirEntry) error { return nil }); err != nil {
			return err
		}
	}
	return nil
}

// walkRegular walks the folder root (not following links), calling fn for
// each folder and regular file, and fails at the first entry that is
// neither, naming it. A root that does not exist is an empty walk.
func walkRegular(root string, fn func(path string, d fs.DirEntry) error) error {
	if _, err := os.Lstat(root); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && !d.Type().IsRegular() {
			return notRegular(path, d.Type())
		}
		return fn(path, d)
	})
}

// notRegular is the refusal of a path that is not a regular file or a
// folder, saying what it is.
func notRegular(path string, mode fs.FileMode) error {
	return fmt.Errorf("%s is %s: a shard is merged from regular files and folders only (put the file itself in its place)", path, describeMode(path, mode))
}

// describeMode says what a path that is not a regular file is: "a
// symbolic link (to X)", "a named pipe (FIFO)", "a folder where a file
// belongs" and so on.
func describeMode(path string, mode fs.FileMode) string {
	kind := "not a regular file or folder"
	switch {
	case mode&fs.ModeSymlink != 0:
		kind = "a symbolic link"
		if to, err := os.Readlink(path); err == nil {
			kind += " (to " + to + ")"
		}
	case mode&fs.ModeNamedPipe != 0:
		kind = "a named pipe (FIFO)"
	case mode&fs.ModeSocket != 0:
		kind = "a socket"
	case mode&fs.ModeCharDevice != 0:
		kind = "a character device"
	case mode&fs.ModeDevice != 0:
		kind = "a device"
	case mode.IsDir():
		kind = "a folder where a file belongs"
	}
	return kind
}

// mergeCopied, when set (by tests), is called after each file is linked
// or copied into the merged folder.
var mergeCopied func(path string)

// linkTree recreates the folder src at dst, each file hard-linked (a
// trial's files are never changed once written), or copied where links
// cannot be made (another file system). It stops when ctx ends, and
// refuses anything but regular files and folders, naming it.
func linkTree(ctx context.Context, src, dst string) error {
	return walkRegular(src, func(path string, d fs.DirEntry) error {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("merge stopped (%w)", err)
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if strings.HasPrefix(d.Name(), ".") && strings.Contains(d.Name(), ".tmp") {
			return nil // a temporary file a killed writer left behind
		}
		if os.Link(path, target) != nil {
			if err := copyFile(ctx, path, target); err != nil {
				return err
			}
		}
		if mergeCopied != nil {
			mergeCopied(target)
		}
		return nil
	})
}

// copyChunk is how much copyFile copies between looks at its context.
const copyChunk = 1 << 20

// copyFile copies the regular file src to the new file dst. It opens src
// without following a link and without waiting for a writer (a named pipe
// put in the file's place after it was checked), and refuses anything it
// opened that is not a regular file; it stops when ctx ends.
func copyFile(ctx context.Context, src, dst string) error {
	in, err := os.OpenFile(src, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return fmt.Errorf("copying %s: %w", src, err)
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return fmt.Errorf("copying %s: %w", src, err)
	}
	if !fi.Mode().IsRegular() {
		return notRegular(src, fi.Mode())
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	for {
		if err := ctx.Err(); err != nil {
			out.Close()
			return fmt.Errorf("copying %s: merge stopped (%w)", src, err)
		}
		_, err := io.CopyN(out, in, copyChunk)
		if err == io.EOF {
			break // the whole file is copied
		}
		if err != nil {
			out.Close()
			return fmt.Errorf("copying %s: %w", src, err)
		}
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
