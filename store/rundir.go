package store

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ResultsRoot is the folder new run folders are made in when the user
// names none, and where the newest run is looked for (NewestRun).
const ResultsRoot = "results"

// folderTimeLayout is the creation time at the head of a minted folder
// name and of a run id without a stamp: UTC to the second, so that names
// sort in the order they were made.
const folderTimeLayout = "20060102T150405Z"

// FolderKind is what a minted folder holds, which its name says first.
type FolderKind string

const (
	// RunFolder holds a run, a shard of one or an imported run: a
	// manifest and its trials.
	RunFolder FolderKind = ""
	// SweepFolder holds a sweep (no manifest: it is not a run).
	SweepFolder FolderKind = "sweep-"
)

// NewRunDir mints the path of a new folder of kind below root: the kind,
// the creation time and six random hex digits, so that two folders made
// in one second differ. A shard (count > 0) adds "-shardIofN", so the
// shards of one plan made side by side read as such. The folder is not
// made; CheckNewRunFolder and the writer's lock guard a name that is
// somehow taken.
func NewRunDir(root string, kind FolderKind, created time.Time, shardIndex, shardCount int) string {
	var b [3]byte
	rand.Read(b[:]) // never fails (crypto/rand), and the name need not be secret
	name := string(kind) + created.UTC().Format(folderTimeLayout) + "-" + hex.EncodeToString(b[:])
	if shardCount > 0 {
		name += fmt.Sprintf("-shard%dof%d", shardIndex, shardCount)
	}
	return filepath.Join(root, name)
}

// RunDir is the folder below root of the run with id runID: named after
// the run, so the folder and its manifest's run_id are one id; a shard
// (count > 0) adds "-shardIofN", as NewRunDir does.
func RunDir(root, runID string, shardIndex, shardCount int) string {
	name := runID
	if shardCount > 0 {
		name += fmt.Sprintf("-shard%dof%d", shardIndex, shardCount)
	}
	return filepath.Join(root, name)
}

// NewestRun is the run folder directly below root that was created last,
// by its manifest's creation time (not its name: a folder the user named
// counts too). Folders without a manifest (a sweep, anything else) are
// passed over; when no folder has a manifest that reads, the error lists
// those that did not.
func NewestRun(root string) (string, error) {
	return newestRun(root, "")
}

// NewestRunOf is NewestRun among the runs made under stamp (RunIDEnv):
// those whose run id is the stamp's (RunIDOf). Without one the error says
// so: the stamp's run did not start, or wrote its folder elsewhere.
func NewestRunOf(root, stamp string) (string, error) {
	return newestRun(root, stamp)
}

// RunIDOf reports whether runID was made under stamp (NewRunID): the
// stamp, a dash and the plan digest's 12 hex digits.
func RunIDOf(runID, stamp string) bool {
	tail, ok := strings.CutPrefix(runID, stamp+"-")
	if !ok || len(tail) != 12 {
		return false
	}
	_, err := hex.DecodeString(tail)
	return err == nil
}

func newestRun(root, stamp string) (string, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return "", fmt.Errorf("no run given and %s cannot be read: %w", root, err)
	}
	var best string
	var bestM *Manifest
	var unreadable []string
	for _, e := range entries { // sorted by name
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(root, e.Name())
		if _, err := os.Stat(filepath.Join(dir, ManifestFile)); err != nil {
			continue
		}
		m, err := ReadManifest(dir)
		if err != nil {
			unreadable = append(unreadable, fmt.Sprintf("%s: %v", dir, err))
			continue
		}
		if stamp != "" && !RunIDOf(m.RunID, stamp) {
			continue
		}
		if bestM == nil || !m.Created.Before(bestM.Created) {
			best, bestM = dir, &m
		}
	}
	switch {
	case bestM != nil:
		return best, nil
	case stamp != "":
		return "", fmt.Errorf("no run given and no run of $%s=%q in %s (its run did not start, or wrote its folder elsewhere: name the folder)", RunIDEnv, stamp, root)
	case len(unreadable) > 0:
		return "", fmt.Errorf("no run given and no readable run folder in %s: %v", root, unreadable)
	}
	return "", fmt.Errorf("no run given and no run folder in %s (run qmlsab run first)", root)
}
