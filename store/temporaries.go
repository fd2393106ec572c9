package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Temporaries: what a writer killed mid-write (SIGKILL, a power cut)
// leaves behind, and who removes it. A file written atomically
// (WriteFileAtomic) is a temporary ".NAME.tmpDIGITS" beside it until it
// is renamed into place; a merged or imported run is a folder
// ".OUT.merging-DIGITS" or ".OUT.import-DIGITS" beside its --out until it
// is renamed there. Only the holder of the lock that guards a temporary's
// writer removes it, and only names of these patterns, so a live writer's
// temporaries and files that are not ours are never touched.

// The temporaries of the files of a run folder written under its lock
// (Acquire): the manifest's in the folder, the trial files' in its trial
// folders. A report's files are not among them: qmlsab report writes
// them holding no lock, so their temporaries may be a live report's.
var (
	runFolderTemporary = temporaryPattern(ManifestFile)
	trialTemporary     = temporaryPattern(TrialFile, SamplesFile, SeriesFile, StormFile, CanaryFile, OutcomesFile, EventsFile, MergeFile)
)

// temporaryPattern matches WriteFileAtomic's temporaries of the named
// files (os.CreateTemp puts decimal digits in place of its "*").
func temporaryPattern(names ...string) *regexp.Regexp {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = regexp.QuoteMeta(n)
	}
	return regexp.MustCompile(`^\.(` + strings.Join(quoted, "|") + `)\.tmp[0-9]+$`)
}

// RemoveStaleTemporaries removes the temporary files a writer of the
// folder l holds left behind when it was killed mid-write: the manifest's
// in the folder, a trial's files' in each trial folder (<arm>/trial-N).
// Holding the lock, no other writer of the folder is alive, so every
// such file is stale. Only regular files of those names are removed, and
// only in a run folder: one with a manifest, or one holding nothing but
// its lock and manifest temporaries (a new run killed as it wrote its
// first manifest). A folder of other files is left as it is (a new run
// refuses it: CheckNewRunFolder).
func (l *Lock) RemoveStaleTemporaries() error {
	dir := filepath.Dir(l.path)
	arms, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, ManifestFile)); err != nil {
		for _, e := range arms {
			if e.Name() != lockFile && !runFolderTemporary.MatchString(e.Name()) {
				return nil // not a run folder
			}
		}
	}
	if err := removeMatching(dir, runFolderTemporary); err != nil {
		return err
	}
	for _, arm := range arms {
		if !arm.IsDir() { // a link is no folder of ours
			continue
		}
		trials, err := os.ReadDir(filepath.Join(dir, arm.Name()))
		if err != nil {
			return fmt.Errorf("%s: %w", filepath.Join(dir, arm.Name()), err)
		}
		for _, tr := range trials {
			if tr.IsDir() && strings.HasPrefix(tr.Name(), "trial-") {
				if err := removeMatching(filepath.Join(dir, arm.Name(), tr.Name()), trialTemporary); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// removeMatching removes the regular files directly in dir whose names
// match pattern.
func removeMatching(dir string, pattern *regexp.Regexp) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	for _, e := range entries {
		if e.Type().IsRegular() && pattern.MatchString(e.Name()) {
			p := filepath.Join(dir, e.Name())
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("removing the stale temporary %s: %w", p, err)
			}
		}
	}
	return nil
}

// Kinds of folder built beside an --out (BuildBeside).
const (
	Merging   = "merging" // qmlsab merge
	Importing = "import"  // qmlsab import ftdc
)

// Building is a run folder being built beside the folder it will become
// (Dir, renamed to out by Commit), so that out holds the whole run or
// nothing. Its builder holds ".OUT.building.lock" beside out for as long
// as it builds: one builder of out at a time, and a folder a builder
// left when it was killed is known to be stale.
type Building struct {
	// Dir is the folder being built: ".OUT.KIND-DIGITS" beside out.
	Dir       string
	out       string
	lock      *os.File
	lockPath  string
	committed bool
}

// BuildBeside starts building the run folder out beside it: it takes
// out's building lock, refusing (naming the holder) when another process
// builds out now, removes every folder a killed builder of out left
// (".OUT.merging-DIGITS", ".OUT.import-DIGITS"), and makes Dir, of kind
// Merging or Importing. Close gives it all up.
func BuildBeside(out, kind string) (*Building, error) {
	out = filepath.Clean(out)
	parent, base := filepath.Dir(out), filepath.Base(out)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("%s: %w", out, err)
	}
	lockPath := filepath.Join(parent, "."+base+".building.lock")
	f, holder, err := lockExclusive(lockPath)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", out, err)
	}
	if holder != nil {
		return nil, fmt.Errorf("%s is being built by another process: %s; let it finish", out, holder.holds(filepath.Base(lockPath)))
	}
	b := &Building{out: out, lock: f, lockPath: lockPath}
	if err := b.removeStale(parent, base); err != nil {
		b.Close()
		return nil, err
	}
	dir, err := os.MkdirTemp(parent, "."+base+"."+kind+"-")
	if err == nil {
		err = os.Chmod(dir, 0o755) // results are shared; MkdirTemp makes them private
	}
	if err != nil {
		if dir != "" {
			os.RemoveAll(dir)
		}
		b.Close()
		return nil, fmt.Errorf("%s: %w", out, err)
	}
	b.Dir = dir
	return b, nil
}

// removeStale removes the folders killed builders of out left beside it.
// Holding out's building lock, no builder of out is alive.
func (b *Building) removeStale(parent, base string) error {
	stale := regexp.MustCompile(`^\.` + regexp.QuoteMeta(base) + `\.(` + Merging + `|` + Importing + `)-[0-9]+$`)
	entries, err := os.ReadDir(parent)
	if err != nil {
		return fmt.Errorf("%s: %w", parent, err)
	}
	for _, e := range entries {
		if e.IsDir() && stale.MatchString(e.Name()) { // a link is no folder of ours
			p := filepath.Join(parent, e.Name())
			if err := os.RemoveAll(p); err != nil {
				return fmt.Errorf("removing %s, left by a killed merge or import: %w", p, err)
			}
		}
	}
	return nil
}

// Commit renames the built folder to out.
func (b *Building) Commit() error {
	if err := os.Rename(b.Dir, b.out); err != nil {
		return err
	}
	b.committed = true
	return nil
}

// Close removes the built folder unless it was committed, and gives up
// out's building lock.
func (b *Building) Close() error {
	var err error
	if !b.committed && b.Dir != "" {
		err = os.RemoveAll(b.Dir)
	}
	if b.lock != nil {
		if uerr := unlockAndRemove(b.lock, b.lockPath); err == nil {
			err = uerr
		}
		b.lock = nil
	}
	return err
}
